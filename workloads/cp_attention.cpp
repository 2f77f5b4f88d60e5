// Fused attention under context parallelism (parallel.cp > 1). Every CP rank holds two of the
// sequence's 2 cp chunks (chunk i and 2 cp - 1 - i), so under the causal mask every rank does the
// same share of the attention: its queries against every key, half of it masked.
//
// p2p (Megatron-Core / Transformer Engine's ring, AttnFuncWithCPAndKVP2P): cp steps; at each the
// rank runs the attention of the K/V block in hand while it passes that block on to the next
// rank and receives the next one. Over the step the blocks travel as a ring all-gather of the
// sequence's keys and values (cp - 1 hops of 1/cp of them), on the CP stream beside the first
// cp - 1 blocks' attention; the last block's attention waits for it. A step of uniform blocks
// then takes max((cp - 1)/cp A, X) + A/cp for attention A and exchange X: the ring's own bound.
// The backward runs the same ring again with the keys and values and, beside them, the gradients
// of the keys and values on their way back to their owners (a ring reduce-scatter); the last
// block's hop home is counted inside the reduce-scatter, not after it.
//
// all_gather (Llama 3, Dubey et al. 2024, Sec. 3.3.2): the keys and values of the whole sequence
// are gathered before the attention, which waits for them; the backward gathers them again and
// reduce-scatters their gradients after its kernel.
#include "workloads/layer_ops.hpp"

namespace dtsim {
namespace {

// `whole` with the share `fraction` of its work.
OpSpec share(const OpSpec& whole, double fraction) {
  OpSpec part = whole;
  part.flops *= fraction;
  part.bytes *= fraction;
  part.backward_bytes *= fraction;
  return part;
}

}  // namespace

// The exchange of keys and values (or their gradients) over the CP group, on the CP stream.
OpSpec LayerOps::cp_exchange(OpKind kind, CommKind comm, double bytes, bool async) {
  OpSpec op = collective(kind, Stream::cp, Group::cp, comm, bytes);
  op.async = async;
  return op;
}

std::vector<OpSpec> LayerOps::cp_attention_forward(const OpSpec& whole, double kv_bytes) const {
  const double cp = plan_.cp;
  OpSpec end = whole;
  end.cp_attention_end = true;
  end.cp_whole_flops = whole.flops;
  end.cp_whole_bytes = whole.bytes;
  end.cp_kv_bytes = kv_bytes;
  if (plan_.cp_comm == CpComm::all_gather)
    return {cp_exchange(OpKind::cp_kv_all_gather, CommKind::all_gather, kv_bytes, false), end};
  OpSpec in_hand = share(whole, (cp - 1) / cp);
  in_hand.saved = 0;  // the block keeps what the whole attention keeps, counted once on its end
  OpSpec last = share(end, 1 / cp);
  last.saved = whole.saved;
  return {cp_exchange(OpKind::cp_kv_all_gather, CommKind::all_gather, kv_bytes, true), in_hand, last};
}

void LayerOps::cp_attention_backward(const OpSpec& end, std::vector<OpSpec>& ops) const {
  const double cp = plan_.cp;
  OpSpec whole = end;
  whole.saved = 0;
  whole.cp_attention_end = false;
  whole.flops = 2 * end.cp_whole_flops;
  whole.bytes = 2.5 * end.cp_whole_bytes;
  whole.backward_bytes = 0;
  const OpSpec gather_kv = cp_exchange(OpKind::cp_kv_all_gather, CommKind::all_gather, end.cp_kv_bytes, true);
  const OpSpec reduce_dkv = cp_exchange(OpKind::cp_dkv_reduce_scatter, CommKind::reduce_scatter, end.cp_kv_bytes, true);
  if (plan_.cp_comm == CpComm::all_gather) {
    OpSpec gather = gather_kv, reduce = reduce_dkv;
    gather.async = reduce.async = false;
    ops.insert(ops.end(), {gather, whole, reduce});
    return;
  }
  ops.insert(ops.end(), {gather_kv, reduce_dkv, share(whole, (cp - 1) / cp), share(whole, 1 / cp)});
}

}  // namespace dtsim

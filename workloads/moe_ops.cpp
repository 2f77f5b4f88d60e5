// A mixture-of-experts MLP on one rank (DeepSeek-V3 / Megatron-Core's token dispatchers): the
// router GEMM (hidden x experts, replicated over TP) and the gating (scores, top-k,
// normalisation, fp32); the permutation of the T x top_k token copies by expert; their dispatch
// over the EP group; the local experts (experts / ep of them) as grouped SwiGLU GEMMs, each
// expert getting T x top_k x ep / experts tokens on average (balanced routing: every rank
// receives as many copies as it sends; with training.moe_load_imbalance or a capacity factor,
// the most loaded rank's share, which the group waits for), the alltoall dispatcher sorting the
// received copies by local expert and back around them; the combine back; the un-permutation
// (weighting the copies by the router's weights with training.moe_probs = combine; with
// activation, the experts' activation weighted them); and the shared experts on every token,
// after the routed ones or, with parallel.moe_shared_expert_overlap, beside the dispatch and the
// combine. Expert matrices are split over TP like the dense MLP, or with parallel folding
// (parallel.etp = 1) whole, each rank routing its own sequence-parallel tokens outside the TP
// region (layer_forward leaves out its all-gather and reduce-scatter). The dispatch and combine are
// one all-to-all of the copies each (alltoall), or DeepEP's two hops (deepep,
// workloads/moe_dispatch.hpp): each token once to each node it reaches over the network, and
// over NVLink once to each rank it reaches there, the hops pipelined (one op); the combine is the
// same two hops the other way. The backward pass (layer_ops' backward_of) runs them again. With
// ep = 1 there is nothing to exchange and they are left out.
#include "workloads/layer_ops.hpp"

namespace dtsim {

OpSpec LayerOps::ep_all_to_all(OpKind kind, double bytes, CommKind comm) const {
  OpSpec s;
  s.kind = kind;
  s.stream = Stream::tp;  // blocks the layer like the TP collectives
  s.comm = comm;
  s.group = Group::ep;
  s.bytes = bytes;
  return s;
}

std::vector<OpSpec> LayerOps::moe_mlp() const {
  // With parallel folding every rank routes its own sequence-parallel share and no TP rank
  // repeats another's work.
  const double T = plan_.expert_folding() ? sharded_tokens() : tokens(), Ts = sharded_tokens();
  const double h = model_.hidden, experts = model_.experts;
  const double local = experts / plan_.ep;               // experts on this rank
  const double copies = T * model_.active_experts;       // token copies sent, and received on average
  // What the most loaded rank of the EP group receives (and the group waits for).
  const double hot = copies * plan_.moe_hot_load();
  const double f = model_.expert_ffn_hidden / static_cast<double>(plan_.expert_tp());
  const double shared_f = model_.shared_experts * f;     // the shared experts side by side
  std::vector<OpSpec> ops;
  auto keep = [&](OpSpec op, double saved) {
    op.saved = saved;
    ops.push_back(op);
  };
  // The router reads the normalised input once for all experts; its input gradient is where the
  // TP partial sums meet when there is no shared expert.
  OpSpec router = gemm(OpKind::router, T, experts, h);
  router.column_parallel = model_.shared_experts == 0 && !plan_.expert_folding();
  router.input_from = RecomputeModule::layernorm, router.input_saved = e() * Ts * h;
  keep(router, e() * Ts * h);
  // Sigmoid/softmax, top-k and the normalisation of the chosen weights: passes over fp32 scores.
  keep(elementwise(OpKind::gating, 3 * 4 * T * experts, 3 * 4 * T * experts, 10 * T * experts), 4 * T * experts);
  keep(elementwise(OpKind::moe_permute, 2 * e() * copies * h, 2 * e() * copies * h, 0), 0);
  // The shared experts run after the routed ones, or, overlapped, their first GEMM and
  // activation beside the dispatch and their second GEMM beside the combine.
  const bool shared = model_.shared_experts > 0;
  const bool overlap = shared && plan_.ep > 1 && plan_.moe_shared_expert_overlap;
  // DeepEP's hops carry the most loaded rank's share too (what it receives bounds the exchange).
  const bool deepep = plan_.moe_dispatcher == MoeDispatcher::deepep;
  const TwoHopBytes hops = deepep && plan_.ep > 1
                               ? two_hop_bytes(model_, T * plan_.moe_hot_load(), e() * h, plan_.ep, ep_per_node_)
                               : TwoHopBytes{};
  auto all_to_all = [&](OpKind kind, int beside) {
    OpSpec a2a = deepep ? ep_all_to_all(kind, hops.scale_out, CommKind::two_hop) : ep_all_to_all(kind, e() * hot * h);
    a2a.forward_bytes = hops.scale_up;
    a2a.async = overlap, a2a.overlaps = beside;
    ops.push_back(a2a);
  };
  auto shared_first = [&] {
    OpSpec fc1 = gemm(OpKind::shared_fc1, T, 2 * shared_f, h);
    fc1.column_parallel = true;
    keep(fc1, 0);  // its input is the router's, already kept
    keep(elementwise(OpKind::shared_activation, 3 * e() * T * shared_f, 5 * e() * T * shared_f, 6 * T * shared_f),
         e() * T * 2 * shared_f);
  };
  auto shared_second = [&] { keep(gemm(OpKind::shared_fc2, T, h, shared_f), e() * T * shared_f); };
  // Megatron-Core's alltoall dispatcher receives the copies grouped by source rank and sorts
  // them by local expert after the dispatch ("permutation 2", token_dispatcher.py
  // sort_chunks_by_idxs), and back before the combine: one copy pass over the received copies each.
  const bool sort_chunks = !deepep && plan_.ep > 1 && local > 1;
  const auto sort_pass = [&](OpKind kind) {
    keep(elementwise(kind, 2 * e() * hot * h, 2 * e() * hot * h, 0), 0);
  };
  if (plan_.ep > 1) all_to_all(OpKind::moe_dispatch, 2);
  if (overlap) shared_first();
  if (sort_chunks) sort_pass(OpKind::moe_permute);
  // The grouped GEMMs run the most loaded rank's tokens; their FLOPs count the mean, the work
  // the step does (model FLOPs).
  const auto grouped = [&](OpKind kind, double n, double k) {
    OpSpec g = gemm(kind, hot / local, n, k, local);
    g.flops = 2 * copies * n * k;
    return g;
  };
  keep(grouped(OpKind::expert_fc1, 2 * f, h), e() * hot * h);
  OpSpec act = elementwise(OpKind::expert_activation, 3 * e() * hot * f, 5 * e() * hot * f, 6 * copies * f);
  act.rerun = RecomputeModule::moe_act;
  keep(act, e() * hot * 2 * f);
  OpSpec fc2 = grouped(OpKind::expert_fc2, h, f);
  fc2.input_from = RecomputeModule::moe_act, fc2.input_saved = e() * hot * f;
  keep(fc2, e() * hot * f);
  if (sort_chunks) sort_pass(OpKind::moe_unpermute);
  if (plan_.ep > 1) all_to_all(OpKind::moe_combine, 1);
  if (overlap) shared_second();
  // The sum of each token's expert outputs: weighted, keeping them for the gradient of the
  // weights (combine), or plain, the activation having applied the weights (its backward pass
  // only spreads the output gradient over the copies).
  if (plan_.moe_probs == MoeProbs::combine)
    keep(elementwise(OpKind::moe_unpermute, e() * (copies + T) * h, e() * (2 * copies + T) * h, 2 * copies * h),
         e() * copies * h);
  else
    keep(elementwise(OpKind::moe_unpermute, e() * (copies + T) * h, e() * (copies + T) * h, copies * h), 0);
  if (shared && !overlap) {
    shared_first();
    shared_second();
  }
  return ops;
}

}  // namespace dtsim

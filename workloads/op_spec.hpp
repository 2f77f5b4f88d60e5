// One op as the program builder describes it before it is placed in a stage program: its kernel
// or collective, work, GEMM shape, and the activation bytes it keeps for the backward pass.
#pragma once
#include "workloads/program.hpp"

namespace dtsim {

struct OpSpec {
  OpKind kind = OpKind::embedding;
  Stream stream = Stream::compute;
  double flops = 0, bytes = 0;
  double backward_bytes = 0;   // HBM bytes of the op's backward kernel (elementwise ops)
  double forward_bytes = 0;    // CommKind::two_hop: bytes each rank sends over NVLink (bytes: over the network)
  int m = 0, n = 0, k = 0, batch = 0;
  CommKind comm = CommKind::none;
  Group group = Group::none;
  double saved = 0;            // activation bytes kept for the backward pass
  bool attention_core = false; // recomputed in the backward pass under selective recomputation
  // Selective recomputation of other modules: the module that reruns this op before the layer's
  // backward pass, and the module whose output makes up `input_saved` of `saved` (not kept when
  // that module is rerun).
  RecomputeModule rerun = RecomputeModule::none;
  RecomputeModule input_from = RecomputeModule::none;
  double input_saved = 0;
  bool column_parallel = false;  // TP column-parallel GEMM: its input gradient is reduced over TP
  GemmPart gemm_part = GemmPart::whole;  // a backward GEMM timed as one or both of its GEMMs
  // A communication op that runs on its stream while the next `overlaps` compute ops run; the
  // compute op after them waits for it (Megatron's asynchronous TP communication in the backward
  // pass; the MoE all-to-alls beside the shared experts).
  bool async = false;
  int overlaps = 1;
  // A collective whose transfers take no SMs from the kernels beside it (copy-engine ring
  // exchange: Transformer Engine's userbuffers overlap).
  bool sm_free = false;
  // Context parallelism: the attention op that closes the block of a layer's context-parallel
  // attention (the last K/V chunk's attention with p2p, the whole attention with all_gather);
  // cp_whole_flops and cp_whole_bytes are the whole attention's and cp_kv_bytes the keys and
  // values of the whole sequence on this TP rank, from which the backward is built.
  bool cp_attention_end = false;
  double cp_whole_flops = 0, cp_whole_bytes = 0, cp_kv_bytes = 0;
};

// A communication op: `bytes` over `group` on `stream`.
inline OpSpec comm_spec(OpKind kind, Stream stream, CommKind comm, Group group, double bytes) {
  OpSpec s;
  s.kind = kind;
  s.stream = stream;
  s.comm = comm;
  s.group = group;
  s.bytes = bytes;
  return s;
}

// Appends the op's columns to the stage program (its kind, stream, work, shape and group) and
// returns its index; the caller adds its dependencies, stream order and memory changes.
inline int append_op(StageProgram& p, const OpSpec& s, Phase phase, int layer, int micro_batch) {
  const int id = p.size();
  p.kind.push_back(s.kind);
  p.stream.push_back(s.stream);
  p.phase.push_back(phase);
  p.layer.push_back(layer);
  p.micro_batch.push_back(micro_batch);
  p.flops.push_back(s.flops);
  p.bytes.push_back(s.bytes);
  p.forward_bytes.push_back(s.forward_bytes);
  p.gemm_m.push_back(s.m);
  p.gemm_n.push_back(s.n);
  p.gemm_k.push_back(s.k);
  p.gemm_batch.push_back(s.batch);
  p.gemm_part.push_back(s.gemm_part);
  p.comm.push_back(s.comm);
  p.group.push_back(s.group);
  p.sm_free.push_back(s.sm_free);
  return id;
}

}  // namespace dtsim

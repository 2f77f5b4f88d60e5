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
  int m = 0, n = 0, k = 0, batch = 0;
  CommKind comm = CommKind::none;
  Group group = Group::none;
  double saved = 0;            // activation bytes kept for the backward pass
  bool attention_core = false; // recomputed in the backward pass under selective recomputation
  bool column_parallel = false;  // TP column-parallel GEMM: its input gradient is reduced over TP
  GemmPart gemm_part = GemmPart::whole;  // a backward GEMM timed as one or both of its GEMMs
  // A communication op that runs on its stream while the next compute op runs; the compute op
  // after that waits for it (Megatron's asynchronous TP communication in the backward pass).
  bool async = false;
};

}  // namespace dtsim

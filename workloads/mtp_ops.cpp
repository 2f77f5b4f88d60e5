// The input of a multi-token-prediction module (DeepSeek-V3 report Sec. 2.2, Eq. 21; Megatron-Core's
// MultiTokenPredictionLayer): the shared embedding's rows of the next tokens, RMSNorms of them and
// of the hidden state the module receives, and the projection of the two concatenated (2 hidden ->
// hidden, eh_proj). Megatron-Core splits the projection by columns over TP and gathers its output
// over the TP group before the module's block; with SP the concatenated input is gathered first.
// The block and the output head that follow are layer_ops' (layer_forward, head_forward).
#include "workloads/layer_ops.hpp"

namespace dtsim {

std::vector<OpSpec> LayerOps::mtp_input() const {
  const double T = tokens(), Ts = sharded_tokens(), h = model_.hidden;
  std::vector<OpSpec> ops = embedding_forward();
  ops.push_back(layernorm(OpKind::layernorm));  // of the embedding (enorm)
  ops.push_back(layernorm(OpKind::layernorm));  // of the hidden state (hnorm)
  if (plan_.sequence_parallel)
    ops.push_back(tp_collective(OpKind::tp_all_gather, CommKind::all_gather, 2 * e() * T * h));
  OpSpec proj = gemm(OpKind::mtp_proj, T, h / t(), 2 * h);
  proj.column_parallel = true;
  proj.saved = 2 * e() * Ts * h;  // the concatenated (sharded) input
  ops.push_back(proj);
  if (t() > 1) ops.push_back(tp_collective(OpKind::tp_all_gather, CommKind::all_gather, e() * T * h));
  return ops;
}

}  // namespace dtsim

// Multi-head latent attention's projections (DeepSeek-V2/V3, DeepSeek-AI 2024, Sec. 2.1.1): one
// down-projection of the layer input to the query latent (q_lora_rank), the key/value latent
// (kv_lora_rank) and the shared rotary key (rope_head_dim); RMS norms on both latents; the
// up-projections to per-head queries (nope + rope dims) and to per-head keys (nope dims) and
// values (v_head_dim). The attention core and the output projection follow in layer_ops with
// these head dimensions. Down-projections are replicated over TP, up-projections split by head;
// the down-projection is marked column-parallel so its input gradient (partial sums from the
// split up-projections) is reduced over TP once, as the QKV GEMM's is.
#include "workloads/layer_ops.hpp"

namespace dtsim {

std::vector<OpSpec> LayerOps::mla_projections() const {
  const double T = tokens(), Ts = sharded_tokens(), h = model_.hidden;
  const double heads = static_cast<double>(model_.heads) / t();
  const double q_rank = model_.q_lora_rank, kv_rank = model_.kv_lora_rank;
  const double q_n = heads * (model_.nope_head_dim + model_.rope_head_dim);
  std::vector<OpSpec> ops;
  // Without a query latent (q_lora_rank = 0) the queries come straight from the layer input.
  OpSpec down = gemm(OpKind::mla_down_proj, T, q_rank + kv_rank + model_.rope_head_dim + (q_rank > 0 ? 0 : q_n), h);
  down.column_parallel = true;
  down.saved = e() * Ts * h;
  down.input_from = RecomputeModule::layernorm, down.input_saved = down.saved;
  ops.push_back(down);
  const double latents = T * (q_rank + kv_rank);
  OpSpec norm = elementwise(OpKind::latent_norm, 2 * e() * latents, 3 * e() * latents, 8 * latents);
  norm.saved = e() * latents;
  ops.push_back(norm);
  if (q_rank > 0) {
    OpSpec q_up = gemm(OpKind::mla_q_up, T, q_n, q_rank);
    q_up.saved = e() * T * q_rank;
    q_up.rerun = RecomputeModule::mla_up_proj;
    ops.push_back(q_up);
  }
  OpSpec kv_up = gemm(OpKind::mla_kv_up, T, heads * (model_.nope_head_dim + model_.v_head_dim), kv_rank);
  kv_up.saved = e() * T * kv_rank;
  kv_up.rerun = RecomputeModule::mla_up_proj;
  ops.push_back(kv_up);
  return ops;
}

}  // namespace dtsim

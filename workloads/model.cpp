// Parameter counts of a decoder-only transformer from its shape, and the kind-name parsers.
#include "workloads/model.hpp"

#include <fmt/format.h>

#include "sim/base/error.hpp"

namespace dtsim {

namespace {
constexpr double kNormParams = 2;  // gain and bias per channel (RMS norms, gain only, are counted alike)
}

double ModelShape::attention_params() const {
  const double h = hidden;
  if (is_mla()) {
    const double a = heads, q_head = nope_head_dim + rope_head_dim;
    const double q = q_lora_rank > 0 ? h * q_lora_rank + kNormParams * q_lora_rank + q_lora_rank * a * q_head
                                     : h * a * q_head;
    const double kv = h * (kv_lora_rank + rope_head_dim) + kNormParams * kv_lora_rank +
                      kv_lora_rank * a * (nope_head_dim + v_head_dim);
    return q + kv + a * v_head_dim * h;
  }
  // Q, K, V: hidden x (heads x head_dim), twice hidden x (kv_heads x head_dim); the output
  // projection (heads x head_dim) x hidden.
  const double q = q_dim(), kv = kv_dim();
  const double qkv = h * (q + 2 * kv) + (bias || qkv_bias ? q + 2 * kv : 0);
  const double out = q * h + (bias ? h : 0);
  return qkv + out;
}

double ModelShape::expert_params() const {
  return 3.0 * hidden * expert_ffn_hidden + (expert_bias ? 2.0 * expert_ffn_hidden + hidden : 0);
}

namespace {
// The router: hidden x experts, with a bias per expert where the experts carry biases.
double router_params(const ModelShape& m) { return (static_cast<double>(m.hidden) + (m.expert_bias ? 1 : 0)) * m.experts; }
}  // namespace

double ModelShape::params_per_layer() const {
  const double h = hidden, f = ffn_or_default();
  const double mlp = ffn == FfnKind::gelu ? 2 * h * f + (bias ? f + h : 0)
                                          : 3 * h * f + (bias ? 2 * f + h : 0);
  const double norms = 2 * kNormParams * h;  // two layer norms
  return attention_params() + mlp + norms;
}

double ModelShape::moe_layer_params() const {
  return attention_params() + router_params(*this) + (experts + shared_experts) * expert_params() +
         2 * kNormParams * hidden;
}

double ModelShape::moe_layer_active_params() const {
  return attention_params() + router_params(*this) + (active_experts + shared_experts) * expert_params() +
         2 * kNormParams * hidden;
}

double ModelShape::transformer_params() const {
  return (layers - moe_layers()) * params_per_layer() + moe_layers() * moe_layer_params();
}

double ModelShape::mtp_module_params() const {
  const double h = hidden;
  const double block = is_moe_layer(layers - 1) ? moe_layer_params() : params_per_layer();
  return 3 * kNormParams * h + 2 * h * h + block;  // two input norms and the final norm; the 2h x h projection
}

double causal_pairs(double s, double w) { return w < s ? w * (w + 1) / 2 + (s - w) * w : s * (s + 1) / 2; }

double ModelShape::kv_cache_elements_per_token_layer() const {
  return is_mla() ? static_cast<double>(kv_lora_rank + rope_head_dim) : 2 * kv_dim();
}

double ModelShape::embedding_params() const {
  return static_cast<double>(vocab) * hidden +
         (position == PositionEmbedding::learned ? static_cast<double>(seq_len) * hidden : 0);
}

double ModelShape::head_params() const { return tied_embeddings ? 0 : static_cast<double>(vocab) * hidden; }

double ModelShape::final_norm_params() const { return 2.0 * hidden * (embedding_norm ? 2 : 1); }

double ModelShape::total_params() const {
  return transformer_params() + embedding_params() + head_params() + final_norm_params();
}

double ModelShape::active_params() const {
  const double other_embedding_rows = (static_cast<double>(vocab) - 1) * hidden;  // a token reads one row
  return total_params() - other_embedding_rows - moe_layers() * (moe_layer_params() - moe_layer_active_params());
}

FfnKind parse_ffn_kind(std::string_view text, std::string_view key) {
  if (text == "gelu") return FfnKind::gelu;
  if (text == "swiglu") return FfnKind::swiglu;
  throw InputError(fmt::format("{} = '{}': valid values are gelu, swiglu", key, text));
}

PositionEmbedding parse_position_embedding(std::string_view text, std::string_view key) {
  if (text == "learned") return PositionEmbedding::learned;
  if (text == "none") return PositionEmbedding::none;
  if (text == "alibi") return PositionEmbedding::alibi;
  if (text == "rotary") return PositionEmbedding::rotary;
  throw InputError(fmt::format("{} = '{}': valid values are learned, none, alibi, rotary", key, text));
}

NormKind parse_norm_kind(std::string_view text, std::string_view key) {
  if (text == "layernorm") return NormKind::layernorm;
  if (text == "rmsnorm") return NormKind::rmsnorm;
  throw InputError(fmt::format("{} = '{}': valid values are layernorm, rmsnorm", key, text));
}
std::string_view norm_kind_name(NormKind n) { return n == NormKind::layernorm ? "layernorm" : "rmsnorm"; }

std::string_view ffn_kind_name(FfnKind k) { return k == FfnKind::gelu ? "gelu" : "swiglu"; }
std::string_view position_embedding_name(PositionEmbedding p) {
  static constexpr std::string_view names[] = {"learned", "none", "alibi", "rotary"};
  return names[static_cast<int>(p)];
}

}  // namespace dtsim

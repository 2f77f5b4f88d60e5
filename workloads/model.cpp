// Parameter counts of a decoder-only transformer from its shape, and the kind-name parsers.
#include "workloads/model.hpp"

#include <fmt/format.h>

#include "sim/base/error.hpp"

namespace dtsim {

double ModelShape::params_per_layer() const {
  const double h = hidden, f = ffn_or_default(), kv = kv_dim();
  const double qkv = h * (h + 2 * kv) + (bias ? h + 2 * kv : 0);
  const double out = h * h + (bias ? h : 0);
  const double mlp = ffn == FfnKind::gelu ? 2 * h * f + (bias ? f + h : 0)
                                          : 3 * h * f + (bias ? 2 * f + h : 0);
  const double norms = 2 * 2 * h;  // two layer norms, gain and bias
  return qkv + out + mlp + norms;
}

double ModelShape::embedding_params() const {
  return static_cast<double>(vocab) * hidden +
         (position == PositionEmbedding::learned ? static_cast<double>(seq_len) * hidden : 0);
}

double ModelShape::head_params() const { return tied_embeddings ? 0 : static_cast<double>(vocab) * hidden; }

double ModelShape::final_norm_params() const { return 2.0 * hidden * (embedding_norm ? 2 : 1); }

double ModelShape::total_params() const {
  return layers * params_per_layer() + embedding_params() + head_params() + final_norm_params();
}

FfnKind parse_ffn_kind(std::string_view text, std::string_view key) {
  if (text == "gelu") return FfnKind::gelu;
  if (text == "swiglu") return FfnKind::swiglu;
  throw InputError(fmt::format("{} = '{}': valid values are gelu, swiglu", key, text));
}

PositionEmbedding parse_position_embedding(std::string_view text, std::string_view key) {
  if (text == "learned") return PositionEmbedding::learned;
  if (text == "none" || text == "alibi" || text == "rotary") return PositionEmbedding::none;
  throw InputError(fmt::format("{} = '{}': valid values are learned, none, alibi, rotary", key, text));
}

std::string_view ffn_kind_name(FfnKind k) { return k == FfnKind::gelu ? "gelu" : "swiglu"; }
std::string_view position_embedding_name(PositionEmbedding p) {
  return p == PositionEmbedding::learned ? "learned" : "none";
}

}  // namespace dtsim

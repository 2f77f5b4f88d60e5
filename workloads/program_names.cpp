// Names of the program's enumerations, as they appear in traces and messages.
#include <array>

#include "workloads/program.hpp"

namespace dtsim {

std::string_view op_kind_name(OpKind k) {
  static constexpr std::array<std::string_view, kNumOpKinds> names = {
      "embedding", "embedding_norm", "layernorm", "qkv_proj", "attn_scores", "softmax", "attn_dropout",
      "attn_context", "flash_attention", "out_proj", "dropout_residual", "fc1", "activation", "fc2",
      "final_norm", "lm_head", "loss", "tp_all_reduce", "tp_all_gather", "tp_reduce_scatter", "pp_send",
      "pp_recv", "pp_all_gather", "dp_all_reduce", "dp_reduce_scatter", "dp_all_gather", "param_all_gather", "optimizer_step",
      "embedding_all_reduce", "grad_accumulate", "mla_down_proj", "latent_norm", "mla_q_up", "mla_kv_up", "router", "gating",
      "moe_permute", "moe_dispatch", "expert_fc1", "expert_activation", "expert_fc2", "moe_combine", "moe_unpermute",
      "shared_fc1", "shared_activation", "shared_fc2", "expert_dp_all_reduce", "expert_dp_reduce_scatter",
      "expert_dp_all_gather", "rotary", "cp_kv_all_gather", "cp_dkv_reduce_scatter",
      "mirror_all_reduce", "mtp_proj"};
  return names[static_cast<std::size_t>(k)];
}

std::string_view stream_name(Stream s) {
  static constexpr std::array<std::string_view, kNumStreams> names = {"compute", "tp", "pp_send", "pp_recv", "dp", "cp"};
  return names[static_cast<std::size_t>(s)];
}

std::string_view phase_name(Phase p) {
  static constexpr std::array<std::string_view, 4> names = {"forward", "backward", "recompute", "optimizer"};
  return names[static_cast<std::size_t>(p)];
}

std::string_view mem_category_name(MemCategory c) {
  static constexpr std::array<std::string_view, kNumMemCategories> names = {"weights", "gradients", "optimizer",
                                                                            "activations", "buffers"};
  return names[static_cast<std::size_t>(c)];
}

namespace {
template <class Enum>
std::string joined(std::string_view (*name)(Enum), int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += std::string(i ? "," : "") + std::string(name(static_cast<Enum>(i)));
  return out;
}
}  // namespace

std::string op_kind_names() { return joined(op_kind_name, kNumOpKinds); }
std::string stream_names() { return joined(stream_name, kNumStreams); }
std::string phase_names() { return joined(phase_name, 4); }

}  // namespace dtsim

// Closed forms of the memory a model needs for inference and training (see memory_fit.hpp).
#include "workloads/memory_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/base/error.hpp"
#include "workloads/layer_ops.hpp"

namespace dtsim {
namespace {

constexpr std::pair<WeightFormat, std::string_view> kFormats[] = {
    {WeightFormat::fp32, "fp32"}, {WeightFormat::fp16, "fp16"}, {WeightFormat::bf16, "bf16"},
    {WeightFormat::fp8, "fp8"},   {WeightFormat::int8, "int8"}, {WeightFormat::int4, "int4"}};

constexpr double kKvBytes = 2;          // fp16/bf16 KV cache and activations
constexpr double kGroup = 128;          // int8/int4 group size (one fp16 scale each)
constexpr double kFp8Block = 128 * 128; // fp8 block (one fp32 scale each)

// Embeddings, LM head and norms stay at 16 bit in quantized checkpoints (GPTQ/AWQ, DeepSeek fp8).
double other_weight_bytes(WeightFormat f) { return f == WeightFormat::fp32 ? 4 : 2; }

double weight_bytes(const ModelShape& m, WeightFormat f) {
  const double others = m.total_params() - m.transformer_params();
  return m.transformer_params() * weight_format_bytes(f) + others * other_weight_bytes(f);
}

// Korthikanti et al. 2022 Sec. 4, bytes per layer with 2-byte activations: without recomputation
// sbh(10 + 24/t + 5as/(ht)), with sequence parallelism sbh/t (34 + 5as/h); selective drops the
// 5as/h attention term; full keeps the layer input, 2sbh (/t with SP).
double layer_activation_bytes(const ModelShape& m, const TrainingSetup& s, int t) {
  const double sbh = static_cast<double>(s.seq_len) * s.micro_batch * m.hidden;
  const double attn = 5.0 * m.heads * s.seq_len / m.hidden;
  switch (s.recompute) {
    case Recompute::full: return 2 * sbh / (s.sequence_parallel ? t : 1);
    case Recompute::selective: return s.sequence_parallel ? sbh * 34 / t : sbh * (10 + 24.0 / t);
    case Recompute::none: break;
  }
  return s.sequence_parallel ? sbh / t * (34 + attn) : sbh * (10 + 24.0 / t + attn / t);
}

// MoE and MLA layers (Korthikanti's form is for dense multi-head layers): what the kernels of a
// layer keep (workloads/layer_ops, standard attention with dropout), the larger of a dense and
// an MoE layer (the most loaded stage holds only MoE layers).
double kernel_activation_bytes(const ModelShape& m, const TrainingSetup& s, int t) {
  ParallelPlan plan;
  plan.tp = t, plan.ep = s.ep, plan.micro_batch = s.micro_batch, plan.recompute = s.recompute;
  plan.sequence_parallel = s.sequence_parallel;
  ModelShape shape = m;
  shape.seq_len = s.seq_len;
  const LayerOps ops(shape, plan);
  double most = 0;
  for (int l : {0, std::min(m.dense_layers, m.layers - 1)}) {
    double sum = 0;
    for (const OpSpec& op : ops.layer_forward(l)) sum += op.saved;
    most = std::max(most, sum);
  }
  return most;
}

template <class Need>
FitResult smallest_split(const ModelShape& m, double capacity, int gpus_per_node, Need need) {
  FitResult r;
  for (int tp = 1; tp <= std::min(8, gpus_per_node); tp *= 2) {
    r.split = need(tp, 1);
    if (r.split.need.total() <= capacity) return r.fits = true, r;
  }
  for (int pp = 2; pp <= m.layers; ++pp) {
    r.split = need(std::min(8, gpus_per_node), pp);
    if (r.split.need.total() <= capacity) return r.fits = true, r;
  }
  return r;
}

}  // namespace

WeightFormat parse_weight_format(std::string_view text, std::string_view key) {
  for (const auto& [f, name] : kFormats)
    if (name == text) return f;
  throw InputError(fmt::format("{} = '{}': unknown precision; valid values: fp32, fp16, bf16, fp8, int8, int4", key, text));
}

std::string_view weight_format_name(WeightFormat f) {
  for (const auto& [g, name] : kFormats)
    if (g == f) return name;
  return "?";
}

double weight_format_bytes(WeightFormat f) {
  switch (f) {
    case WeightFormat::fp32: return 4;
    case WeightFormat::fp16:
    case WeightFormat::bf16: return 2;
    case WeightFormat::fp8: return 1 + 4 / kFp8Block;
    case WeightFormat::int8: return 1 + 2 / kGroup;
    case WeightFormat::int4: return 0.5 + 2 / kGroup;
  }
  return 2;
}

double MemoryNeed::total() const {
  double sum = 0;
  for (const MemoryItem& i : items) sum += i.bytes;
  return sum;
}

MemoryNeed inference_memory(const ModelShape& m, const InferenceSetup& s, int tp, int pp) {
  MemoryNeed n;
  const std::string_view fmt_name = weight_format_name(s.format);
  n.items.push_back({"weights", weight_bytes(m, s.format) / (tp * pp),
                     fmt::format("{} linear layers ({:.4g} B/weight with scales), embeddings and head at {} bit; "
                                 "/ (tp x pp)", fmt_name, weight_format_bytes(s.format),
                                 8 * other_weight_bytes(s.format))});
  // Each TP rank caches its KV heads (replicated when tp > kv_heads); MLA's latent on every rank.
  const int kv_shards = m.is_mla() ? 1 : std::min(tp, m.kv_heads_or_heads());
  const double tokens = static_cast<double>(s.context) * s.batch;
  n.items.push_back({"kv_cache", m.kv_cache_elements_per_token_layer() * m.layers * tokens * kKvBytes / (pp * kv_shards),
                     fmt::format("{} {} x {} tokens x {} layers x {:.0f} values x 2 B (fp16)",
                                 m.is_mla() ? "MLA latent + rotary key:" : "2 x kv_heads x head_dim:", s.batch,
                                 s.context, m.layers, m.kv_cache_elements_per_token_layer())});
  const double chunk = std::min(tokens, static_cast<double>(kPrefillChunkTokens));
  const double ffn = m.is_moe() ? std::max<double>(m.ffn_or_default(), (m.active_experts + m.shared_experts) *
                                                                           static_cast<double>(m.expert_ffn_hidden))
                                : m.ffn_or_default();
  n.items.push_back({"activations",
                     chunk * (4.0 * m.hidden + 3 * ffn) * kKvBytes / tp + 4.0 * s.batch * m.vocab / tp,
                     fmt::format("one forward pass over {:.0f} tokens (prefill chunk <= {}): (4h + 3 ffn) x 2 B "
                                 "each, + fp32 logits of {} sequence(s); / tp", chunk, kPrefillChunkTokens, s.batch)});
  n.items.push_back({"overhead", kRuntimeOverheadBytes, "CUDA context, kernels, cuBLAS/NCCL workspaces (1 GiB)"});
  return n;
}

MemoryNeed training_memory(const ModelShape& m, const TrainingSetup& s, int tp, int pp, int dp) {
  MemoryNeed n;
  // Stages split evenly (layers, or layers + 2 counting the embedding and the head); otherwise the
  // most loaded stage of the uneven split dtsim advise gives: ceil((layers + 2) / pp) layers,
  // their parameters and activations.
  const bool even = m.layers % pp == 0 || (m.layers + 2) % pp == 0;
  const double layers = even ? static_cast<double>(m.layers) / pp : std::ceil((m.layers + 2.0) / pp);
  const double stage_share = layers * pp / m.layers;  // of the layers' parameters, relative to 1/pp
  // Routed experts: / ep more, and their sharded state over the dp / ep ranks holding them.
  const double routed = static_cast<double>(m.moe_layers()) * m.experts * m.expert_params();
  const double others = m.total_params() - m.transformer_params();
  const double p = ((m.transformer_params() - routed) * stage_share + others) / (tp * pp);
  const double pe = routed * stage_share / (static_cast<double>(tp) * pp * s.ep);
  const int edp = std::max(1, dp / s.ep);
  const auto bytes = [&](double per_param, int stage) {
    return per_param * (s.zero_stage >= stage ? p / dp + pe / edp : p + pe);
  };
  const std::string experts = m.is_moe() ? fmt::format("; routed experts / ep = {}", s.ep) : "";
  n.items.push_back({"weights", bytes(2, 3),
                     fmt::format("bf16, / (tp x pp){}{}", s.zero_stage >= 3 ? " x dp (ZeRO-3)" : "", experts)});
  n.items.push_back({"gradients", bytes(2, 2),
                     fmt::format("bf16, / (tp x pp){}{}", s.zero_stage >= 2 ? " x dp (ZeRO-2)" : "", experts)});
  n.items.push_back({"optimizer", bytes(12, 1),
                     fmt::format("Adam: fp32 master weights, momentum, variance (12 B/param), / (tp x pp){}{}",
                                 s.zero_stage >= 1 ? " x dp (ZeRO-1)" : "", experts)});
  const int in_flight = s.micro_batches > 0 ? std::min(pp, s.micro_batches) : pp;
  const double logits = pp == 1 ? 4.0 * s.seq_len * s.micro_batch * m.vocab / tp : 0;
  const bool kernels = m.is_moe() || m.is_mla();
  const auto per_layer = [&](const TrainingSetup& setup) {
    return kernels ? kernel_activation_bytes(m, setup, tp) : layer_activation_bytes(m, setup, tp);
  };
  // With recomputation the backward of each layer first reruns its forward (full: the layer,
  // selective: the attention core), so one layer's activations as without recomputation live
  // next to the checkpoints (Korthikanti et al. 2022 Sec. 4.1, the rematerialized layer).
  TrainingSetup materialized = s;
  materialized.recompute = Recompute::none;
  const double rematerialized = s.recompute == Recompute::none ? 0 : per_layer(materialized) - per_layer(s);
  n.items.push_back({"activations", layers * in_flight * per_layer(s) + rematerialized + logits,
                     fmt::format("{}, recompute {}{}: {:.4g} layers x {} micro-batch(es) in "
                                 "flight (1F1B){}{}", kernels ? "what the MoE/MLA kernels keep" : "Korthikanti et al. 2022",
                                 recompute_name(s.recompute), s.sequence_parallel ? " + SP" : "",
                                 layers, in_flight, s.recompute == Recompute::none ? "" : " + one rematerialized layer",
                                 pp == 1 ? " + fp32 logits 4sbV/t" : "")});
  n.items.push_back({"overhead", kRuntimeOverheadBytes, "CUDA context, kernels, cuBLAS/NCCL workspaces (1 GiB)"});
  return n;
}

FitResult smallest_inference_split(const ModelShape& m, const InferenceSetup& s, double capacity, int gpus_per_node) {
  return smallest_split(m, capacity, gpus_per_node, [&](int tp, int pp) {
    return Split{tp, pp, 1, inference_memory(m, s, tp, pp)};
  });
}

FitResult smallest_training_split(const ModelShape& m, const TrainingSetup& s, double capacity, int dp,
                                  int gpus_per_node) {
  return smallest_split(m, capacity, gpus_per_node, [&](int tp, int pp) {
    return Split{tp, pp, dp, training_memory(m, s, tp, pp, dp)};
  });
}

}  // namespace dtsim

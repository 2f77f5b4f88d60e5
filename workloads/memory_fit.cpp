// The memory a model needs for inference (closed forms) and for training (the program builder's
// memory plan, walked pass by pass without simulating), see memory_fit.hpp.
#include "workloads/memory_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/base/error.hpp"
#include "workloads/layer_ops.hpp"
#include "workloads/layer_params.hpp"
#include "workloads/pipeline_schedule.hpp"

namespace dtsim {
namespace {

constexpr std::pair<WeightFormat, std::string_view> kFormats[] = {
    {WeightFormat::fp32, "fp32"}, {WeightFormat::fp16, "fp16"}, {WeightFormat::bf16, "bf16"},
    {WeightFormat::fp8, "fp8"},   {WeightFormat::int8, "int8"}, {WeightFormat::int4, "int4"},
    {WeightFormat::q4_0, "q4_0"}, {WeightFormat::q4_k_m, "q4_k_m"}};

constexpr double kKvBytes = 2;          // fp16/bf16 KV cache and activations
constexpr double kGroup = 128;          // int8/int4 group size (one fp16 scale each)
constexpr double kFp8Block = 128 * 128; // fp8 block (one fp32 scale each)
// llama.cpp's GGUF blocks (ggml/src/ggml-common.h): block_q4_0 is an fp16 scale and 32 4-bit
// weights, 18 bytes per 32 (4.5 bits); block_q4_K 2 fp16 + 12 bytes of 6-bit sub-block scales +
// 128 bytes of 4-bit weights per 256 (4.5 bits); block_q6_K 210 bytes per 256 (6.5625 bits).
constexpr double kQ4_0Bytes = 18.0 / 32, kQ4_KBytes = 144.0 / 256, kQ6_KBytes = 210.0 / 256;
// Q4_K_M (llama.cpp's llama_tensor_get_type): Q4_K everywhere but attn_v and ffn_down in Q6_K on
// the layers use_more_bits picks (the first and last eighth and every third between: half of 32 or
// 80 layers). attn_v and ffn_down are 28-30 % of a Llama 2/3 layer's weights, so 14.5 % of the
// linear weights are Q6_K: 4.8 bits on average (4.79-4.82 for Llama 3 70B ... Llama 2 7B; Llama 3
// 8B's file, 4.58 GiB, is what this and a Q6_K head and Q4_K embedding add up to).
constexpr double kQ4_K_MBytes = kQ4_KBytes + 0.145 * (kQ6_KBytes - kQ4_KBytes);

double weight_bytes(const ModelShape& m, WeightFormat f) {
  const double others = m.total_params() - m.transformer_params();
  return m.transformer_params() * weight_format_bytes(f) + others * embedding_weight_bytes(f);
}

double kept(const std::vector<OpSpec>& ops) {
  double sum = 0;
  for (const OpSpec& op : ops) sum += op.saved;
  return sum;
}

// `total` layers over `pp` stages as evenly as possible, the extra ones to the middle stages first.
std::vector<int> spread(int total, int pp) {
  std::vector<int> stages(pp, total / pp);
  int extra = total % pp;
  for (int i = 1; i < pp - 1 && extra > 0; ++i, --extra) ++stages[i];
  if (extra > 0) ++stages.back(), --extra;
  if (extra > 0) ++stages.front();
  return stages;
}

// What one model chunk of a stage keeps per micro-batch (layer_ops' saved bytes per kernel) and
// what its backward pass adds on top: the layer being recomputed (full: the whole layer as
// without recomputation; selective: the other modules' reruns and, with unfused attention, the attention core).
// A multi-token-prediction module's kept bytes: its head, block and input (freed in that order by
// its backward pass), and its block's recomputation.
struct MtpMemory {
  double head = 0, block = 0, input = 0, recomputed = 0;
};
struct ChunkMemory {
  std::vector<double> layer, recomputed;  // per layer of the chunk, in forward order
  double embedding = 0, head = 0;         // first chunk of the first stage, last of the last
  std::vector<MtpMemory> mtp;             // after the head, where the chunk holds it
  double gathered = 0;                    // ZeRO-3: one layer's gathered parameters
  // FSDP's gathered layers while layer i (forward order) runs (StageBuilder::gather_layer): its own
  // and the next one's, prefetched, but for the pass's last layer (the first going backward).
  double gathered_at(std::size_t i, bool forward) const {
    return (forward ? i + 1 == layer.size() : i == 0) ? gathered : 2 * gathered;
  }
  // ZB-H1: what each layer's and the head's weight GEMMs read, kept from the backward pass (B)
  // until the weight-gradient pass (W).
  std::vector<double> layer_weights;
  double head_weights = 0;
  double total() const {
    double sum = embedding + head;
    for (double l : layer) sum += l;
    for (const MtpMemory& k : mtp) sum += k.head + k.block + k.input;
    return sum;
  }
  double weights_total() const {
    double sum = head_weights;
    for (double w : layer_weights) sum += w;
    return sum;
  }
};
// What the backward pass of layer `l` adds while it rematerializes the layer.
double recomputed_bytes(const ParallelPlan& p, const LayerOps& ops, int l) {
  const std::vector<OpSpec> materialized = ops.layer_forward(l, true);
  if (p.layer_recompute(l) == Recompute::full) return kept(materialized);
  if (p.layer_recompute(l) == Recompute::selective_op)
    return kept(ops.op_checkpoint_reruns(materialized, kept(ops.layer_forward(l))));
  if (p.recompute == Recompute::selective)
    return kept(ops.module_reruns(materialized)) +
           (p.attention == Attention::standard ? kept(ops.attention_core(materialized)) : 0);
  return 0;
}
ChunkMemory chunk_memory(const ModelShape& m, const ParallelPlan& p, const LayerOps& ops, int stage, int chunk) {
  ChunkMemory c;
  const int begin = p.chunk_first_layer(stage, chunk), count = p.chunk_layers(stage, chunk);
  for (int l = begin; l < begin + count; ++l) {
    c.layer.push_back(kept(ops.layer_forward(l)));
    c.recomputed.push_back(recomputed_bytes(p, ops, l));
    // StageBuilder::layer_backward: the weight GEMMs' inputs, at most what the layer frees.
    c.layer_weights.push_back(p.splits_weight_gradients()
                                  ? std::min(LayerOps::weight_gradient_inputs(ops.layer_forward(l, true)),
                                             c.layer.back() + c.recomputed.back())
                                  : 0);
  }
  if (p.holds_embedding(stage, chunk)) c.embedding = kept(ops.embedding_forward());
  if (p.holds_head(stage, chunk)) {
    c.head = kept(ops.head_forward());
    if (p.splits_weight_gradients()) c.head_weights = std::min(LayerOps::weight_gradient_inputs(ops.head_forward()), c.head);
    for (int l = m.layers; l < m.layers + m.mtp_layers; ++l)
      c.mtp.push_back({c.head, kept(ops.layer_forward(l)), kept(ops.mtp_input()), recomputed_bytes(p, ops, l)});
  }
  if (p.zero_stage >= 3 && p.grad_ranks() > 1) c.gathered = p.weight_bytes * m.params_per_layer() / p.tp;
  return c;
}

// The most a stage's activations and buffers reach as it runs its passes in order: a forward pass
// adds what its chunk keeps; the backward frees the head's first, then rematerializes each layer
// from the top before freeing it; under ZB-H1 the weight GEMMs' inputs wait for the W pass.
struct ActivationPeak {
  double activations = 0, buffers = 0;
  int in_flight = 0;  // micro-batches whose activations are kept at the peak
};
ActivationPeak activation_peak(const ModelShape& m, const ParallelPlan& p, int stage) {
  const LayerOps ops(m, p);
  std::vector<ChunkMemory> chunks;
  for (int c = 0; c < p.chunks(); ++c) chunks.push_back(chunk_memory(m, p, ops, stage, c));
  ActivationPeak best;
  double held = 0;
  int in_flight = 0;
  const auto consider = [&](double activations, double buffers) {
    if (activations + buffers > best.activations + best.buffers) best = {activations, buffers, in_flight};
  };
  for (const PipelinePass& pass : pipeline_order(p, stage)) {
    const ChunkMemory& c = chunks[pass.chunk];
    if (pass.weight) {
      held -= c.weights_total();
      continue;
    }
    if (pass.forward) {
      ++in_flight;
      double running = held + c.embedding;
      for (std::size_t i = 0; i < c.layer.size(); ++i) consider(running += c.layer[i], c.gathered_at(i, true));
      held += c.total();
      consider(held, c.mtp.empty() ? 0 : c.gathered);  // the head's, and each MTP module's gathered block
      continue;
    }
    double running = held;
    for (std::size_t k = c.mtp.size(); k-- > 0;) {
      running -= c.mtp[k].head;
      consider(running + c.mtp[k].recomputed, c.gathered);
      running -= c.mtp[k].block + c.mtp[k].input;
    }
    running -= c.head - c.head_weights;
    for (std::size_t i = c.layer.size(); i-- > 0;) {
      consider(running + c.recomputed[i], c.gathered_at(i, false));
      running -= c.layer[i] - c.layer_weights[i];
    }
    held -= c.total() - c.weights_total(), --in_flight;
  }
  return best;
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

double gradient_bytes_per_param(const ParallelPlan& p) {
  return (p.grad_reduce_fp32 ? 4 : p.weight_bytes) +
         (p.grad_accumulation == GradAccumulation::fp32_buffer ? p.weight_bytes : 0);
}

namespace {
// The model stages whose layers a pipeline stage holds: its own, and DualPipe's mirror.
std::vector<int> held_stages(const ParallelPlan& p, int stage) {
  if (p.schedule == Schedule::dualpipe) return {stage, p.pp - 1 - stage};
  return {stage};
}
}  // namespace

LayerParams stage_params(const ModelShape& m, const ParallelPlan& p, int stage) {
  LayerParams sum;
  if (p.schedule == Schedule::dualpipev) {  // two chunks of layers; rank 0 holds the embedding and the head
    for (int c = 0; c < 2; ++c) {
      const LayerParams layers = layers_params(m, p, p.chunk_first_layer(stage, c), p.chunk_layers(stage, c));
      sum.replicated += layers.replicated;
      sum.experts += layers.experts;
    }
    if (stage == 0) {
      sum.replicated += m.embedding_params() + m.head_params() + m.final_norm_params();
      const LayerParams mtp = layers_params(m, p, m.layers, m.mtp_layers);
      sum.replicated += mtp.replicated;
      sum.experts += mtp.experts;
    }
    return sum;
  }
  for (int s : held_stages(p, stage)) {
    const LayerParams layers = layers_params(m, p, p.first_layer(s), p.stage_layers[s]);
    sum.replicated += layers.replicated;
    sum.experts += layers.experts;
    if (s == 0) sum.replicated += m.embedding_params();
    if (s == p.pp - 1) {
      sum.replicated += m.head_params() + m.final_norm_params() +
                        (m.tied_embeddings && p.head_apart_from_embedding() ? static_cast<double>(m.vocab) * m.hidden : 0);
      const LayerParams mtp = layers_params(m, p, m.layers, m.mtp_layers);  // beside the head
      sum.replicated += mtp.replicated;
      sum.experts += mtp.experts;
    }
  }
  return sum;
}

StageState stage_state(const ModelShape& m, const ParallelPlan& p, int stage) {
  const LayerParams held = stage_params(m, p, stage);
  const double params = held.replicated / p.tp;
  const double experts = held.experts / p.expert_tp(), dp = p.grad_ranks(), edp = p.expert_grad_ranks(), e = p.weight_bytes;
  const auto share = [&](double per_param, int zero) {
    return per_param * (p.zero_stage >= zero ? params / dp + experts / edp : params + experts);
  };
  // A recipe's quantized copies of the layers' weights (embedding and head stay in BF16).
  double layer_weights = 0;
  for (int s : held_stages(p, stage)) {
    layer_weights += layers_params(m, p, p.first_layer(s), p.stage_layers[s]).replicated;
    if (s == p.pp - 1) layer_weights += layers_params(m, p, m.layers, m.mtp_layers).replicated;
  }
  const double quantized = recipe_spec(p.recipe).weight_cache_bytes * (layer_weights / p.tp + experts);
  return {e * (params / (p.zero_stage >= 3 ? dp : 1) + experts) + quantized, share(gradient_bytes_per_param(p), 2),
          share(4 + 2 * p.moment_bytes, 1)};
}

WeightFormat parse_weight_format(std::string_view text, std::string_view key) {
  for (const auto& [f, name] : kFormats)
    if (name == text) return f;
  throw InputError(fmt::format("{} = '{}': unknown precision; valid values: {} (q4_0, q4_k_m: llama.cpp's GGUF "
                               "quantizations)", key, text, weight_format_names(", ")));
}

std::string weight_format_names(std::string_view separator) {
  std::string out;
  for (const auto& [f, name] : kFormats) out += (out.empty() ? "" : std::string(separator)) + std::string(name);
  return out;
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
    case WeightFormat::q4_0: return kQ4_0Bytes;
    case WeightFormat::q4_k_m: return kQ4_K_MBytes;
  }
  return 2;
}

// Embeddings, LM head and norms stay at 16 bit in quantized checkpoints (GPTQ/AWQ, DeepSeek fp8);
// llama.cpp quantizes output.weight to Q6_K in its q4_0 and q4_k_m files (llama_tensor_get_type),
// counted here for the embedding too (its token_embd is Q4_K: an overcount of the memory alone).
double embedding_weight_bytes(WeightFormat f) {
  if (f == WeightFormat::q4_0 || f == WeightFormat::q4_k_m) return kQ6_KBytes;
  return f == WeightFormat::fp32 ? 4 : 2;
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
                                 8 * embedding_weight_bytes(s.format))});
  // Each TP rank caches its KV heads (replicated when tp > kv_heads); MLA's latent on every rank.
  const int kv_shards = m.is_mla() ? 1 : std::min(tp, m.kv_heads_or_heads());
  const double tokens = static_cast<double>(s.context) * s.batch;
  n.items.push_back({"kv_cache", m.kv_cache_elements_per_token_layer() * m.layers * tokens * s.kv_bytes / (pp * kv_shards),
                     fmt::format("{} {} x {} tokens x {} layers x {:.0f} values x {:g} B ({})",
                                 m.is_mla() ? "MLA latent + rotary key:" : "2 x kv_heads x head_dim:", s.batch,
                                 s.context, m.layers, m.kv_cache_elements_per_token_layer(), s.kv_bytes,
                                 s.kv_bytes == kKvBytes ? "fp16" : "fp8")});
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

StageSplit stage_split(const ModelShape& m, int pp) {
  ParallelPlan auto_split;
  auto_split.pp = pp;
  try {
    validate_plan(auto_split, m, pp);
    return {auto_split.stage_layers, false};
  } catch (const InputError&) {
  }
  if (m.layers + 2 < 2 * pp) return {spread(m.layers, pp), true};
  std::vector<int> stages = spread(m.layers + 2, pp);
  --stages.front();
  --stages.back();
  return {stages, true};
}

ParallelPlan training_plan(const ModelShape& m, const TrainingSetup& s, int tp, int pp, int dp) {
  ParallelPlan p;
  p.tp = tp, p.pp = pp, p.dp = dp, p.ep = s.ep, p.cp = s.cp;
  p.micro_batch = s.micro_batch;
  p.global_batch = (s.micro_batches > 0 ? s.micro_batches : pp) * s.micro_batch * dp;
  p.zero_stage = s.zero_stage, p.recompute = s.recompute, p.recompute_modules = s.recompute_modules;
  p.recompute_num_layers = s.recompute_num_layers;
  p.moe_probs = s.moe_probs, p.moment_bytes = s.moment_bytes;
  p.sequence_parallel = s.sequence_parallel && tp > 1;
  p.attention = s.attention, p.dropout = s.dropout, p.fused_kernels = s.fused_kernels, p.recipe = s.recipe;
  p.grad_reduce_fp32 = s.grad_reduce_fp32, p.grad_accumulation = s.grad_accumulation;
  p.schedule = s.schedule, p.virtual_stages = s.virtual_stages, p.microbatch_group = s.microbatch_group;
  p.stage_layers = stage_split(m, pp).layers;
  return p;
}

TrainingSetup training_setup(const ParallelPlan& p, int seq_len) {
  TrainingSetup s;
  s.seq_len = seq_len, s.micro_batch = p.micro_batch, s.recompute = p.recompute, s.zero_stage = p.zero_stage;
  s.recompute_modules = p.recompute_modules, s.moe_probs = p.moe_probs, s.moment_bytes = p.moment_bytes;
  s.recompute_num_layers = p.recompute_num_layers;
  s.sequence_parallel = p.sequence_parallel, s.micro_batches = p.micro_batches(), s.ep = p.ep, s.cp = p.cp;
  s.attention = p.attention, s.dropout = p.dropout, s.fused_kernels = p.fused_kernels, s.recipe = p.recipe;
  s.grad_reduce_fp32 = p.grad_reduce_fp32, s.grad_accumulation = p.grad_accumulation;
  s.schedule = p.schedule, s.virtual_stages = p.virtual_stages, s.microbatch_group = p.microbatch_group;
  return s;
}

MemoryNeed training_memory(const ModelShape& model, const TrainingSetup& s, int tp, int pp, int dp) {
  ModelShape m = model;
  m.seq_len = s.seq_len;
  const ParallelPlan p = training_plan(m, s, tp, pp, dp);
  int stage = 0;
  StageState state;
  ActivationPeak peak;
  for (int st = 0; st < pp; ++st) {
    const StageState st_state = stage_state(m, p, st);
    const ActivationPeak st_peak = activation_peak(m, p, st);
    const auto total = [](const StageState& a, const ActivationPeak& b) {
      return a.weights + a.gradients + a.optimizer + b.activations + b.buffers;
    };
    if (st == 0 || total(st_state, st_peak) > total(state, peak)) stage = st, state = st_state, peak = st_peak;
  }
  MemoryNeed n;
  const std::string where = pp > 1 ? fmt::format(" (stage {} of {}, {} layers)", stage, pp, p.stage_layers[stage]) : "";
  const std::string experts = m.is_moe() ? fmt::format("; routed experts / ep = {}", s.ep) : "";
  const std::string over = p.cp > 1 ? " x dp x cp" : " x dp";  // the ranks ZeRO shards over
  n.items.push_back({"weights", state.weights,
                     fmt::format("bf16, / tp{}{}{}", p.zero_stage >= 3 ? over + " (ZeRO-3)" : "", experts, where)});
  const std::string grads = p.grad_accumulation == GradAccumulation::fp32_buffer ? "bf16 + the fp32 accumulation buffer"
                            : p.grad_reduce_fp32                                  ? "fp32 main gradients"
                                                                                  : "bf16";
  n.items.push_back({"gradients", state.gradients,
                     fmt::format("{}, / tp{}{}", grads, p.zero_stage >= 2 ? over + " (ZeRO-2)" : "", experts)});
  n.items.push_back({"optimizer", state.optimizer,
                     fmt::format("Adam: fp32 master weights, {} momentum and variance ({} B/param), / tp{}{}",
                                 p.moment_bytes == 2 ? "bf16" : "fp32", 4 + 2 * p.moment_bytes,
                                 p.zero_stage >= 1 ? over + " (ZeRO-1)" : "", experts)});
  n.items.push_back({"activations", peak.activations,
                     fmt::format("what each kernel keeps ({} attention, dropout {}, {}recompute {}): {} {} in flight "
                                 "({}){}{}", attention_name(p.attention), p.dropout ? "on" : "off",
                                 p.sequence_parallel ? "sequence parallel, " : "", recompute_name(p.recompute),
                                 peak.in_flight, p.chunks() > 1 ? "model-chunk passes" : "micro-batch(es)",
                                 p.virtual_stages > 1 ? fmt::format("interleaved x {}", p.virtual_stages)
                                                      : std::string(schedule_name(p.schedule)),
                                 p.recompute == Recompute::none ? "" : " + the layer being recomputed",
                                 p.cp > 1 ? fmt::format("; 1/{} of each sequence (context parallel)", p.cp) : "")});
  n.items.push_back({"buffers", peak.buffers,
                     p.zero_stage >= 3 && p.grad_ranks() > 1 ? "ZeRO-3: a layer's parameters gathered and the next prefetched"
                                                 : "none (ZeRO-3 gathers only)"});
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
    return Split{tp, pp, dp, training_memory(m, s, tp, pp, dp), s.cp};
  });
}

}  // namespace dtsim

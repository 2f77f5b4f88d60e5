// The static memory model behind `dtsim fit` and the pruning of `dtsim advise`: what a model needs
// on a GPU for inference (closed forms: weights in a storage format with its quantization scales,
// KV cache, activations of a forward pass, runtime overhead) and for training (the simulated
// step's own memory plan, without simulating it: the weights, gradients and Adam state the
// program builder allocates per stage under ZeRO, the activations each kernel of layer_ops keeps
// for the micro-batches the pipeline schedule holds in flight, the recomputed layer, the gathered
// ZeRO-3 layers), and the smallest tensor x pipeline split whose per-GPU share fits a capacity.
// It knows nothing of GPUs beyond their capacity in bytes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "workloads/layer_params.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// fp8: 1 byte + one fp32 scale per 128 x 128 block (DeepSeek-V3's fp8 checkpoint); int8 and int4:
// one fp16 scale per group of 128 weights (GPTQ/AWQ-style group-wise, symmetric). q4_0 and q4_k_m
// are llama.cpp's GGUF files of those names (ggml's block layouts, in memory_fit.cpp): 4.5 and
// about 4.8 bits per linear-layer weight, the LM head in Q6_K.
enum class WeightFormat { fp32, fp16, bf16, fp8, int8, int4, q4_0, q4_k_m };
WeightFormat parse_weight_format(std::string_view text, std::string_view key);
std::string_view weight_format_name(WeightFormat f);
// Every format's name, in order, joined by `separator` (for errors and --help).
std::string weight_format_names(std::string_view separator);
// Bytes per weight of the transformer's linear layers, scales included.
double weight_format_bytes(WeightFormat f);
// Bytes per weight of the embeddings, the LM head and the norms, which quantized checkpoints keep
// at 16 bit (32 in an fp32 model; Q6_K in llama.cpp's q4_0 and q4_k_m files).
double embedding_weight_bytes(WeightFormat f);

// Runtime overhead per GPU: CUDA context, kernels, cuBLAS/NCCL workspaces. 1 GiB, the low end of
// the "1-2 GB" the Hugging Face Transformers guide "Model training anatomy" gives for the kernels.
constexpr double kRuntimeOverheadBytes = 1024.0 * 1024 * 1024;
// Inference forward passes take at most this many tokens at once (a chunked prefill).
constexpr int kPrefillChunkTokens = 2048;

struct MemoryItem {
  std::string name;      // weights, kv_cache, activations, overhead, gradients, optimizer
  double bytes = 0;      // per GPU
  std::string includes;  // what the figure counts, in words
};

struct MemoryNeed {
  std::vector<MemoryItem> items;
  double total() const;
};

struct InferenceSetup {
  WeightFormat format = WeightFormat::bf16;
  int context = 4096;  // tokens per sequence held in the KV cache
  int batch = 1;       // sequences served at once
  double kv_bytes = 2; // bytes per cached key or value element (fp16/bf16; 1 for an fp8 KV cache)
};

// How the step executes, as the scenario keys of the same names (a framework profile sets most of
// them; the defaults are ParallelPlan's). Training is bf16/fp16 mixed precision under 1F1B.
struct TrainingSetup {
  int seq_len = 2048;
  int micro_batch = 1;
  Recompute recompute = Recompute::full;
  int zero_stage = 1;
  bool sequence_parallel = false;  // Megatron SP on every split with tp > 1
  int micro_batches = 0;  // per step; 0 = pp (a full 1F1B pipeline)
  int ep = 1;             // expert parallelism (MoE): routed experts / ep per GPU, their state / (dp / ep)
  int cp = 1;             // context parallelism: each rank keeps its 1/cp of every sequence; state / (dp x cp)
  Attention attention = Attention::standard;
  bool dropout = true;
  bool fused_kernels = true;
  Recipe recipe = Recipe::none;  // FP8/FP4 recipe: its quantized weight copies
  Schedule schedule = Schedule::one_f_one_b;  // interleaved: virtual_stages chunks per stage
  int virtual_stages = 1;
  int microbatch_group = 0;       // interleaved: micro-batches per chunk group; 0 = pp
  bool grad_reduce_fp32 = false;  // fp32 main gradients (Megatron's main_grad buffers, FSDP's reduce dtype)
  GradAccumulation grad_accumulation = GradAccumulation::fused;  // fp32_buffer keeps bf16 .grad beside fp32
  unsigned recompute_modules = module_bit(RecomputeModule::core_attn);  // what selective recomputation reruns
  int recompute_num_layers = 0;  // full recomputation of the first N layers of each chunk only (0: all)
  MoeProbs moe_probs = MoeProbs::combine;  // MoE: where the router's weights apply (what they keep)
  double moment_bytes = 4;                 // each Adam moment per parameter (2: BF16 moments)
};

// Transformer layers per pipeline stage for `pp` stages: the split `dtsim run` makes of
// parallel.stage_layers = auto (validate_plan), or where it refuses one (DeepSeek-R1's 61 layers
// on a power of two) layers + 2 as evenly as possible, the extra layers to the middle stages
// first, one fewer on the first and the last (the embedding and the head count as one layer
// each). `uneven` says which.
struct StageSplit {
  std::vector<int> layers;
  bool uneven = false;
};
StageSplit stage_split(const ModelShape& m, int pp);

// The plan the program builder would run for this setup on tp x pp x dp GPUs (stage split as above).
ParallelPlan training_plan(const ModelShape& m, const TrainingSetup& s, int tp, int pp, int dp);
// The setup of a plan as a scenario gives it (training_plan's inverse, but for the sizes).
TrainingSetup training_setup(const ParallelPlan& p, int seq_len);

// Static bytes per GPU of a pipeline stage, allocated before the step (the program builder's
// memory plan and fit's alike): its layers' parameters (the routed experts of the EP shard apart),
// the embedding on the first stage, the head, the final norm and a tied embedding's copy on the
// last, split over TP; weights (/ dp under ZeRO-3), gradients (/ dp under ZeRO-2), Adam's
// state (fp32 master weights and two moments: 12 B, or 8 with BF16 moments; / dp under ZeRO-1), experts' state over the expert-DP group.
struct StageState {
  double weights = 0, gradients = 0, optimizer = 0;
};
// Parameters a stage holds, whole (not split over TP): its layers' replicated ones with the
// embedding, head, final norm and tied copy where it has them, and its EP shard's routed experts.
// Under DualPipe a stage holds its own and its mirror's (pp - 1 - stage).
LayerParams stage_params(const ModelShape& m, const ParallelPlan& p, int stage);
StageState stage_state(const ModelShape& m, const ParallelPlan& p, int stage);
// Bytes of gradient held per parameter: the fp32 main gradient where the plan accumulates and
// reduces in fp32 (Megatron's main_grad buffers: "bf16 param, fp32 grads: 6 + 12/d" in its
// distributed-optimizer table), else the training precision's; DeepSpeed's BF16 optimizer keeps
// the bf16 .grad beside its fp32 buffer (4 + 2).
double gradient_bytes_per_param(const ParallelPlan& p);

// A model-parallel split and what it needs per GPU.
struct Split {
  int tp = 1, pp = 1, dp = 1;
  MemoryNeed need;  // per GPU
  int cp = 1;       // context-parallel ranks per sequence (training)
  int gpus() const { return tp * pp * dp * cp; }
};

// Inference on tp x pp GPUs (pp = 1, tp = 1: the whole model on one GPU).
MemoryNeed inference_memory(const ModelShape& m, const InferenceSetup& s, int tp = 1, int pp = 1);
// Training on tp x pp x dp GPUs, per GPU of the stage whose peak is highest: its static state, and
// the most its activations and buffers reach as it runs its passes (pipeline_order) — what
// `dtsim run` reports as peak_memory_gib, plus the runtime overhead it leaves out.
MemoryNeed training_memory(const ModelShape& m, const TrainingSetup& s, int tp = 1, int pp = 1, int dp = 1);

// The smallest split that fits `capacity_bytes`: tp = 1, 2, 4, 8 (up to gpus_per_node) on one
// node, then pp = 2, 3, ... nodes of tp = gpus_per_node, pp at most the layers; dp fixed.
// `fits` is false (and the split the last one tried) when none does.
struct FitResult {
  bool fits = false;
  Split split;
};
FitResult smallest_inference_split(const ModelShape& m, const InferenceSetup& s, double capacity_bytes,
                                   int gpus_per_node = 8);
FitResult smallest_training_split(const ModelShape& m, const TrainingSetup& s, double capacity_bytes, int dp = 1,
                                  int gpus_per_node = 8);

}  // namespace dtsim

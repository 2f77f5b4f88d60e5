// The static memory model behind `dtsim fit` and the pruning of `dtsim advise`: closed forms of
// what a model needs on a GPU for inference (weights in a storage format with its quantization
// scales, KV cache, activations of a forward pass, runtime overhead) and for training (weights,
// gradients, Adam state under ZeRO, activations by Korthikanti et al. 2022 under recomputation),
// and the smallest tensor x pipeline split whose per-GPU share fits a capacity. It knows nothing
// of GPUs beyond their capacity in bytes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// fp8: 1 byte + one fp32 scale per 128 x 128 block (DeepSeek-V3's fp8 checkpoint); int8 and int4:
// one fp16 scale per group of 128 weights (GPTQ/AWQ-style group-wise, symmetric).
enum class WeightFormat { fp32, fp16, bf16, fp8, int8, int4 };
WeightFormat parse_weight_format(std::string_view text, std::string_view key);
std::string_view weight_format_name(WeightFormat f);
// Bytes per weight of the transformer's linear layers, scales included.
double weight_format_bytes(WeightFormat f);

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
};

struct TrainingSetup {
  int seq_len = 2048;
  int micro_batch = 1;
  Recompute recompute = Recompute::full;
  int zero_stage = 1;
  bool sequence_parallel = false;
  int micro_batches = 0;  // per step; 0 = at least pp (a full 1F1B pipeline)
  int ep = 1;             // expert parallelism (MoE): routed experts / ep per GPU, their state / (dp / ep)
};

// A model-parallel split and what it needs per GPU.
struct Split {
  int tp = 1, pp = 1, dp = 1;
  MemoryNeed need;  // per GPU
  int gpus() const { return tp * pp * dp; }
};

// Inference on tp x pp GPUs (pp = 1, tp = 1: the whole model on one GPU).
MemoryNeed inference_memory(const ModelShape& m, const InferenceSetup& s, int tp = 1, int pp = 1);
// Training on tp x pp x dp GPUs, per GPU of the first pipeline stage (the one that keeps the most
// activations under 1F1B).
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

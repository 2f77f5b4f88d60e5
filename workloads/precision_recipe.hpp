// Low-precision training recipes as Transformer Engine runs them: which GEMMs run in FP8 or FP4,
// what quantizing their operands costs in HBM passes, and the quantized weight copies kept in
// memory. Each recipe with its source (Transformer Engine's recipe classes and docs, NVIDIA's
// NVFP4 pretraining report). The linear layers' GEMMs (QKV, output projection, MLP, experts) run
// in the recipe's format; attention, the LM head and everything else stay in BF16.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// none: every GEMM in the training precision (bf16, fp16, tf32, fp32).
enum class Recipe { none, fp8_delayed, fp8_current, fp8_blockwise, mxfp8, nvfp4 };

struct RecipeSpec {
  Recipe recipe = Recipe::none;
  std::string_view name;  // the training.precision value
  bool fp4 = false;       // GEMMs at the FP4 rate (else FP8)
  // HBM bytes to quantize one BF16 operand element: read it, write the low-precision value in
  // both layouts (the transpose for the other GEMM of the pair) with their scales.
  double cast_bytes = 0;
  // An amax pass over the tensor before quantizing it (current and per-tensor global scaling).
  double amax_bytes = 0;
  // Extra bytes per element of the weight-gradient GEMM's operands (NVFP4's random Hadamard
  // transform: read and write them once more).
  double wgrad_extra_bytes = 0;
  // Quantized weight copies kept between micro-batches, bytes per parameter (both layouts, scales).
  double weight_cache_bytes = 0;
  // Needs block-scaled tensor cores (Blackwell-class: the catalog's parts with an FP4 rate).
  bool block_scaled = false;
  std::string_view source;
};

// The recipe a training.precision value names (fp8 is fp8_delayed, Transformer Engine's default
// recipe); nullptr when the value names a plain precision.
const RecipeSpec* find_recipe(std::string_view text);
const RecipeSpec& recipe_spec(Recipe r);
const std::vector<RecipeSpec>& recipes();
// The training.precision values that name a recipe, in catalog order: "fp8, fp8_delayed, ...".
std::string recipe_names();

}  // namespace dtsim

// The low-precision recipes (see precision_recipe.hpp). Bytes per element count a BF16 input (2),
// FP8 values (1), FP4 values (0.5), an E8M0 or E4M3 scale per block (1 byte per 32 or 16 values).
#include "workloads/precision_recipe.hpp"

#include <algorithm>

namespace dtsim {

const std::vector<RecipeSpec>& recipes() {
  static const std::vector<RecipeSpec> all = {
      {Recipe::fp8_delayed, "fp8_delayed", false, 2 + 1 + 1, 0, 0, 2, false,
       "Transformer Engine DelayedScaling (the default FP8 recipe): per-tensor scales from the amax history, "
       "E4M3 forward and E5M2 gradients (HYBRID), fused cast-transpose; FP8 weight and transpose cached across "
       "micro-batches (is_first_microbatch)"},
      {Recipe::fp8_current, "fp8_current", false, 2 + 1 + 1, 2, 0, 2, false,
       "Transformer Engine Float8CurrentScaling: the per-tensor scale from the tensor's own amax, a reduction pass "
       "before each cast"},
      {Recipe::fp8_blockwise, "fp8_blockwise", false, 2 + 2 * (1 + 4.0 / 128), 0, 0, 2 * (1 + 4.0 / (128 * 128)), false,
       "Transformer Engine Float8BlockScaling (Hopper) and DeepSeek-V3 (2024) Sec. 3.3: E4M3 values with an FP32 scale "
       "per 1x128 tile of activations and gradients (row- and column-wise copies) and per 128x128 block of weights, "
       "computed in the cast (no amax history or pass); partial sums promoted to FP32 every 128 along K"},
      {Recipe::mxfp8, "mxfp8", false, 2 + 2 * (1 + 1.0 / 32), 0, 0, 2 * (1 + 1.0 / 32), true,
       "Transformer Engine MXFP8BlockScaling (Blackwell): E4M3 values with an E8M0 scale per 32 along the "
       "contraction, row- and column-wise copies (the OCP Microscaling format)"},
      {Recipe::nvfp4, "nvfp4", true, 2 + 2 * (0.5 + 1.0 / 16), 2, 4, 2 * (0.5 + 1.0 / 16), true,
       "Transformer Engine NVFP4BlockScaling and NVIDIA, 'Pretraining Large Language Models with NVFP4' (2025): E2M1 "
       "values with an E4M3 scale per 16 and a per-tensor FP32 scale from the amax, 16x16 random Hadamard transforms "
       "on the weight-gradient operands, stochastic rounding of gradients"},
  };
  return all;
}

std::string recipe_names() {
  std::string out = "fp8";
  for (const RecipeSpec& r : recipes()) out += ", " + std::string(r.name);
  return out;
}

const RecipeSpec* find_recipe(std::string_view text) {
  if (text == "fp8") text = "fp8_delayed";
  const auto& all = recipes();
  const auto it = std::find_if(all.begin(), all.end(), [&](const RecipeSpec& r) { return r.name == text; });
  return it == all.end() ? nullptr : &*it;
}

const RecipeSpec& recipe_spec(Recipe r) {
  static const RecipeSpec none{};
  const auto& all = recipes();
  const auto it = std::find_if(all.begin(), all.end(), [&](const RecipeSpec& s) { return s.recipe == r; });
  return it == all.end() ? none : *it;
}

}  // namespace dtsim

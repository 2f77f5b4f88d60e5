// Low-precision recipes (training.precision): which GEMMs each runs in FP8 or FP4, what quantizing
// costs, the weight copies it keeps, and the hardware it needs.
#include <catch2/catch.hpp>

#include <map>

#include "sim/base/error.hpp"
#include "sim/compute/compute_model.hpp"
#include "tests/program_helpers.hpp"
#include "workloads/layer_ops.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

Program program_with(Recipe recipe) {
  ParallelPlan p = plan_of(1, 1, 1, 1, 1, Recompute::none);
  p.attention = Attention::flash;
  p.recipe = recipe;
  const ModelShape& m = find_model("llama3-8b");
  validate_plan(p, m, 1);
  return build_program(m, p);
}

// The time of the first op of `kind` in `phase` on stage 0.
double seconds_of(const Program& prog, const ComputeModel& model, OpKind kind, Phase phase) {
  const StageProgram& s = prog.stages[0];
  for (int i = 0; i < s.size(); ++i)
    if (s.kind[i] == kind && s.phase[i] == phase) return static_cast<double>(model.time(s, i).duration_ns);
  FAIL("no such op");
  return 0;
}

Precision gemm_precision(Recipe r) {
  return r == Recipe::none ? Precision::bf16 : recipe_spec(r).fp4 ? Precision::fp4 : Precision::fp8;
}

}  // namespace

TEST_CASE("every recipe is named, sourced, and fp8 means delayed scaling", "[precision]") {
  REQUIRE(find_recipe("fp8") != nullptr);
  CHECK(find_recipe("fp8")->recipe == Recipe::fp8_delayed);
  CHECK(find_recipe("bf16") == nullptr);
  for (const RecipeSpec& r : recipes()) {
    INFO(r.name);
    CHECK(find_recipe(r.name) == &recipe_spec(r.recipe));
    CHECK(r.source.size() > 40);
    CHECK(r.cast_bytes > 2);  // reads the BF16 element and writes at least one quantized copy
  }
  // Block-scaled formats carry a scale per 32 (MXFP8) or 16 (NVFP4) values in both layouts.
  CHECK(recipe_spec(Recipe::mxfp8).weight_cache_bytes == Approx(2 * (1 + 1.0 / 32)));
  CHECK(recipe_spec(Recipe::nvfp4).weight_cache_bytes == Approx(2 * (0.5 + 1.0 / 16)));
  // DeepSeek-V3's fine-grained FP8: an FP32 scale per 1 x 128 tile in both layouts, per 128 x 128
  // weight block; no amax pass.
  CHECK(recipe_spec(Recipe::fp8_blockwise).cast_bytes == Approx(2 + 2 * (1 + 4.0 / 128)));
  CHECK(recipe_spec(Recipe::fp8_blockwise).amax_bytes == 0);
  CHECK(recipe_spec(Recipe::fp8_blockwise).weight_cache_bytes == Approx(2).epsilon(0.001));
  // The error for an unknown value lists every recipe.
  CHECK(recipe_names() == "fp8, fp8_delayed, fp8_current, fp8_blockwise, mxfp8, nvfp4");
}

TEST_CASE("a recipe speeds the linear layers' GEMMs and leaves attention and the head in BF16", "[precision]") {
  const GpuSpec& b200 = find_gpu("B200");
  std::map<Recipe, double> fc1, quantized_fc1, flash, head;
  for (Recipe r : {Recipe::none, Recipe::fp8_delayed, Recipe::fp8_current, Recipe::fp8_blockwise, Recipe::mxfp8,
                   Recipe::nvfp4}) {
    const Program prog = program_with(r);
    const ComputeModel model(b200, gemm_precision(r), Attention::flash, r);
    fc1[r] = seconds_of(prog, model, OpKind::fc1, Phase::forward);
    flash[r] = seconds_of(prog, model, OpKind::flash_attention, Phase::forward);
    head[r] = seconds_of(prog, model, OpKind::lm_head, Phase::forward);
  }
  for (Recipe r : {Recipe::fp8_delayed, Recipe::fp8_current, Recipe::fp8_blockwise, Recipe::mxfp8, Recipe::nvfp4}) {
    INFO(recipe_spec(r).name);
    CHECK(fc1[r] < fc1[Recipe::none]);
    CHECK(flash[r] == flash[Recipe::none]);
    CHECK(head[r] == head[Recipe::none]);
  }
  CHECK(fc1[Recipe::nvfp4] < fc1[Recipe::fp8_delayed]);
  CHECK(fc1[Recipe::fp8_current] > fc1[Recipe::fp8_delayed]);  // its amax pass before each cast
}

TEST_CASE("a recipe keeps quantized weight copies, and block scaling needs hardware that has it", "[precision]") {
  const auto weights = [](Recipe r) {
    return program_with(r).stages[0].static_bytes[static_cast<int>(MemCategory::weights)];
  };
  const ModelShape& m = find_model("llama3-8b");
  const double layer_params = m.layers * m.params_per_layer();
  CHECK(weights(Recipe::fp8_delayed) - weights(Recipe::none) == Approx(2 * layer_params).epsilon(0.001));
  CHECK(weights(Recipe::nvfp4) - weights(Recipe::none) == Approx(1.125 * layer_params).epsilon(0.001));
  // fit counts the same copies.
  TrainingSetup s{m.seq_len, 1, Recompute::none, 1, false, 0};
  s.recipe = Recipe::fp8_delayed;
  const double fp8 = training_memory(m, s).items[0].bytes;
  s.recipe = Recipe::none;
  CHECK(fp8 - training_memory(m, s).items[0].bytes == Approx(2 * layer_params).epsilon(0.001));
  CHECK_THROWS_WITH(ComputeModel(find_gpu("H100"), Precision::fp8, Attention::flash, Recipe::mxfp8),
                    Catch::Contains("training.precision = mxfp8") && Catch::Contains("no block-scaled tensor cores"));
  CHECK_THROWS_WITH(ComputeModel(find_gpu("H100"), Precision::fp4, Attention::flash, Recipe::nvfp4),
                    Catch::Contains("nvfp4"));
  CHECK_NOTHROW(ComputeModel(find_gpu("H100"), Precision::fp8, Attention::flash, Recipe::fp8_current));
  CHECK_NOTHROW(ComputeModel(find_gpu("H800"), Precision::fp8, Attention::flash, Recipe::fp8_blockwise));  // Hopper
}

TEST_CASE("an FP8 recipe keeps the linear layers' inputs for the backward pass in FP8", "[precision][memory]") {
  const ModelShape& m = find_model("llama3-8b");
  ParallelPlan bf16 = plan_of(1, 1, 1, 1, 1, Recompute::none);
  bf16.attention = Attention::flash;
  const auto saved = [&](Recipe r) {
    ParallelPlan p = bf16;
    p.recipe = r;
    std::map<OpKind, double> out;
    for (const OpSpec& op : LayerOps(m, p).layer_forward(0)) out[op.kind] += op.saved;
    return out;
  };
  const auto none = saved(Recipe::none);
  for (Recipe r : {Recipe::fp8_delayed, Recipe::fp8_current, Recipe::fp8_blockwise, Recipe::mxfp8}) {
    const auto fp8 = saved(r);
    INFO(recipe_spec(r).name);
    for (OpKind k : {OpKind::qkv_proj, OpKind::out_proj, OpKind::fc1, OpKind::fc2}) CHECK(fp8.at(k) == Approx(none.at(k) / 2));
    // Attention and the elementwise kernels keep what they kept.
    CHECK(fp8.at(OpKind::flash_attention) == Approx(none.at(OpKind::flash_attention)));
    CHECK(fp8.at(OpKind::activation) == Approx(none.at(OpKind::activation)));
  }
  // FP4 recipes keep BF16 inputs here.
  CHECK(saved(Recipe::nvfp4).at(OpKind::fc1) == Approx(none.at(OpKind::fc1)));
}

// The DeepSeek-V3 scenario as the report ran it (DeepSeek-AI 2024, Sec. 3.1-3.3): 2,048 H800 in
// nodes of 8, PP 16 with DualPipe, EP 64 over 8 nodes, ZeRO-1, no TP, FP8 block-scaled GEMMs,
// DeepEP's two-hop dispatch with node-limited routing, RMSNorm, MLA up-projection and SwiGLU
// recomputation, BF16 Adam moments; DualPipe against 1F1B and the dispatchers on the same layout;
// fit against run; the step against the report's rate and the GPU's memory.
#include <catch2/catch.hpp>
#include <cmath>

#include "sim/base/units.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/memory_fit.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

Scenario load_v3(std::vector<std::string> overrides) {
  return test::load_shipped("deepseek-v3-2048xh800.ini", overrides);
}

// Half the DP replicas (64, still one EP group of 8 nodes) and 32 micro-batches a step.
std::vector<std::string> small(std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--parallel.dp=64", "--training.global_batch=2048", "--cluster.nodes=128",
                                   "--output.trace_detail=summary"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("the DeepSeek-V3 scenario has the report's layout", "[scenario][deepseek-v3]") {
  const Scenario sc = load_v3({});
  const ParallelPlan& p = sc.plan;
  CHECK((p.tp == 1 && p.pp == 16 && p.dp == 128 && p.ep == 64 && p.cp == 1));
  CHECK(p.num_ranks() == 2048);
  CHECK(p.schedule == Schedule::dualpipe);
  CHECK(p.micro_batches() == 120);  // 15,360 sequences over 128 DP replicas
  CHECK(p.zero_stage == 1);
  CHECK(p.moment_bytes == 2);  // BF16 AdamW moments (Sec. 3.3.3)
  CHECK(p.moe_probs == MoeProbs::activation);  // the megatron-core profile's
  CHECK(p.recipe == Recipe::fp8_blockwise);
  CHECK(p.moe_dispatcher == MoeDispatcher::deepep);
  CHECK((sc.model.moe_groups == 8 && sc.model.moe_topk_groups == 4));
  CHECK(p.recompute == Recompute::selective);
  CHECK(recompute_modules_name(p.recompute_modules) == "layernorm,mla_up_proj,moe_act");
  CHECK(sc.model.seq_len == 4096);
  // The EP group is 64 consecutive DP ranks: 8 whole nodes of 8.
  CHECK(p.rank_of({.dp = 63, .tp = 0, .pp = 0}) == 63);
}

TEST_CASE("DualPipe and DeepEP each shorten the DeepSeek-V3 step", "[scenario][deepseek-v3][dualpipe][heavy]") {
  Scenario dual = load_v3(small());
  const EngineResult r = run_scenario(dual, "", 2, true);
  Scenario one_f_one_b = load_v3(small({"--parallel.schedule=1f1b"}));
  CHECK(r.summary.step_time_s < 0.9 * run_scenario(one_f_one_b, "", 2, true).summary.step_time_s);
  Scenario nccl = load_v3(small({"--parallel.moe_dispatcher=alltoall"}));
  CHECK(r.summary.step_time_s < run_scenario(nccl, "", 2, true).summary.step_time_s);
  // fit walks the same DualPipe passes, two stages per rank and the recomputed modules.
  const ParallelPlan& p = dual.plan;
  const double fit =
      training_memory(dual.model, training_setup(p, dual.model.seq_len), p.tp, p.pp, p.dp).total() - kRuntimeOverheadBytes;
  CHECK(fit / kGiB == Approx(r.summary.peak_memory_gib).epsilon(0.01));
}

// Hidden from the default run (and the sanitized one): ctest runs it by tag.
TEST_CASE("the DeepSeek-V3 step is within 15 % of the report's rate and fits the H800", "[.flagship][deepseek-v3]") {
  // The bound, on the whole scenario (every rank of 2,048): 180K H800 GPU hours per
  // trillion tokens (Sec. 1) are 1e12 / (180e3 x 3600) = 1,543 tokens/s per GPU.
  Scenario v3 = load_v3({"--output.trace_detail=summary"});
  const EngineResult r = run_scenario(v3, "", 2, true);
  const double tokens_per_gpu = r.summary.tokens_per_s / r.summary.num_gpus;
  const double reported = 1e12 / (180e3 * 3600);
  CHECK(std::abs(tokens_per_gpu / reported - 1) <= 0.15);
  // The run fit in 80 GB: weights, gradients, BF16 Adam moments and the activations of DualPipe's
  // in-flight chunks, with the runtime's own overhead.
  CHECK(!r.summary.oom);
  CHECK(r.summary.peak_memory_gib + kRuntimeOverheadBytes / kGiB <= 80);
}

// The flagship dense scenario as its source ran it: Llama 3 405B at 8K tokens (Llama Team 2024,
// Sec. 3.3.2 and Table 4) without activation recomputation, interleaved with one layer fewer on
// the first and the last stage, ranks ordered [TP, CP, PP, DP], gradients sharded (ZeRO-2); fit
// sizes its interleaved schedule as run does.
#include <catch2/catch.hpp>
#include <cmath>

#include "sim/scenario/run.hpp"
#include "sim/base/units.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/memory_fit.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

Scenario load_flagship(const std::vector<std::string>& overrides, const char* file = "llama3-405b-16k.ini") {
  return test::load_shipped(file, overrides);
}

}  // namespace

TEST_CASE("the Llama 3 405B scenario runs as the paper describes", "[scenario][llama3]") {
  // Two DP replicas on 256 GPUs keep a stage's layers, chunks and micro-batches.
  const std::vector<std::string> small = {"--parallel.dp=2", "--training.global_batch=32", "--cluster.nodes=32",
                                          "--cluster.pod_gpus=128", "--output.trace_detail=summary"};
  Scenario as_published = load_flagship(small);
  const EngineResult zero2 = run_scenario(as_published, "", 2, true);
  const ParallelPlan& p = as_published.plan;
  CHECK(p.recompute == Recompute::none);
  CHECK(p.schedule == Schedule::interleaved);
  CHECK(p.virtual_stages == 8);
  CHECK(p.zero_stage == 2);
  CHECK(p.sequence_parallel);
  CHECK(p.attention == Attention::flash);
  CHECK((p.tp == 8 && p.pp == 16 && p.micro_batches() == 16));
  CHECK(load_flagship({}).plan.dp == 128);
  // One layer fewer on the end stages: 7 + 14 x 8 + 7 = 126, one layer per chunk, and the first
  // stage's first chunk the embedding alone, the last stage's last chunk the head alone.
  REQUIRE(p.stage_layers.size() == 16);
  CHECK(p.stage_layers.front() == 7);
  CHECK(p.stage_layers.back() == 7);
  for (int s = 1; s < 15; ++s) CHECK(p.stage_layers[s] == 8);
  CHECK(p.chunk_layers(0, 0) == 0);
  CHECK(p.chunk_layers(0, 1) == 1);
  CHECK(p.chunk_layers(15, 7) == 0);
  CHECK(p.chunk_layers(15, 6) == 1);
  CHECK(p.chunk_first_layer(1, 0) == 0);  // the first layer is on stage 1
  // [TP, CP, PP, DP]: a rank's pipeline neighbour is 8 ranks on, its DP peer 128.
  CHECK(p.rank_of({.dp = 0, .tp = 0, .pp = 1}) == 8);
  CHECK(p.rank_of({.dp = 1, .tp = 0, .pp = 0}) == 128);
  // ZeRO-1's reading (fp32 gradients accumulated over the micro-batches, one reduce-scatter per
  // step) is faster than reduce-scattering every micro-batch's gradients.
  std::vector<std::string> one = small;
  one.push_back("--parallel.zero_stage=1");
  Scenario single_reduction = load_flagship(one);
  CHECK(run_scenario(single_reduction, "", 2, true).summary.step_time_s < zero2.summary.step_time_s);
  // fit walks the same interleaved schedule: its need is the simulated peak (+ the 1 GiB runtime
  // overhead) within 1 % (93.25 against 93.50 GiB; sized as 1F1B it would be 4 % short).
  const double fit = training_memory(as_published.model, training_setup(p, as_published.model.seq_len), p.tp, p.pp,
                                     p.dp).total() - kRuntimeOverheadBytes;
  CHECK(fit / kGiB == Approx(zero2.summary.peak_memory_gib).epsilon(0.01));
}

TEST_CASE("the Llama 3 405B 8,192-GPU scenario is Table 4's first row", "[scenario][llama3]") {
  const Scenario eight = load_flagship({}, "llama3-405b-8k.ini"), sixteen = load_flagship({});
  const ParallelPlan& p = eight.plan;
  CHECK((p.tp == 8 && p.cp == 1 && p.pp == 16 && p.dp == 64));
  CHECK(p.num_ranks() == 8192);
  CHECK(p.micro_batches() == 32);  // 32 sequences per DP replica, 16M tokens a step
  CHECK(p.global_batch * eight.model.seq_len == 2048 * 8192);
  // Only the DP size and the cluster differ from the 16,384-GPU row.
  CHECK(eight.model.layers == sixteen.model.layers);
  CHECK(p.stage_layers == sixteen.plan.stage_layers);
  CHECK((p.schedule == sixteen.plan.schedule && p.virtual_stages == sixteen.plan.virtual_stages));
  CHECK(p.zero_stage == sixteen.plan.zero_stage);
}

// The bound on the whole scenarios (every rank; TP groups folded, the same result): model
// TFLOP/s per GPU within 10 % of Table 4's, attention counted in full as PaLM's formula and dtsim's
// model FLOPs do. Hidden from the default run (and the sanitized one): ctest runs them by tag.
TEST_CASE("the Llama 3 405B 8,192-GPU step is within 10 % of Table 4", "[.flagship][llama3]") {
  Scenario eight = load_flagship({"--output.trace_detail=summary"}, "llama3-405b-8k.ini");
  const EngineResult r = run_scenario(eight, "", 2, true);
  CHECK(std::abs(r.summary.model_tflops_per_gpu / 430 - 1) <= 0.10);
  CHECK(!r.summary.oom);
}

TEST_CASE("the Llama 3 405B 16,384-GPU step is within 10 % of Table 4", "[.flagship][llama3]") {
  Scenario sixteen = load_flagship({"--output.trace_detail=summary"});
  const EngineResult r = run_scenario(sixteen, "", 2, true);
  CHECK(std::abs(r.summary.model_tflops_per_gpu / 400 - 1) <= 0.10);
  CHECK(!r.summary.oom);
}

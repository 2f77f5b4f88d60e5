// The summary's stage line: per-stage busy time, the slowest stage against the median, and the
// parallel.stage_layers split it suggests, which must shorten the step it was computed from.
#include <catch2/catch.hpp>

#include <fstream>
#include <numeric>
#include <regex>

#include "sim/scenario/stage_balance.hpp"
#include "tests/cli_scratch.hpp"

using namespace dtsim;
using namespace dtsim::test;

namespace {

std::vector<RankRecord> stages(const std::vector<double>& busy) {
  std::vector<RankRecord> ranks;
  for (std::size_t s = 0; s < busy.size(); ++s) {
    RankRecord r;
    r.pp = static_cast<int>(s);
    r.compute_s = 0.75 * busy[s];
    r.memory_bound_s = 0.25 * busy[s];
    ranks.push_back(r);
  }
  return ranks;
}

double step_time(const std::string& json) {
  std::smatch m;
  REQUIRE(std::regex_search(json, m, std::regex("\"step_time_s\": ([0-9.e+-]+)")));
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("a heavy last stage gets the split with the shortest slowest stage", "[summary]") {
  ParallelPlan plan;
  plan.pp = 8;
  plan.stage_layers.assign(8, 4);
  // Seven stages of 4 layers at 2 s a layer, the last with a 4 s head on top.
  const StageBalance b = stage_balance(plan, stages({8, 8, 8, 8, 8, 8, 8, 12}));
  CHECK(b.slowest == 7);
  CHECK(b.spread == Approx(0.5));
  REQUIRE(b.balanced.size() == 8);
  CHECK(std::accumulate(b.balanced.begin(), b.balanced.end(), 0) == 32);
  // The least possible slowest stage: 10 s (5 layers, or the head and 3 layers), against 12 s.
  double slowest = 4 + 2.0 * b.balanced.back();
  for (int s = 0; s < 7; ++s) slowest = std::max(slowest, 2.0 * b.balanced[s]);
  CHECK(slowest == Approx(10));
  // Even stages, or a light first stage (the slowest paces the pipeline): nothing to suggest.
  CHECK(stage_balance(plan, stages({8, 8, 8, 8, 8, 8, 8, 8})).balanced.empty());
  CHECK(stage_balance(plan, stages({6, 8, 8, 8, 8, 8, 8, 8.1})).balanced.empty());
}

TEST_CASE("the suggested stage split shortens Llama-3-8B's step on 8 stages", "[summary][cli]") {
  const std::string scenario = file("llama8b-pp8.ini");
  std::ofstream(scenario) << "[model]\nname = llama3-8b\n[training]\nframework = megatron-core\nglobal_batch = 64\n"
                             "micro_batch = 1\n[parallel]\ntp = 1\npp = 8\ndp = 1\n[cluster]\ngpu = H100-SXM5-80GB\n"
                             "nodes = 1\ngpus_per_node = 8\n";
  const Outcome text = run_dtsim("run " + scenario);
  REQUIRE(text.status == 0);
  // The 128K-vocabulary head makes the last stage the slowest.
  CHECK_THAT(text.out, Catch::Contains("slowest stage 7 of 8 (4 layers)"));
  std::smatch m;
  REQUIRE(std::regex_search(text.out, m, std::regex("try +(--parallel\\.stage_layers=[0-9,]+)")));
  const double before = step_time(run_dtsim("run " + scenario + " --json").out);
  const double after = step_time(run_dtsim("run " + scenario + " --json " + m[1].str()).out);
  INFO(m[1] << ": " << before << " s -> " << after << " s");
  CHECK(after < 0.9 * before);
}

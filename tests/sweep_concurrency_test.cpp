// Sweep points run concurrently (the code ThreadSanitizer checks, tests/tsan_check.sh): the
// points of tests/tiny-sweep.ini simulated on four plain std::threads and on two TBB threads
// give exactly the rows of a sequential run.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "sim/sweep/journal.hpp"
#include "sim/sweep/runner.hpp"

using namespace dtsim;

namespace {

SweepPlan tiny_plan() {
  SweepPlan plan;
  plan.scenario_path = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-sweep.ini";
  plan.spec = make_sweep_spec(plan.scenario_path, read_sweep_section(plan.scenario_path), {"parallel.dp=2,3"}, false, {});
  return plan;
}

std::vector<std::string> lines(const std::vector<PointResult>& rows) {
  std::vector<std::string> out;
  for (const PointResult& r : rows) out.push_back(SweepJournal::format_line(r));
  return out;
}

}  // namespace

TEST_CASE("points on plain threads and on TBB threads give the sequential rows", "[concurrency][sweep]") {
  const SweepPlan plan = tiny_plan();
  const std::int64_t n = plan.spec.num_points();
  REQUIRE(n == 12);
  std::vector<PointResult> sequential;
  for (std::int64_t p = 0; p < n; ++p) sequential.push_back(run_point(plan, p));

  std::vector<PointResult> threaded(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::int64_t p = t; p < n; p += 4) threaded[static_cast<std::size_t>(p)] = run_point(plan, p);
    });
  for (std::thread& t : threads) t.join();
  CHECK(lines(threaded) == lines(sequential));

  std::vector<std::int64_t> points;
  for (std::int64_t p = 0; p < n; ++p) points.push_back(p);
  std::atomic<int> done = 0;
  const std::vector<PointResult> tbb = run_points(plan, points, 2, [&](const PointResult&) { ++done; });
  CHECK(done == n);
  CHECK(lines(tbb) == lines(sequential));
}

TEST_CASE("a sweep with TP folding gives the same rows from fewer events", "[sweep]") {
  SweepPlan plan = tiny_plan();
  SweepPlan folded = plan;
  folded.fold_tp = true;
  int compared = 0;
  for (std::int64_t p = 0; p < plan.spec.num_points(); ++p) {
    PointResult a = run_point(plan, p), b = run_point(folded, p);
    INFO(SweepJournal::format_line(a));
    CHECK(a.status == b.status);
    if (a.status != PointStatus::ok) continue;
    ++compared;
    CHECK(a.summary.events == 2 * b.summary.events);  // TP 2
    b.summary.events = a.summary.events;
    CHECK(SweepJournal::format_line(a) == SweepJournal::format_line(b));
  }
  CHECK(compared >= 2);
}

// End-to-end tests of `dtsim sweep` and `dtsim merge` on scenarios/tests/tiny-sweep.ini (its
// [sweep] section plus --sweep parallel.dp=2,3: 12 points with ok, oom and invalid rows): the
// table's rows and statuses, that shards merged and --jobs 1 and 2 give exactly the single
// table, that merge refuses foreign, overlapping and incomplete parts, and --traces.
#include <catch2/catch.hpp>
#include <fmt/format.h>


#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "sim/trace/hdf5_reader.hpp"
#include "sim/trace/hdf5_sink.hpp"
#include "sim/sweep/table.hpp"
#include "tests/cli_scratch.hpp"

namespace fs = std::filesystem;
using namespace dtsim;
using namespace dtsim::test;

namespace {

const std::string kSweep = std::string("sweep ") + DTSIM_SOURCE_DIR + "/scenarios/tests/tiny-sweep.ini --sweep parallel.dp=2,3";

// Runs the test sweep with `extra` options and reads the table it wrote to `name`.h5.
SweepTable sweep(const std::string& name, const std::string& extra = "") {
  const Outcome o = run_dtsim(kSweep + " " + extra + " --output " + file(name + ".h5") + " --csv " + file(name + ".csv"));
  INFO(o.err);
  REQUIRE(o.status == 0);
  return read_sweep_table(file(name + ".h5"));
}

void require_same(const SweepTable& a, const SweepTable& b) {
  CHECK(a.scenario == b.scenario);
  CHECK(a.axes == b.axes);
  CHECK(a.definition == b.definition);
  CHECK(a.total_points == b.total_points);
  REQUIRE(a.rows.size() == b.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const PointResult &x = a.rows[i], &y = b.rows[i];
    INFO("row " << i);
    CHECK(x.point == y.point);
    CHECK(x.values == y.values);
    CHECK(x.status == y.status);
    CHECK(x.message == y.message);
    // Every metric bit for bit (NaN equals NaN).
    std::vector<std::string> names, xbits, ybits;
    const auto bits = [](std::vector<std::string>& out) {
      return [&out](const char*, const auto& v) { out.emplace_back(reinterpret_cast<const char*>(&v), sizeof v); };
    };
    trace_h5::visit_summary(x.summary, [&](const char* name, const auto&) { names.emplace_back(name); });
    trace_h5::visit_summary(x.summary, bits(xbits));
    trace_h5::visit_summary(y.summary, bits(ybits));
    for (std::size_t k = 0; k < names.size(); ++k) {
      INFO(names[k]);
      CHECK(xbits[k] == ybits[k]);
    }
  }
}

}  // namespace

TEST_CASE("a sweep table has one row per point with its status", "[sweep][cli]") {
  const SweepTable t = sweep("whole");
  CHECK(t.axes == std::vector<std::string>{"cluster.gpu", "training.micro_batch", "parallel.dp"});
  CHECK(t.total_points == 12);
  CHECK(t.shard == "1/1");
  CHECK(t.scenario.find("hidden = 8192") != std::string::npos);
  REQUIRE(t.rows.size() == 12);
  int counts[3] = {0, 0, 0};
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const PointResult& r = t.rows[i];
    INFO("point " << i << ": " << r.message);
    CHECK(r.point == static_cast<std::int64_t>(i));
    ++counts[static_cast<int>(r.status)];
    // dp = 3 needs 12 GPUs of 8; the RTX 2080 Ti has no NVSwitch; the V100's 32 GB are too few.
    const bool invalid = r.values[2] == "3" || r.values[0] == "RTX-2080Ti";
    const PointStatus expected = invalid ? PointStatus::invalid
                                 : r.values[0] == "V100-SXM2-32GB" ? PointStatus::oom : PointStatus::ok;
    CHECK(r.status == expected);
    if (r.status == PointStatus::ok) {
      CHECK(r.message.empty());
      CHECK(r.summary.step_time_s > 0);
      CHECK(r.summary.num_gpus == 8);
    }
    if (r.status == PointStatus::oom) {
      CHECK_THAT(r.message, Catch::Contains("rank 0 needs") && Catch::Contains("GPU holds 32.00 GiB"));
      CHECK(r.summary.oom);
      CHECK(r.summary.peak_memory_gib > 32);
      CHECK(std::isnan(r.summary.step_time_s));  // a step that does not fit has no time to compare
      CHECK(std::isnan(r.summary.mfu));
    }
    if (r.status == PointStatus::invalid) {
      // The layout is checked before the cluster is built.
      CHECK_THAT(r.message, Catch::Contains(r.values[2] == "3" ? "the cluster has 8 GPUs" : "has no NVSwitch"));
      CHECK(std::isnan(r.summary.step_time_s));
      CHECK(std::isnan(r.summary.mfu));
      CHECK(r.summary.events == 0);
      CHECK(r.summary.oom_rank == -1);
    }
  }
  CHECK(counts[0] == 2);
  CHECK(counts[1] == 2);
  CHECK(counts[2] == 8);
  const std::string csv = slurp(file("whole.csv"));
  CHECK_THAT(csv, Catch::StartsWith("point,cluster.gpu,training.micro_batch,parallel.dp,status,message,step_time_s,"
                                    "tokens_per_s,model_tflops_per_gpu"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 13);
  CHECK_FALSE(fs::exists(file("whole.h5.tmp")));
}

TEST_CASE("shards merged and any job count give the single table", "[sweep][cli]") {
  const SweepTable whole = sweep("single", "--jobs 1");
  require_same(whole, sweep("jobs2", "--jobs 2"));
  for (int k = 1; k <= 3; ++k) {
    const SweepTable part = sweep("part" + std::to_string(k), "--shard " + std::to_string(k) + "/3");
    CHECK(part.shard == std::to_string(k) + "/3");
    CHECK(part.rows.size() == 4);
  }
  const Outcome o = run_dtsim("merge " + file("merged.h5") + " " + file("part3.h5") + " " + file("part1.h5") + " " +
                          file("part2.h5") + " --csv " + file("merged.csv"));
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("12 points (2 ok, 2 oom, 8 invalid)"));
  require_same(whole, read_sweep_table(file("merged.h5")));
  CHECK(slurp(file("merged.csv")) == slurp(file("single.csv")));
}

TEST_CASE("merge refuses parts of other sweeps and overlapping or missing points", "[sweep][cli]") {
  sweep("a1", "--shard 1/2");
  sweep("a2", "--shard 2/2");
  sweep("other_values", "--shard 2/2 --sweep training.micro_batch=1,4");
  sweep("other_fixed", "--shard 2/2 --model.layers=8");
  const auto merge = [&](const std::string& parts) { return run_dtsim("merge " + file("m.h5") + " " + parts); };
  Outcome o = merge(file("a1.h5") + " " + file("a1.h5"));
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("point 0 is in both"));
  o = merge(file("a1.h5"));
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("6 of the sweep's 12 points are in no part (first: 1, 3, 5"));
  o = merge(file("a1.h5") + " " + file("other_values.h5"));
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("parts of different sweeps (their axis values differ)"));
  o = merge(file("a1.h5") + " " + file("other_fixed.h5"));
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("(their scenarios differ)"));
  o = merge(file("a1.h5") + " " + file("a2.csv"));
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("a2.csv"));
  o = merge(file("a1.h5") + " " + file("no-such.h5"));
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("no-such.h5"));
  CHECK_FALSE(fs::exists(file("m.h5")));
  CHECK_FALSE(fs::exists(file("m.h5.tmp")));
}

TEST_CASE("a sweep keeps the traces of its points and refuses bad options", "[sweep][cli]") {
  const fs::path traces = scratch() / "traces";
  const SweepTable t = sweep("traced", "--shard 1/4 --traces " + traces.string());
  for (const PointResult& r : t.rows) {
    const fs::path trace = traces / fmt::format("point-{:06}.h5", r.point);
    INFO(trace);
    CHECK(fs::exists(trace) == (r.status != PointStatus::invalid));
    if (r.status == PointStatus::ok) CHECK(read_trace(trace.string()).summary.step_time_s == r.summary.step_time_s);
  }
  const std::string base = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-sweep.ini";
  Outcome o = run_dtsim("run " + base);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("has a [sweep] section") && Catch::Contains("dtsim sweep"));
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {kSweep + " --sweep cluster.nicks=1,2", "cluster.nicks: unknown scenario key"},
           {kSweep + " --parallel.dp=2", "both a sweep axis and fixed by --parallel.dp"},
           {kSweep + " --shard 4/3", "--shard 4/3: K must be between 1 and 3"},
           {kSweep + " --jobs -1", "--jobs -1"},
           {"sweep /no/such.ini --sweep parallel.dp=1,2", "/no/such.ini: cannot open"},
           {kSweep + " --csv /no/such/dir/t.csv", "--csv /no/such/dir/t.csv: the folder '/no/such/dir' does not exist"}}) {
    o = run_dtsim(args + " --output " + file("never.h5"));
    INFO(args);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains(needle));
    CHECK_FALSE(fs::exists(file("never.h5")));
  }
  o = run_dtsim("merge " + file("only.h5"));
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("give the output file and the parts"));
  o = run_dtsim(kSweep + " --shard 1/6");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::StartsWith("point,cluster.gpu,"));
  CHECK_THAT(o.err, Catch::Contains("2/2 points in"));
}

// Tests of the sweep axes: lists and ranges, the [sweep] section, product and zip order, shard
// slicing, and every bad axis giving an InputError that names the key or value.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "sim/base/error.hpp"
#include "sim/sweep/axes.hpp"
#include "sim/sweep/progress.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

namespace {

using Values = std::vector<std::string>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

SweepSpec spec_of(const std::vector<std::string>& cli, bool zip = false, const std::vector<std::string>& fixed = {}) {
  return make_sweep_spec("s.ini", {}, cli, zip, fixed);
}

}  // namespace

TEST_CASE("axis values are lists or inclusive ranges", "[sweep]") {
  CHECK(parse_axis("cluster.nics_per_node", "1,2,4,8", "--sweep").values == Values{"1", "2", "4", "8"});
  CHECK(parse_axis("cluster.nics_per_node", "1:8:1", "--sweep").values.size() == 8);
  CHECK(parse_axis("parallel.tp", "8:2:-2", "--sweep").values == Values{"8", "6", "4", "2"});
  CHECK(parse_axis("parallel.tp", "1:6:2", "--sweep").values == Values{"1", "3", "5"});
  CHECK(parse_axis("cluster.oversubscription", "1:2:0.25", "--sweep").values == Values{"1", "1.25", "1.5", "1.75", "2"});
  CHECK(parse_axis("cluster.nic_gbps", "0.1:0.3:0.1", "--sweep").values == Values{"0.1", "0.2", "0.3"});
  // Values that contain commas are separated by ';'.
  CHECK(parse_axis("parallel.rank_order", "tp,dp,pp; dp,tp,pp", "--sweep").values == Values{"tp,dp,pp", "dp,tp,pp"});
  CHECK(parse_axis("cluster.gpu", " A100 , H100 ", "--sweep").values == Values{"A100", "H100"});
}

TEST_CASE("bad axes name the key and the value", "[sweep]") {
  CHECK_THAT(error_of([] { parse_axis("cluster.nicc", "1,2", "--sweep"); }), Catch::Contains("cluster.nicc: unknown scenario key"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "", "--sweep"); }), Catch::Contains("parallel.tp: no values"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "1,,2", "--sweep"); }), Catch::Contains("an empty value"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "1,2,1", "--sweep"); }), Catch::Contains("'1' is given twice"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "1:8:0", "--sweep"); }), Catch::Contains("STEP must not be 0"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "8:1:1", "--sweep"); }), Catch::Contains("never goes from 8 to 1"));
  CHECK_THAT(error_of([] { parse_axis("cluster.nic_gbps", "1:0.5:0.1", "--sweep"); }), Catch::Contains("never goes"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "1:8", "--sweep"); }), Catch::Contains("START:STOP:STEP"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "a:b:c", "--sweep"); }), Catch::Contains("must be numbers"));
  CHECK_THAT(error_of([] { parse_axis("parallel.tp", "1:100000000:1", "--sweep"); }), Catch::Contains("more than"));
  CHECK_THAT(error_of([] { parse_axis("output.trace", "a.h5,b.h5", "--sweep"); }), Catch::Contains("--traces DIR"));
  CHECK_THAT(error_of([] { spec_of({"parallel.tp"}); }), Catch::Contains("give KEY=V1,V2"));
  CHECK_THAT(error_of([] { spec_of({}); }), Catch::Contains("no sweep axes"));
  CHECK_THAT(error_of([] { spec_of({"parallel.tp=1,2", "parallel.tp=4"}); }), Catch::Contains("given twice"));
  CHECK_THAT(error_of([] { spec_of({"parallel.tp=1,2", "parallel.dp=1,2,4"}, true); }),
             Catch::Contains("parallel.tp has 2 values, parallel.dp has 3"));
  CHECK_THAT(error_of([] { spec_of({"parallel.tp=1,2"}, false, {"parallel.tp"}); }),
             Catch::Contains("both a sweep axis and fixed by --parallel.tp"));
  CHECK_THAT(error_of([] { spec_of({"parallel.tp=1:2000:1", "parallel.dp=1:2000:1", "parallel.pp=1:2000:1"}); }),
             Catch::Contains("more than 2147483647 points"));
}

TEST_CASE("the product varies the last axis fastest and zip pairs values", "[sweep]") {
  const SweepSpec product = spec_of({"parallel.tp=1,2", "training.micro_batch=1:3:1"});
  REQUIRE(product.num_points() == 6);
  CHECK(product.values_at(0) == Values{"1", "1"});
  CHECK(product.values_at(1) == Values{"1", "2"});
  CHECK(product.values_at(3) == Values{"2", "1"});
  CHECK(product.values_at(5) == Values{"2", "3"});
  CHECK(product.axis_keys() == "parallel.tp,training.micro_batch");
  const SweepSpec zip = spec_of({"parallel.tp=1,2,4", "parallel.dp=8,4,2"}, true);
  REQUIRE(zip.num_points() == 3);
  CHECK(zip.values_at(2) == Values{"4", "2"});
}

TEST_CASE("the sweep section gives axes and zip and the command line replaces an axis", "[sweep]") {
  const fs::path file = fs::temp_directory_path() / ("dtsim_sweep_axes_" + std::to_string(std::random_device{}()) + ".ini");
  std::ofstream(file) << "[model]\nname = bloom-176b\n[cluster]\ngpu = A100-SXM4-80GB\n[parallel]\ntp = 2\n\n[sweep]\n"
                        "parallel.dp = 1,2\ncluster.nics_per_node = 1,2,4,8\nzip = false\n";
  const std::vector<SweepLine> lines = read_sweep_section(file.string());
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].key == "parallel.dp");
  CHECK(lines[1].value == "1,2,4,8");
  const SweepSpec spec = make_sweep_spec(file.string(), lines, {"parallel.dp=4"}, false, {});
  CHECK(spec.axis_keys() == "parallel.dp,cluster.nics_per_node");
  CHECK(spec.num_points() == 4);
  CHECK_THAT(error_of([&] { make_sweep_spec(file.string(), {{"zip", "yes"}}, {"parallel.dp=4"}, false, {}); }),
             Catch::Contains("[sweep] zip = 'yes'"));
  CHECK(make_sweep_spec(file.string(), {{"zip", "true"}}, {"parallel.dp=4,8", "parallel.tp=1,2"}, false, {}).mode ==
        SweepMode::zip);
  CHECK_THAT(error_of([&] { make_sweep_spec(file.string(), {{"parallel.dpp", "1"}}, {}, false, {}); }),
             Catch::Contains(file.string() + ": [sweep] parallel.dpp: unknown scenario key"));
  fs::remove(file);
}

TEST_CASE("shards split the points so that every point is in exactly one", "[sweep]") {
  CHECK(shard_points(10, SweepShard{1, 3}) == std::vector<std::int64_t>{0, 3, 6, 9});
  CHECK(shard_points(10, SweepShard{3, 3}) == std::vector<std::int64_t>{2, 5, 8});
  CHECK(shard_points(2, SweepShard{4, 4}).empty());
  std::vector<int> seen(37, 0);
  for (int k = 1; k <= 5; ++k)
    for (std::int64_t p : shard_points(37, SweepShard{k, 5})) ++seen[static_cast<std::size_t>(p)];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  CHECK(parse_shard("2/4").index == 2);
  CHECK_THAT(error_of([] { parse_shard("5/4"); }), Catch::Contains("K must be between 1 and 4"));
  CHECK_THAT(error_of([] { parse_shard("0/4"); }), Catch::Contains("K must be between 1 and 4"));
  CHECK_THAT(error_of([] { parse_shard("1/0"); }), Catch::Contains("N must be >= 1"));
  CHECK_THAT(error_of([] { parse_shard("two"); }), Catch::Contains("give K/N"));
}

TEST_CASE("progress lines count points and estimate the time left", "[sweep]") {
  CHECK(SweepProgress::line(25, 100, 10.0, false) == "25/100 points  2.50 points/s  ETA 0:30");
  CHECK(SweepProgress::line(0, 100, 1.0, false) == "0/100 points  0.00 points/s  ETA --:--");
  CHECK(SweepProgress::line(1, 4000, 1.0, false) == "1/4000 points  1.00 points/s  ETA 1:06:39");
  CHECK_THAT(SweepProgress::line(50, 100, 5.0, true), Catch::StartsWith("[###############...............] 50/100"));
}

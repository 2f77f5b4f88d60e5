// NCCL version profiles: which profile a release names, the refusals, what changes between eras
// (the LL protocol's latency, NVLS), and that the framework profiles and the scenario key choose
// them.
#include <catch2/catch.hpp>

#include "sim/base/error.hpp"
#include "sim/network/collective_bench.hpp"
#include "sim/network/nccl_profile.hpp"
#include "sim/scenario/scenario.hpp"
#include "topologies/builders.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

TEST_CASE("a release names the newest profile not after it", "[nccl]") {
  CHECK(std::string(find_nccl_profile("2.8", "k").version) == "2.8");
  CHECK(std::string(find_nccl_profile("2.16.5", "k").version) == "2.8");
  CHECK(std::string(find_nccl_profile("2.17.1-1", "k").version) == "2.17");
  CHECK(std::string(find_nccl_profile("2.18.5", "k").version) == "2.18");
  CHECK(std::string(find_nccl_profile("2.20.5", "k").version) == "2.18");
  CHECK(std::string(find_nccl_profile("2.26.2", "k").version) == "2.25");
  CHECK(std::string(find_nccl_profile("2.30", "k").version) == "2.27");
  CHECK(&legacy_nccl_profile() == &find_nccl_profile("2.10.3", "k"));
  for (const char* bad : {"2.7.8", "2.31", "3.0", "2", "2.x", "2.18.", "2.18.5-", "latest", ""})
    CHECK_THROWS_WITH(find_nccl_profile(bad, "cluster.nccl_version"),
                      Catch::Contains("cluster.nccl_version") && Catch::Contains("2.8 to 2.30"));
  // Each profile's figures as its sources give them.
  CHECK_FALSE(find_nccl_profile("2.16", "k").nvls);
  CHECK(find_nccl_profile("2.17", "k").nvls_latency_ns == 40000);
  CHECK(find_nccl_profile("2.18", "k").nvls_arity == 8);
  CHECK_FALSE(find_nccl_profile("2.20", "k").nvls_across_hosts);
  CHECK(find_nccl_profile("2.21", "k").nvls_arity == 32);
  CHECK(find_nccl_profile("2.25", "k").nvls_channels_blackwell == 32);
  CHECK(find_nccl_profile("2.27", "k").nvls_channels_blackwell == 24);
  CHECK(find_nccl_profile("2.27", "k").nvls_channels_hopper == 16);
}

TEST_CASE("recent NCCL reaches about twice 2021's bus bandwidth at 1 MiB on 8 A100s, the same from 4 MiB",
          "[nccl]") {
  ClusterConfig c;  // one 8 x A100 node
  const ClusterGraph g = build_cluster(c);
  const std::vector<double> sizes = {1 << 20, 2 << 20, 4 << 20, 64 << 20};
  const auto old = sweep_collective(g, CommKind::all_reduce, 8, sizes, std::nullopt, std::nullopt,
                                    find_nccl_profile("2.10", "k"));
  const auto recent = sweep_collective(g, CommKind::all_reduce, 8, sizes, std::nullopt, std::nullopt,
                                       find_nccl_profile("2.18.5", "k"));
  // Measured: 18.0 -> 36.2 GB/s at 1 MiB (c0006; Azure ND A100 v4), 72.3 and 71.4 at 4 MiB.
  CHECK(recent[0].busbw_GBps > 1.8 * old[0].busbw_GBps);
  CHECK(recent[1].busbw_GBps > 1.4 * old[1].busbw_GBps);
  CHECK(recent[2].busbw_GBps == Approx(old[2].busbw_GBps).epsilon(0.3));
  CHECK(recent[3].busbw_GBps == old[3].busbw_GBps);  // LL128 from here: the same constants
  CHECK(recent[0].protocol == Protocol::ll);
}

TEST_CASE("the framework profile names its era's NCCL release and the scenario key overrides it", "[nccl][cli]") {
  const auto load = [](std::vector<std::string> args) {
    const auto vm = test::overrides(args);
    return load_scenario("", vm);
  };
  const Scenario bloom = load({});
  CHECK(bloom.nccl_version == "2.10.3");
  CHECK(bloom.nccl == &legacy_nccl_profile());
  const Scenario core = load({"--training.framework=megatron-core"});
  CHECK(core.nccl_version == "2.21.5");
  CHECK(std::string(core.nccl->version) == "2.21");
  CHECK_THAT(core.resolved_text, Catch::Contains("nccl_version = 2.21.5"));
  const Scenario given = load({"--training.framework=megatron-core", "--cluster.nccl_version=2.17"});
  CHECK(std::string(given.nccl->version) == "2.17");
  CHECK_THROWS_WITH(load({"--cluster.nccl_version=2.5"}), Catch::Contains("cluster.nccl_version = '2.5'"));
}

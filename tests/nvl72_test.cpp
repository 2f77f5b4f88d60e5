// NVL72 racks (cluster.node_kind = nvl72): the rack as one NVLink domain, its defaults (72 GPUs,
// a 400 Gb/s InfiniBand NIC per GPU) and their overrides, the refusals, and a training step whose
// TP groups stay on the rack's NVLink while DP crosses racks.
#include <catch2/catch.hpp>

#include "sim/base/error.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/summary_format.hpp"
#include "topologies/builders.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {
Scenario load(std::vector<std::string> overrides) {
  return test::load_shipped("", overrides);
}
const std::vector<std::string> kTwoRacks = {
    "--model.name=llama3-8b",   "--model.layers=4",        "--cluster.gpu=B200",     "--cluster.node_kind=nvl72",
    "--cluster.nodes=2",        "--cluster.fabric=rail",   "--parallel.tp=8",        "--parallel.pp=1",
    "--parallel.dp=18",         "--training.global_batch=36", "--training.micro_batch=1"};
}  // namespace

TEST_CASE("an NVL72 rack is one NVLink 5 domain of 72 GPUs on the rack's NVLink switch, a NIC per GPU", "[nvl72]") {
  const Scenario sc = load(kTwoRacks);
  CHECK(sc.cluster.gpus_per_node == 72);
  CHECK(sc.cluster.nics_per_node == 72);
  CHECK(sc.cluster.nic_gbps == 400);
  CHECK(sc.cluster.nic_kind == LinkKind::infiniband);
  CHECK_THAT(sc.resolved_text, Catch::Contains("gpus_per_node = 72") && Catch::Contains("node_kind = nvl72"));
  const ClusterGraph g = make_cluster(sc);
  REQUIRE(g.num_gpus() == 144);
  CHECK(g.num_nodes() == 2);
  // Every GPU: one NVLink 5 link each way to its rack's switch, at 900 GB/s.
  const Router router(g);
  const RouteInfo& inside = router.route(0, 71);
  REQUIRE(inside.links.size() == 2);
  CHECK(g.device(g.link_target(inside.links[0])).name == "node0.nvlink_switch");
  CHECK(g.device(g.link_target(inside.links[0])).kind == DeviceKind::nvlink_switch);
  CHECK(g.link(inside.links[0]).kind == LinkKind::nvlink5);
  CHECK(g.link(inside.links[0]).bytes_per_s == 900e9);
  // GPU 5 leaves its rack through its own NIC.
  const RouteInfo& across = router.route(5, 72 + 5);
  CHECK(g.device(g.link_target(across.links[0])).name == "node0.nic5");
  // On a fat tree each rack's 72 NICs take leaves of their own (32 + 32 + 8), so no route between
  // racks detours over a rack's NVLink to a NIC on a leaf shared with the other rack.
  Scenario tree_sc = load(kTwoRacks);
  tree_sc.cluster.fabric = Fabric::fat_tree;
  const ClusterGraph tree = make_cluster(tree_sc);
  const Router tree_router(tree);
  for (int src : {0, 40, 70})
    for (int dst : {72, 72 + 35, 72 + 71})
      for (int l : tree_router.route(src, dst).links) CHECK(tree.link(l).kind != LinkKind::nvlink5);
  CHECK(tree.device(tree.link_target(tree_router.route(70, 72).links[1])).name == "leaf2");
  CHECK(tree.device(tree.link_target(tree_router.route(72, 70).links[1])).name == "leaf3");
  // A collective over the whole rack runs NVLS on the rack tier (NCCL 2.21+: across the rack's
  // hosts); one over both racks does not.
  const CommModel comm(g, router, std::nullopt, std::nullopt, find_nccl_profile("2.27", "test"));
  std::vector<int> rack(72), both(144);
  for (int i = 0; i < 144; ++i) both[i] = i;
  for (int i = 0; i < 72; ++i) rack[i] = i;
  CHECK(comm.rings(rack).nvls == NvlsFabric::rack);
  CHECK(comm.cost(CommKind::all_reduce, 1 << 30, comm.rings(rack)).algorithm == Algorithm::nvls);
  CHECK(comm.rings(both).nvls == NvlsFabric::none);
  const CommModel older(g, router, std::nullopt, std::nullopt, find_nccl_profile("2.20.5", "test"));
  CHECK(older.cost(CommKind::all_reduce, 1 << 30, older.rings(rack)).algorithm != Algorithm::nvls);
  // Reduce-scatter over more than NCCL_MAX_NVLS_ARITY (32) GPUs is not NVLS.
  CHECK(comm.cost(CommKind::reduce_scatter, 1 << 20, comm.rings(rack)).algorithm != Algorithm::nvls);
}

TEST_CASE("an NVL72 rack's keys take given values, and bad ones are refused naming key, value and choices", "[nvl72]") {
  std::vector<std::string> nvl36 = kTwoRacks;
  std::erase(nvl36, "--parallel.dp=18");
  nvl36.insert(nvl36.end(), {"--cluster.gpus_per_node=36", "--cluster.nics_per_node=18", "--cluster.nic=xdr",
                             "--parallel.dp=9"});
  const Scenario sc = load(nvl36);
  CHECK(sc.cluster.gpus_per_node == 36);
  CHECK(sc.cluster.nics_per_node == 18);
  CHECK(sc.cluster.nic_gbps == 800);
  CHECK(make_cluster(sc).num_gpus() == 72);
  std::vector<std::string> odd = kTwoRacks;
  odd.push_back("--cluster.gpus_per_node=70");
  CHECK_THROWS_WITH(make_cluster(load(odd)), Catch::Contains("cluster.gpus_per_node = 70") && Catch::Contains("36"));
  std::vector<std::string> hopper = kTwoRacks;
  std::erase(hopper, "--cluster.gpu=B200");
  hopper.push_back("--cluster.gpu=H100-SXM5-80GB");
  CHECK_THROWS_WITH(make_cluster(load(hopper)), Catch::Contains("cluster.node_kind = nvl72") &&
                                                    Catch::Contains("NVLink 4") && Catch::Contains("nvswitch"));
  CHECK_THROWS_WITH(parse_node_kind("nvl144", "cluster.node_kind"), Catch::Contains("nvl72"));
}

TEST_CASE("a step on two NVL72 racks keeps its TP groups on the rack's NVLink and says so", "[nvl72][engine]") {
  Scenario sc = load(kTwoRacks);
  CHECK(tp_fold_exact(sc));
  const EngineResult r = run_scenario(sc, "", 1, false, 0);
  // The TP collectives ran on NVLink: the busiest NVLink carries far more than any NIC link.
  double nvlink = 0, network = 0;
  for (const LinkRecord& l : r.links) {
    double& most = l.kind == "nvlink5" ? nvlink : network;
    most = std::max(most, l.bytes);
  }
  CHECK(nvlink > 4 * network);
  const std::string text = format_summary_text(sc, r.summary, r.links, r.ranks);
  CHECK_THAT(text, Catch::Contains("nvl72 racks of B200") &&
                       Catch::Contains("one NVLink domain of 72 GPUs per rack (900 GB/s per GPU per direction)") &&
                       Catch::Contains("72 x 400 Gb/s infiniband NICs per rack"));
}

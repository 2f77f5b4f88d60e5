// Collective and send costs against their closed forms on simple topologies: rings through the
// NICs, the protocol choice, and the latency tail of each protocol.
#include <catch2/catch.hpp>

#include "sim/base/error.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/network/transfers.hpp"
#include "topologies/builders.hpp"

using namespace dtsim;

namespace {
double seconds(TimeNs ns) { return ns_to_seconds(ns); }
}  // namespace

TEST_CASE("ring all-reduce on an NVSwitch node: base + steps x hop + pipeline fill + 2(n-1)/n S/B", "[comm]") {
  ClusterConfig c;  // one 8 x A100 node
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const CommModel comm(g, router);
  const std::vector<int> gpus = {0, 1, 2, 3, 4, 5, 6, 7};
  const RingSet rings = comm.rings(gpus);
  REQUIRE(rings.rings.size() == 1);
  CHECK(rings.rings.front() == gpus);
  CHECK(rings.hop_class == HopClass::nvlink);
  const double B = 300e9 * achievable_fraction(LinkKind::nvlink3);
  CHECK(rings.bytes_per_s == Approx(B));
  const double S = 1 << 30;
  const int n = 8, steps = 2 * (n - 1);
  const CollectiveCost cost = comm.cost(CommKind::all_reduce, S, rings);
  CHECK(cost.protocol == Protocol::simple);
  const int simple = static_cast<int>(Protocol::simple), nvlink = static_cast<int>(HopClass::nvlink);
  const NcclProfile& nccl = comm.nccl();
  const double tail = 1e-9 * (nccl.base_ns[simple] + steps * (nccl.hop_ns[nvlink][simple] + rings.latency_ns)) +
                      steps * CommModel::kSimpleSliceBytes / B;
  CHECK(seconds(cost.tail_ns) == Approx(tail).epsilon(1e-6));
  CHECK(seconds(cost.estimate_ns) == Approx(tail + 2.0 * (n - 1) / n * S / B).epsilon(1e-6));
  // Bus bandwidth (nccl-tests) at 1 GiB is within a few percent of the effective link rate.
  const double busbw = 2.0 * (n - 1) / n * S / seconds(cost.estimate_ns);
  CHECK(busbw < B);
  CHECK(busbw > 0.9 * B);
}

TEST_CASE("small messages take the LL protocol and large ones Simple unless one is forced", "[comm]") {
  ClusterConfig c;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const std::vector<int> gpus = {0, 1, 2, 3, 4, 5, 6, 7};
  const CommModel automatic(g, router);
  const RingSet rings = automatic.rings(gpus);
  CHECK(automatic.cost(CommKind::all_reduce, 8 * 1024, rings).protocol == Protocol::ll);
  CHECK(automatic.cost(CommKind::all_reduce, 1 << 30, rings).protocol == Protocol::simple);
  const CommModel forced(g, router, Protocol::ll);
  const CollectiveCost ll = forced.cost(CommKind::all_reduce, 1 << 30, rings);
  CHECK(ll.protocol == Protocol::ll);
  CHECK(ll.wire_factor == 0.5);
  // LL moves twice the bytes: at 1 GiB it is about twice as slow as Simple.
  CHECK(seconds(ll.estimate_ns) > 1.8 * seconds(automatic.cost(CommKind::all_reduce, 1 << 30, rings).estimate_ns));
  CHECK_THROWS_AS(parse_protocol("tree", "cluster.nccl_protocol"), InputError);
  CHECK_FALSE(parse_protocol("auto", "cluster.nccl_protocol").has_value());
}

TEST_CASE("reduce-scatter and all-gather move half an all-reduce's bytes per hop", "[comm]") {
  const double S = 8e9;
  CHECK(CommModel::bytes_per_hop(CommKind::reduce_scatter, S, 4) * 2 == CommModel::bytes_per_hop(CommKind::all_reduce, S, 4));
  CHECK(CommModel::bytes_per_hop(CommKind::all_gather, S, 4) * 2 == CommModel::bytes_per_hop(CommKind::all_reduce, S, 4));
  CHECK(CommModel::bytes_per_hop(CommKind::all_reduce, S, 1) == 0);
  CHECK(CommModel::steps(CommKind::all_reduce, 8) == 14);
  CHECK(CommModel::steps(CommKind::all_gather, 8) == 7);
}

TEST_CASE("a group across nodes gets one ring per NIC and each ring leaves through its own NIC", "[comm]") {
  ClusterConfig c;
  c.nodes = 2;
  c.nics_per_node = 4;
  c.nic_gbps = 100;
  c.nic_kind = LinkKind::omnipath;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const CommModel comm(g, router);
  std::vector<int> gpus(16);
  for (int i = 0; i < 16; ++i) gpus[i] = i;
  const RingSet rings = comm.rings(gpus);
  REQUIRE(rings.rings.size() == 4);
  CHECK(rings.hop_class == HopClass::network);
  CHECK(rings.bytes_per_s == Approx(12.5e9 * achievable_fraction(LinkKind::omnipath)));
  // Ring 1 visits each node starting at its second GPU and leaves from its first.
  const std::vector<int>& r1 = rings.rings[1];
  CHECK(r1.front() == 1);
  CHECK(r1[7] == 0);
  CHECK(r1[8] == 9);
  CHECK(r1[15] == 8);
  // Two GPUs, one per node: one ring; a send pays the Simple base and one network hop.
  const std::vector<int> pair = {0, 8};
  CHECK(comm.rings(pair).rings.size() == 1);
  const PathParams send = comm.path(0, 8);
  CHECK(send.hop_class == HopClass::network);
  const int simple = static_cast<int>(Protocol::simple), network = static_cast<int>(HopClass::network);
  CHECK(comm.send_tail(send) == comm.nccl().base_ns[simple] + comm.nccl().hop_ns[network][simple] + send.latency_ns);
}

TEST_CASE("a double binary tree takes 2 (log2 nodes + chain) steps and wins for small all-reduces across nodes", "[comm]") {
  ClusterConfig c;
  c.nodes = 16;
  c.gpus_per_node = 2;
  c.nics_per_node = 1;
  c.nic_gbps = 200;
  c.nic_kind = LinkKind::infiniband;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  std::vector<int> gpus(32);
  for (int i = 0; i < 32; ++i) gpus[i] = i;
  const CommModel automatic(g, router);
  const RingSet rings = automatic.rings(gpus);
  REQUIRE(rings.members_per_node == 2);
  REQUIRE(rings.nodes() == 16);
  CHECK(CommModel::tree_steps(rings) == 2 * (4 + 1));
  CHECK(CommModel::tree_applies(CommKind::all_reduce, rings));
  CHECK_FALSE(CommModel::tree_applies(CommKind::all_gather, rings));
  // 62 ring steps against 10: the tree is the faster estimate for a small message.
  CHECK(automatic.cost(CommKind::all_reduce, 64 * 1024, rings).algorithm == Algorithm::tree);
  // No tree for an all-gather: hierarchical (15 + 1 steps) beats the ring's 31.
  CHECK(automatic.cost(CommKind::all_gather, 64 * 1024, rings).algorithm == Algorithm::hierarchical);
  // Forced: one flow each way per tree edge and per chain link, two trees, one channel.
  const CommModel tree(g, router, std::nullopt, Algorithm::tree);
  const CollectiveCost cost = tree.cost(CommKind::all_reduce, 1 << 30, rings);
  CHECK(cost.algorithm == Algorithm::tree);
  std::vector<HopFlow> hops;
  lower_collective(CommKind::all_reduce, 1 << 30, rings, cost, hops);
  CHECK(hops.size() == 2u * (2 * 15 + 2 * 16));
  CHECK_THROWS_AS(parse_algorithm("butterfly", "cluster.nccl_algorithm"), InputError);
}

TEST_CASE("all-to-all sends S/n between every pair at once and a broadcast ring has no hop back", "[comm]") {
  ClusterConfig c;  // one 8 x A100 node
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const CommModel comm(g, router);
  const std::vector<int> gpus = {0, 1, 2, 3, 4, 5, 6, 7};
  const RingSet rings = comm.rings(gpus);
  const double S = 1 << 30;
  std::vector<HopFlow> hops;
  const CollectiveCost a2a = comm.cost(CommKind::all_to_all, S, rings);
  lower_collective(CommKind::all_to_all, S, rings, a2a, hops);
  REQUIRE(hops.size() == 56u);
  CHECK(hops.front().bytes == Approx(S / 8 / a2a.wire_factor));
  CHECK(CommModel::steps(CommKind::all_to_all, 8) == 1);
  const CollectiveCost bcast = comm.cost(CommKind::broadcast, S, rings);
  lower_collective(CommKind::broadcast, S, rings, bcast, hops);
  REQUIRE(hops.size() == 7u);
  CHECK(hops.back().dst_gpu == 7);
  CHECK(CommModel::bytes_per_hop(CommKind::broadcast, S, 8) == S);
}

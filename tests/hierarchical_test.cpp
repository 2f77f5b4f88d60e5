// Hierarchical collectives as worked examples on 4 nodes x 8 A100 with 8 x 200 Gb/s InfiniBand
// (one 32-port leaf): a reduce-scatter inside each node over NVLink (234 GB/s effective), an
// all-reduce of each local rank's 1/8 shard across the 4 nodes, GPU i of every node on NIC i
// (23.75 GB/s effective), an all-gather inside each node; the phases run one after another. And
// the automatic choice by size on 32 such nodes with one NIC each.
#include <catch2/catch.hpp>

#include <numeric>

#include "sim/base/error.hpp"
#include "sim/network/collective_bench.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/network/transfers.hpp"
#include "topologies/builders.hpp"

using namespace dtsim;

namespace {

ClusterConfig four_nodes() {
  ClusterConfig c;
  c.nodes = 4;
  c.nics_per_node = 8;
  c.nic_gbps = 200;
  return c;
}

std::vector<int> first_gpus(int n) {
  std::vector<int> gpus(n);
  std::iota(gpus.begin(), gpus.end(), 0);
  return gpus;
}

constexpr double kNvlink = 300e9 * 0.78;  // A100 NVLink x achievable fraction
constexpr double kNic = 25e9 * 0.95;      // 200 Gb/s InfiniBand x achievable fraction

}  // namespace

TEST_CASE("hierarchical all-reduce: intra-node reduce-scatter then NIC all-reduce of shards then all-gather", "[comm][hierarchical]") {
  const ClusterGraph g = build_cluster(four_nodes());
  const Router router(g);
  const CommModel comm(g, router, Protocol::simple, Algorithm::hierarchical);
  const RingSet rings = comm.rings(first_gpus(32));
  REQUIRE(CommModel::hierarchical_applies(CommKind::all_reduce, rings));
  CHECK_FALSE(CommModel::hierarchical_applies(CommKind::all_to_all, rings));
  // Every GPU's NVLink and every NIC carries one flow of its phase.
  CHECK(rings.intra.bytes_per_s == Approx(kNvlink));
  CHECK(rings.intra.hop_class == HopClass::nvlink);
  CHECK(rings.inter.bytes_per_s == Approx(kNic));
  CHECK(rings.inter.hop_class == HopClass::network);

  const double S = 1 << 30;
  const CollectiveCost cost = comm.cost(CommKind::all_reduce, S, rings);
  REQUIRE(cost.algorithm == Algorithm::hierarchical);
  REQUIRE(cost.phases == 3);
  // Phase tails: base + steps x (hop + route latency) + steps x one 4 MiB slice at the phase's rate.
  const int simple = static_cast<int>(Protocol::simple);
  const double slice = CommModel::kSimpleSliceBytes;
  auto tail = [&](int steps, HopClass c, const PhaseShape& shape) {
    const NcclProfile& nccl = comm.nccl();
    return 1e-9 * (nccl.base_ns[simple] + steps * (nccl.hop_ns[static_cast<int>(c)][simple] + shape.latency_ns)) +
           steps * slice / shape.bytes_per_s;
  };
  const double rs_tail = tail(7, HopClass::nvlink, rings.intra), ar_tail = tail(6, HopClass::network, rings.inter);
  CHECK(ns_to_seconds(cost.phase_tail_ns[0]) == Approx(rs_tail).margin(1e-9));  // 0.18 ms
  CHECK(ns_to_seconds(cost.phase_tail_ns[1]) == Approx(ar_tail).margin(1e-9));  // 1.19 ms
  CHECK(cost.phase_tail_ns[2] == cost.phase_tail_ns[0]);
  // Bandwidth: 7/8 S over NVLink (4.01 ms), 2 x 3/4 x S/8 over the NIC (8.48 ms), 7/8 S again.
  const double rs = 7.0 / 8 * S / kNvlink, ar = 2.0 * 3 / 4 * S / 8 / kNic;
  CHECK(rs == Approx(4.0146e-3).epsilon(1e-3));
  CHECK(ar == Approx(8.4771e-3).epsilon(1e-3));
  const double expected = 2 * (rs + rs_tail) + ar + ar_tail;  // 18.06 ms
  CHECK(expected == Approx(18.06e-3).epsilon(1e-3));
  CHECK(ns_to_seconds(cost.estimate_ns) == Approx(expected).epsilon(1e-6));

  // Lowered: 32 intra hops, 32 inter hops (8 rings over 4 nodes), 32 intra hops.
  std::vector<HopFlow> hops;
  lower_collective(CommKind::all_reduce, S, rings, cost, hops);
  REQUIRE(hops.size() == 96u);
  CHECK(hops[0].phase == 0);
  CHECK(hops[0].bytes == Approx(7.0 / 8 * S));
  const HopFlow& across = hops[32];  // local rank 0 of node 0 to local rank 0 of node 1, on NIC 0
  CHECK(across.phase == 1);
  CHECK(across.src_gpu == 0);
  CHECK(across.dst_gpu == 8);
  CHECK(across.bytes == Approx(2.0 * 3 / 4 * S / 8));
  CHECK(hops[95].phase == 2);

  // On the flow network, on an idle cluster, the phases take what the estimate says.
  const std::vector<CollectivePoint> sim =
      sweep_collective(g, CommKind::all_reduce, 32, {S}, Protocol::simple, Algorithm::hierarchical);
  CHECK(sim.front().algorithm == Algorithm::hierarchical);
  CHECK(sim.front().channels == 8);
  CHECK(sim.front().time_s == Approx(expected).epsilon(1e-6));
}

TEST_CASE("the automatic choice takes the tree for small, hierarchical for mid and ring for huge all-reduces", "[comm][hierarchical]") {
  // 32 nodes x 8 A100 with one 200 Gb/s NIC each, all 256 GPUs, protocols chosen too.
  ClusterConfig c = four_nodes();
  c.nodes = 32;
  c.nics_per_node = 1;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const CommModel comm(g, router);
  const RingSet rings = comm.rings(first_gpus(256));
  // The 8 shard rings across the nodes share each node's one NIC: 1/8 of it each.
  CHECK(rings.inter.bytes_per_s == Approx(kNic / 8));
  auto estimate_ms = [&](Algorithm a, double bytes) {
    return 1e3 * ns_to_seconds(CommModel(g, router, std::nullopt, a).cost(CommKind::all_reduce, bytes, rings).estimate_ns);
  };
  // 64 KiB: the tree's 2 (5 + 7) steps (0.22 ms) against 62 + 14 for hierarchical with three
  // launches (0.60 ms) and the ring's 510 (3.7 ms).
  const double small = 64 * 1024;
  CHECK(estimate_ms(Algorithm::tree, small) == Approx(0.2175).epsilon(1e-3));
  CHECK(estimate_ms(Algorithm::hierarchical, small) == Approx(0.6041).epsilon(1e-3));
  CHECK(estimate_ms(Algorithm::ring, small) == Approx(3.713).epsilon(1e-3));
  CHECK(comm.cost(CommKind::all_reduce, small, rings).algorithm == Algorithm::tree);
  // 256 MiB: the ring's 510 steps cost 5.4 ms on top of 2 x 255/256 S through the NIC, the tree
  // moves 4 half-shares at 0.75 efficiency; hierarchical puts 2 x 31/32 S through the NIC after
  // and before two NVLink phases: 26.3 ms against the ring's 29.3 and the tree's 32.4.
  const double mid = 256.0 * 1024 * 1024;
  CHECK(estimate_ms(Algorithm::hierarchical, mid) == Approx(26.32).epsilon(1e-3));
  CHECK(estimate_ms(Algorithm::ring, mid) == Approx(29.27).epsilon(1e-3));
  CHECK(estimate_ms(Algorithm::tree, mid) == Approx(32.44).epsilon(1e-3));
  const CollectiveCost chosen = comm.cost(CommKind::all_reduce, mid, rings);
  CHECK(chosen.algorithm == Algorithm::hierarchical);
  CHECK(chosen.protocol == Protocol::ll128);
  // The flows, eight of them through every NIC at once, take what the estimate says.
  const CollectivePoint p = sweep_collective(g, CommKind::all_reduce, 256, {mid}, std::nullopt).front();
  CHECK(p.algorithm == Algorithm::hierarchical);
  CHECK(1e3 * p.time_s == Approx(26.32).epsilon(1e-3));
  // 4 GiB: bandwidth decides, and the ring crosses NVLink and the NIC at the same time:
  // 389.5 ms against 408.8 ms hierarchical.
  const double huge = 4.0 * (1 << 30);
  CHECK(estimate_ms(Algorithm::ring, huge) == Approx(389.5).epsilon(1e-3));
  CHECK(estimate_ms(Algorithm::hierarchical, huge) == Approx(408.8).epsilon(1e-3));
  CHECK(comm.cost(CommKind::all_reduce, huge, rings).algorithm == Algorithm::ring);
  // Reduce-scatter and all-gather run hierarchical in two phases; all-to-all never.
  const CollectiveCost rs = CommModel(g, router, std::nullopt, Algorithm::hierarchical).cost(CommKind::reduce_scatter, mid, rings);
  CHECK(rs.algorithm == Algorithm::hierarchical);
  CHECK(rs.phases == 2);
  CHECK(comm.cost(CommKind::all_to_all, mid, rings).algorithm == Algorithm::ring);
  CHECK(parse_algorithm("hierarchical", "cluster.nccl_algorithm") == Algorithm::hierarchical);
  CHECK_THROWS_WITH(parse_algorithm("butterfly", "--algo"), Catch::Contains("hierarchical"));
}

TEST_CASE("hierarchical all-gather gathers the shards across nodes first and reduce-scatter last", "[comm][hierarchical]") {
  const ClusterGraph g = build_cluster(four_nodes());
  const Router router(g);
  const CommModel comm(g, router, Protocol::simple, Algorithm::hierarchical);
  const RingSet rings = comm.rings(first_gpus(32));
  const double S = 1 << 30;
  const auto gather = CommModel::hierarchical_phases(CommKind::all_gather, S, rings);
  REQUIRE(gather.size() == 2);
  CHECK_FALSE(gather[0].intra);
  CHECK(gather[0].bytes == S / 8);
  CHECK(gather[0].n == 4);
  CHECK(gather[1].intra);
  CHECK(gather[1].bytes == S);
  const auto scatter = CommModel::hierarchical_phases(CommKind::reduce_scatter, S, rings);
  REQUIRE(scatter.size() == 2);
  CHECK(scatter[0].intra);
  CHECK_FALSE(scatter[1].intra);
  // All-gather: 3/4 x S/8 across (4.24 ms) + 7/8 S inside (4.01 ms) + the two tails.
  const CollectiveCost cost = comm.cost(CommKind::all_gather, S, rings);
  const double bandwidth = 3.0 / 4 * S / 8 / kNic + 7.0 / 8 * S / kNvlink;
  CHECK(ns_to_seconds(cost.estimate_ns) == Approx(bandwidth + ns_to_seconds(cost.tail_ns)).epsilon(1e-6));
  const std::vector<CollectivePoint> sim =
      sweep_collective(g, CommKind::all_gather, 32, {S}, Protocol::simple, Algorithm::hierarchical);
  CHECK(sim.front().time_s == Approx(ns_to_seconds(cost.estimate_ns)).epsilon(1e-6));
  // A group inside one node has no hierarchy: the forced algorithm falls back to the ring.
  const RingSet one_node = comm.rings(first_gpus(8));
  CHECK_FALSE(CommModel::hierarchical_applies(CommKind::all_reduce, one_node));
  CHECK(comm.cost(CommKind::all_reduce, S, one_node).algorithm == Algorithm::ring);
}

TEST_CASE("a phase starts only when the previous phase's flows and tail are done and shares links with other traffic", "[comm][hierarchical]") {
  const ClusterGraph g = build_cluster(four_nodes());
  const Router router(g);
  const CommModel comm(g, router, Protocol::simple, Algorithm::hierarchical);
  const RingSet rings = comm.rings(first_gpus(32));
  const double S = 1 << 30;
  const CollectiveCost cost = comm.cost(CommKind::all_reduce, S, rings);
  std::vector<HopFlow> hops;
  lower_collective(CommKind::all_reduce, S, rings, cost, hops);
  auto run = [&](bool with_send) {
    Transfers net(g, router);
    net.start(0, hops, cost.tails(), 0);
    // A send of 2 x 3/4 x S/8 from GPU 0 to GPU 8 (on NIC 0) at the same time: the NVLink phase
    // does not see it; in the NIC phase both get half of NIC 0.
    if (with_send) net.start(0, {HopFlow{0, 8, 2.0 * 3 / 4 * S / 8}}, TimeNs{0}, 1);
    std::vector<FinishedTransfer> done;
    TimeNs end = 0;
    while (done.size() < (with_send ? 2u : 1u)) net.collect(std::max<TimeNs>(net.next_event(), 0), done);
    for (const FinishedTransfer& f : done)
      if (f.tag == 0) end = f.end_ns;
    return ns_to_seconds(end);
  };
  const double alone = run(false), shared = run(true);
  CHECK(alone == Approx(ns_to_seconds(cost.estimate_ns)).epsilon(1e-6));
  // The send runs alone on NIC 0 during the 4.1 ms first phase, so 4.1 ms x 23.75 GB/s of it is
  // gone when the NIC phase starts; the rest it shares equally with the shard ring's flow.
  const double ar = 2.0 * 3 / 4 * S / 8 / kNic;
  const double phase1 = ns_to_seconds(cost.phase_tail_ns[0]) + 7.0 / 8 * S / kNvlink;
  const double send_left = std::max(0.0, ar - phase1);  // of the send's time at the full rate
  CHECK(shared - alone == Approx(send_left).epsilon(1e-3));
}

// NVLS (NVLink SHARP) against its closed forms: where it applies, the bytes each GPU's link
// carries, the latency and rate of its estimate, the flow it lowers to, and refusals; NCCL
// 2.27's rules unless a test names another release.
#include <catch2/catch.hpp>

#include "sim/base/error.hpp"
#include "sim/network/collective_bench.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/network/nvls.hpp"
#include "sim/network/transfers.hpp"
#include "topologies/builders.hpp"

using namespace dtsim;

namespace {
ClusterConfig node_of(const char* gpu, int gpus = 8) {
  ClusterConfig c;
  c.gpu = gpu;
  c.gpus_per_node = gpus;
  return c;
}
const NcclProfile& kNccl = find_nccl_profile("2.27", "test");
std::vector<int> first(int n) {
  std::vector<int> g(n);
  for (int i = 0; i < n; ++i) g[i] = i;
  return g;
}
}  // namespace

TEST_CASE("NVLS applies inside an NVSwitch node of NVLink 4+ GPUs, to all-reduce, reduce-scatter and all-gather",
          "[comm][nvls]") {
  const ClusterGraph h100 = build_cluster(node_of("H100-SXM5-80GB"));
  const Router router(h100);
  const CommModel comm(h100, router);
  CHECK(nvls::graph_has_nvls(h100));
  const RingSet eight = comm.rings(first(8));
  CHECK(eight.nvls == NvlsFabric::nvswitch);
  for (CommKind k : {CommKind::all_reduce, CommKind::reduce_scatter, CommKind::all_gather})
    CHECK(nvls::applies(k, eight, kNccl));
  CHECK_FALSE(nvls::applies(CommKind::broadcast, eight, kNccl));
  CHECK_FALSE(nvls::applies(CommKind::all_to_all, eight, kNccl));
  // Two GPUs: NCCL turns NVLS off (src/transport/nvls.cc).
  CHECK_FALSE(nvls::applies(CommKind::all_reduce, comm.rings(first(2)), kNccl));
  // Releases before 2.17 have no NVLS.
  CHECK_FALSE(nvls::applies(CommKind::all_reduce, eight, find_nccl_profile("2.16.5", "test")));
  CHECK(nvls::applies(CommKind::all_reduce, eight, find_nccl_profile("2.17.1", "test")));
  // A100 (NVLink 3): no NVLS; nor across two H100 nodes.
  const ClusterGraph a100 = build_cluster(node_of("A100-SXM4-80GB"));
  const Router a100_router(a100);
  CHECK_FALSE(nvls::graph_has_nvls(a100));
  CHECK(CommModel(a100, a100_router).rings(first(8)).nvls == NvlsFabric::none);
  ClusterConfig two = node_of("H100-SXM5-80GB");
  two.nodes = 2;
  two.nics_per_node = 8;
  const ClusterGraph h100x2 = build_cluster(two);
  const Router router2(h100x2);
  CHECK(CommModel(h100x2, router2).rings(first(16)).nvls == NvlsFabric::none);
}

TEST_CASE("NVLS all-reduce: each link carries S(1 + 1/n) at 0.82 of the ring's rate after base + NVLS latency",
          "[comm][nvls]") {
  const ClusterGraph g = build_cluster(node_of("H200-SXM-141GB"));
  const Router router(g);
  const CommModel comm(g, router, std::nullopt, Algorithm::nvls, kNccl);
  const RingSet rings = comm.rings(first(8));
  const double S = 1 << 30, B = 450e9 * achievable_fraction(LinkKind::nvlink4);
  REQUIRE(rings.bytes_per_s == Approx(B));
  const CollectiveCost c = comm.cost(CommKind::all_reduce, S, rings);
  CHECK(c.algorithm == Algorithm::nvls);
  CHECK(c.protocol == Protocol::simple);
  CHECK(c.wire_factor == Approx(nvls::kWireFactorNvswitch / 1.125));
  const TimeNs tail = kNccl.base_ns[static_cast<int>(Protocol::simple)] + kNccl.nvls_latency_ns + rings.latency_ns;
  CHECK(c.tail_ns == tail);
  CHECK(ns_to_seconds(c.estimate_ns) ==
        Approx(ns_to_seconds(tail) + S * (1 + 1.0 / 8) / (B * nvls::kWireFactorNvswitch)).epsilon(1e-6));
  // Reduce-scatter and all-gather carry S on their busy direction.
  CHECK(nvls::link_bytes(CommKind::reduce_scatter, S, 8, kNccl.nvls_arity) == S);
  CHECK(nvls::link_bytes(CommKind::all_gather, S, 8, kNccl.nvls_arity) == S);
  // At most NCCL_MAX_NVLS_ARITY heads: 72 GPUs of a rack have 32 (each head's link S(1 + 1/32)).
  CHECK(nvls::link_bytes(CommKind::all_reduce, S, 72, kNccl.nvls_arity) == Approx(S * (1 + 1.0 / 32)));
  // The lowering: one flow over the 8 hops through the switch, each carrying S(1 + 1/8) / 0.82.
  std::vector<HopFlow> hops;
  lower_collective(CommKind::all_reduce, S, rings, c, hops);
  REQUIRE(hops.size() == 8);
  for (const HopFlow& h : hops) {
    CHECK(h.chain == 0);
    CHECK(h.bytes == Approx(S * 1.125 / nvls::kWireFactorNvswitch));
  }
  // Simulated (nccl-tests busbw) at 1 GiB: 2(n-1)/n x S / time, above the ring's link-rate ceiling.
  const double busbw =
      sweep_collective(g, CommKind::all_reduce, 8, {S}, std::nullopt, std::nullopt, kNccl).front().busbw_GBps * 1e9;
  CHECK(busbw > B);
  CHECK(busbw == Approx(1.75 * S / ns_to_seconds(c.estimate_ns)).epsilon(1e-3));
}

TEST_CASE("the estimate takes NVLS for large all-reduces of 8 H100s and the ring for reduce-scatter and 4 GPUs",
          "[comm][nvls]") {
  const ClusterGraph g = build_cluster(node_of("H100-SXM5-80GB"));
  const Router router(g);
  const CommModel comm(g, router, std::nullopt, std::nullopt, kNccl);
  const RingSet eight = comm.rings(first(8));
  CHECK(comm.cost(CommKind::all_reduce, 1 << 30, eight).algorithm == Algorithm::nvls);
  // Below ~3 MiB the ring's LL is faster (NCCL 2.27.7 switches at 2 MiB, collectives.csv c0021-c0027).
  CHECK(comm.cost(CommKind::all_reduce, 1 << 20, eight).algorithm == Algorithm::ring);
  CHECK(comm.cost(CommKind::reduce_scatter, 1 << 30, eight).algorithm == Algorithm::ring);
  CHECK(comm.cost(CommKind::all_gather, 1 << 30, eight).algorithm == Algorithm::ring);
  // S(1 + 1/4) / 0.82 = 1.52 S on the link against the ring's 1.5 S.
  CHECK(comm.cost(CommKind::all_reduce, 1 << 30, comm.rings(first(4))).algorithm == Algorithm::ring);
  // A forced protocol other than Simple leaves NVLS out.
  const CommModel ll(g, router, Protocol::ll, std::nullopt, kNccl);
  CHECK(ll.cost(CommKind::all_reduce, 1 << 30, eight).algorithm == Algorithm::ring);
}

TEST_CASE("forcing NVLS is refused where the hardware lacks it", "[comm][nvls]") {
  const ClusterGraph a100 = build_cluster(node_of("A100-SXM4-80GB"));
  const Router router(a100);
  CHECK_THROWS_WITH(CommModel(a100, router, std::nullopt, Algorithm::nvls, kNccl),
                    Catch::Contains("nvls") && Catch::Contains("NVLink 4"));
  const ClusterGraph h100 = build_cluster(node_of("H100-SXM5-80GB"));
  const Router h100_router(h100);
  CHECK_THROWS_WITH(CommModel(h100, h100_router, Protocol::ll, Algorithm::nvls, kNccl), Catch::Contains("simple"));
  CHECK_THROWS_WITH(CommModel(h100, h100_router, std::nullopt, Algorithm::nvls, find_nccl_profile("2.12", "test")),
                    Catch::Contains("2.8 - 2.16 has no NVLS") && Catch::Contains("2.17"));
  // A group NVLS cannot serve: the ring in a training step, an error in dtsim collective.
  const CommModel forced(h100, h100_router, std::nullopt, Algorithm::nvls, kNccl);
  CHECK(forced.cost(CommKind::all_reduce, 1 << 20, forced.rings(first(2))).algorithm == Algorithm::ring);
  CHECK_THROWS_WITH(sweep_collective(h100, CommKind::all_reduce, 2, {1 << 20}, std::nullopt, Algorithm::nvls, kNccl),
                    Catch::Contains("--algo nvls") && Catch::Contains("3 or more GPUs"));
  CHECK(parse_algorithm("nvls", "--algo") == Algorithm::nvls);
  CHECK_THROWS_WITH(parse_algorithm("sharp", "--algo"), Catch::Contains("nvls"));
}

TEST_CASE("NVLS tree: NVLS inside each node while each head's share crosses the nodes, in one phase", "[comm][nvls]") {
  ClusterConfig c = node_of("H100-SXM5-80GB");
  c.nodes = 4;
  c.nics_per_node = 8;
  c.nic_gbps = 400;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const CommModel comm(g, router, std::nullopt, Algorithm::nvls_tree, kNccl);
  const RingSet rings = comm.rings(first(32));
  REQUIRE(rings.nvls_intra == NvlsFabric::nvswitch);
  CHECK(rings.nvls == NvlsFabric::none);  // not one domain
  CHECK(nvls::tree_applies(CommKind::all_reduce, rings, kNccl));
  CHECK_FALSE(nvls::tree_applies(CommKind::reduce_scatter, rings, kNccl));
  CHECK_FALSE(nvls::tree_applies(CommKind::all_reduce, rings, find_nccl_profile("2.17", "test")));
  const double S = 1 << 30;
  const CollectiveCost cost = comm.cost(CommKind::all_reduce, S, rings);
  REQUIRE(cost.algorithm == Algorithm::nvls_tree);
  CHECK(cost.phases == 1);
  CHECK(cost.nvls_heads == 8);
  // Inside: S(1 + 1/8) per NVLink at 0.82 of the ring's rate; across: a head's NIC sends 2 S/8
  // (an inner node of 4); the slower of the two, after base + NVLS latency + 2 log2(4) network steps.
  const double intra_s = S * 1.125 / (rings.intra.bytes_per_s * nvls::kWireFactorNvswitch);
  const double inter_s = 2 * S / 8 / rings.inter.bytes_per_s;
  const int simple = static_cast<int>(Protocol::simple), network = static_cast<int>(HopClass::network);
  const TimeNs tail = kNccl.base_ns[simple] + kNccl.nvls_latency_ns + rings.intra.latency_ns +
                      4 * (kNccl.hop_ns[network][simple] + rings.inter.latency_ns);
  CHECK(cost.tail_ns == tail);
  CHECK(ns_to_seconds(cost.estimate_ns) == Approx(ns_to_seconds(tail) + std::max(intra_s, inter_s)).epsilon(1e-6));
  CHECK(inter_s > intra_s);  // 8 x 400 Gb/s NICs bind, not NVLink
  // Lowered: 4 NVLS chains of 8 hops, and per head one chain of 3 node pairs each way.
  std::vector<HopFlow> hops;
  lower_collective(CommKind::all_reduce, S, rings, cost, hops);
  CHECK(hops.size() == 4 * 8 + 8 * 3 * 2);
  // Simulated, the flows take what the estimate says (no other traffic).
  const CollectivePoint p =
      sweep_collective(g, CommKind::all_reduce, 32, {S}, std::nullopt, Algorithm::nvls_tree, kNccl).front();
  CHECK(p.time_s == Approx(ns_to_seconds(cost.estimate_ns)).epsilon(1e-3));
}

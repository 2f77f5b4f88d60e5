// Collective and send times against their closed forms on simple topologies.
#include <catch2/catch.hpp>

#include "sim/comm_model.hpp"
#include "topologies/builders.hpp"

using namespace dtsim;

TEST_CASE("ring all-reduce on an NVSwitch node: 2(n-1)/n S/B + 2(n-1) alpha", "[comm]") {
  ClusterConfig c;  // one 8 x A100 node
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const CommModel comm(g, router);
  const std::vector<int> gpus = {0, 1, 2, 3, 4, 5, 6, 7};
  const PathParams p = comm.ring(gpus);
  CHECK(p.bytes_per_s == Approx(300e9 * achievable_fraction(LinkKind::nvlink3)));
  const RouteInfo& hop = router.route(0, 1);
  CHECK(p.alpha_ns == hop.latency_ns + CommModel::kStepLatencyNs);
  const double S = 1 << 30;
  const int n = 8;
  const double expected_s = 2.0 * (n - 1) / n * S / p.bytes_per_s + 2 * (n - 1) * p.alpha_ns * 1e-9;
  CHECK(ns_to_seconds(CommModel::collective_time(CommKind::all_reduce, S, n, p)) == Approx(expected_s).epsilon(1e-6));
  // Bus bandwidth (nccl-tests) of the model at 1 GiB is the effective link rate less latency.
  const double busbw = S / expected_s * 2.0 * (n - 1) / n;
  CHECK(busbw < p.bytes_per_s);
  CHECK(busbw > 0.95 * p.bytes_per_s);
}

TEST_CASE("reduce-scatter and all-gather take half an all-reduce's bandwidth term", "[comm]") {
  const PathParams p{100e9, 0};
  const double S = 8e9;
  const TimeNs ar = CommModel::collective_time(CommKind::all_reduce, S, 4, p);
  CHECK(CommModel::collective_time(CommKind::reduce_scatter, S, 4, p) * 2 == ar);
  CHECK(CommModel::collective_time(CommKind::all_gather, S, 4, p) * 2 == ar);
  CHECK(CommModel::collective_time(CommKind::all_reduce, S, 1, p) == 0);
}

TEST_CASE("a cross-node ring is limited by the NIC", "[comm]") {
  ClusterConfig c;
  c.nodes = 2;
  c.nics_per_node = 4;
  c.nic_gbps = 100;
  c.nic_kind = LinkKind::omnipath;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  const CommModel comm(g, router);
  const std::vector<int> gpus = {0, 8};
  CHECK(comm.ring(gpus).bytes_per_s == Approx(12.5e9 * achievable_fraction(LinkKind::omnipath)));
  const PathParams send = comm.path(0, 8);
  const double S = 1e8;
  CHECK(ns_to_seconds(CommModel::collective_time(CommKind::send, S, 2, send)) ==
        Approx(S / send.bytes_per_s + send.alpha_ns * 1e-9).epsilon(1e-6));
}

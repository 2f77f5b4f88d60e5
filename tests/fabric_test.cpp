// Fabrics: a rail-optimized cluster keeps same-rail traffic on its rail switch and sends the rest
// over the spine; named NICs set the link kind and rate; explicit spines spread routes by the
// ECMP hash, and where two flows hash onto one spine link they share it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <string>

#include "sim/base/error.hpp"
#include "sim/network/collective_bench.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/network/transfers.hpp"
#include "topologies/builders.hpp"
#include "topologies/routing.hpp"

using namespace dtsim;

namespace {

std::string path_of(const ClusterGraph& g, const RouteInfo& r) {
  std::string out = g.device(g.link_source(r.links.front())).name;
  for (int id : r.links) out += " > " + g.device(g.link_target(id)).name;
  return out;
}

}  // namespace

TEST_CASE("a rail-optimized fabric puts NIC k of every node on rail k", "[topology]") {
  ClusterConfig c;
  c.nodes = 4;
  c.nics_per_node = 8;
  c.nic_gbps = 200;
  c.fabric = Fabric::rail;
  c.oversubscription = 2;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  // GPU 3 of node 0 to GPU 3 of node 2: one rail switch between the NICs.
  CHECK(path_of(g, router.route(3, 2 * 8 + 3)) == "node0.gpu3 > node0.nic3 > rail3 > node2.nic3 > node2.gpu3");
  // The rail's spine uplink carries the nodes' NIC rate over the oversubscription.
  bool found = false;
  for (int id = 0; id < g.num_links(); ++id)
    if (g.device(g.link_source(id)).name == "rail3" && g.device(g.link_target(id)).name == "spine0") {
      CHECK(g.link(id).bytes_per_s == Approx(4 * 200e9 / 8 / 2));
      found = true;
    }
  CHECK(found);
  CHECK(parse_fabric("rail", "cluster.fabric") == Fabric::rail);
  CHECK_THROWS_AS(parse_fabric("dragonfly", "cluster.fabric"), InputError);
}

TEST_CASE("named NICs give the InfiniBand, Omni-Path and RoCE generations", "[topology]") {
  CHECK(parse_nic_preset("hdr", "cluster.nic").gbps == 200);
  CHECK(parse_nic_preset("ndr", "cluster.nic").kind == LinkKind::infiniband);
  CHECK(parse_nic_preset("xdr", "cluster.nic").gbps == 800);
  CHECK(parse_nic_preset("opa100", "cluster.nic").kind == LinkKind::omnipath);
  CHECK(parse_nic_preset("roce400", "cluster.nic").kind == LinkKind::ethernet);
  CHECK(parse_nic_preset("roce400", "cluster.nic").gbps == 400);
  CHECK_THROWS_WITH(parse_nic_preset("fddi", "cluster.nic"), Catch::Contains("edr, hdr, ndr, xdr"));
}

namespace {

// 8 nodes x 8 A100, 8 x 200 Gb/s NICs each: 64 NICs on two 32-port leaves (nodes 0-3, 4-7).
ClusterConfig two_leaves(int spines, double oversubscription) {
  ClusterConfig c;
  c.nodes = 8;
  c.nics_per_node = 8;
  c.nic_gbps = 200;
  c.spines = spines;
  c.oversubscription = oversubscription;
  return c;
}

// The spine a route crosses ("" if none).
std::string spine_of(const ClusterGraph& g, const RouteInfo& r) {
  for (int id : r.links) {
    const std::string& name = g.device(g.link_target(id)).name;
    if (name.rfind("spine", 0) == 0) return name;
  }
  return "";
}

}  // namespace

TEST_CASE("explicit spines: each leaf has one uplink per spine and routes spread over them by the ECMP hash", "[topology][ecmp]") {
  const ClusterGraph g = build_cluster(two_leaves(4, 1));
  const Router router(g);
  // Each leaf's 32 NIC ports of 25 GB/s go up over 4 links of 200 GB/s.
  int uplinks = 0;
  for (int id = 0; id < g.num_links(); ++id)
    if (g.device(g.link_source(id)).name == "leaf0" && g.device(g.link_target(id)).name.rfind("spine", 0) == 0) {
      CHECK(g.link(id).bytes_per_s == Approx(32 * 25e9 / 4));
      ++uplinks;
    }
  CHECK(uplinks == 4);
  CHECK(path_of(g, router.route(0, 32)) ==
        "node0.gpu0 > node0.nic0 > leaf0 > spine3 > leaf1 > node4.nic0 > node4.gpu0");
  // ecmp_hash(src, 32, leaf1) mod 4 for the GPUs of node 0.
  const char* expected[] = {"spine3", "spine2", "spine0", "spine3", "spine1", "spine3", "spine0", "spine1"};
  for (int src = 0; src < 8; ++src) CHECK(spine_of(g, router.route(src, 32)) == expected[src]);
  // Over all 32 x 32 GPU pairs from leaf 0 to leaf 1: 249, 242, 252 and 281 routes per spine.
  std::map<std::string, int> per_spine;
  for (int src = 0; src < 32; ++src)
    for (int dst = 32; dst < 64; ++dst) ++per_spine[spine_of(g, router.route(src, dst))];
  CHECK(per_spine == std::map<std::string, int>{{"spine0", 249}, {"spine1", 242}, {"spine2", 252}, {"spine3", 281}});
  // Same leaf: no spine. The collapsed default has one spine0 for every pair.
  CHECK(spine_of(g, router.route(0, 8)) == "");
  const ClusterGraph collapsed = build_cluster(two_leaves(0, 1));
  CHECK(spine_of(collapsed, Router(collapsed).route(7, 32)) == "spine0");
  // Deterministic: a second router asked in the opposite order gives the same routes.
  const Router again(g);
  for (int src = 31; src >= 0; --src)
    for (int dst = 63; dst >= 32; --dst) CHECK(again.route(src, dst).links == router.route(src, dst).links);
  CHECK_THROWS_WITH(build_cluster(two_leaves(-1, 1)), Catch::Contains("cluster.spines"));
  ClusterConfig clos = two_leaves(4, 1);
  clos.fabric = Fabric::clos3;
  CHECK_THROWS_WITH(build_cluster(clos), Catch::Contains("cluster.spines"));
}

TEST_CASE("explicit spines over rails: each rail's uplink is split over the spines and routes keep to a rail", "[topology][ecmp]") {
  ClusterConfig c;
  c.nodes = 4;
  c.nics_per_node = 8;
  c.nic_gbps = 200;
  c.fabric = Fabric::rail;
  c.spines = 2;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  int uplinks = 0;
  for (int id = 0; id < g.num_links(); ++id)
    if (g.device(g.link_source(id)).name == "rail3" && g.device(g.link_target(id)).name.rfind("spine", 0) == 0) {
      CHECK(g.link(id).bytes_per_s == Approx(4 * 200e9 / 8 / 2));
      ++uplinks;
    }
  CHECK(uplinks == 2);
  // Routes still stay on one rail: to another rail's GPU through the node to the NIC on the
  // destination's rail (NCCL's PXN), which is as short as the way over a spine and faster.
  CHECK(path_of(g, router.route(0, 9)) == "node0.gpu0 > node0.nvswitch > node0.gpu1 > node0.nic1 > rail1 > node1.nic1 > node1.gpu1");
}

TEST_CASE("an ECMP collision on a spine link halves two ring hops and slows the all-reduce by one hop's time", "[comm][ecmp]") {
  // Oversubscription 2 and 16 spines: each leaf uplink carries 32 x 25 / 2 / 16 = 25 GB/s, one
  // NIC's rate. Collapsed, the one 400 GB/s uplink per leaf never limits.
  const ClusterGraph ecmp = build_cluster(two_leaves(16, 2)), ideal = build_cluster(two_leaves(0, 2));
  const Router router(ecmp), ideal_router(ideal);
  std::vector<int> gpus(64);
  std::iota(gpus.begin(), gpus.end(), 0);
  const CommModel comm(ecmp, router, Protocol::simple, Algorithm::ring), ideal_comm(ideal, ideal_router, Protocol::simple, Algorithm::ring);
  const RingSet rings = comm.rings(gpus);
  REQUIRE(rings.rings.size() == 8);
  // The 8 rings leave leaf 0 from node 3's GPU (c + 7) % 8 to node 4's GPU c: channels 1 and 3
  // hash onto spine0; from node 7 back to node 0, channels 0 and 7 both onto spine14.
  const char* up[] = {"spine15", "spine0", "spine8", "spine0", "spine5", "spine10", "spine14", "spine3"};
  const char* back[] = {"spine14", "spine0", "spine10", "spine3", "spine6", "spine5", "spine2", "spine14"};
  for (int c = 0; c < 8; ++c) {
    CHECK(spine_of(ecmp, router.route(24 + (c + 7) % 8, 32 + c)) == up[c]);
    CHECK(spine_of(ecmp, router.route(56 + (c + 7) % 8, c)) == back[c]);
  }
  // Two flows on a 23.75 GB/s effective spine link: the rings' shared rate is half a NIC.
  const double nic = 25e9 * achievable_fraction(LinkKind::infiniband);
  CHECK(rings.bytes_per_s == Approx(nic / 2));
  CHECK(ideal_comm.rings(gpus).bytes_per_s == Approx(nic));
  // The flows alone (no tail): each hop carries 2 x 63/64 x S/8; the colliding hops take twice
  // as long as on the ideal fabric.
  const double S = 1 << 30, hop = 2.0 * 63 / 64 * S / 8;
  auto flow_time = [&](const ClusterGraph& g, const Router& r, const CommModel& m) {
    const RingSet set = m.rings(gpus);
    std::vector<HopFlow> hops;
    lower_collective(CommKind::all_reduce, S, set, m.cost(CommKind::all_reduce, S, set), hops);
    Transfers net(g, r);
    net.start(0, hops, TimeNs{0}, 0);
    std::vector<FinishedTransfer> done;
    while (done.empty()) net.collect(std::max<TimeNs>(net.next_event(), 0), done);
    return ns_to_seconds(done.front().end_ns);
  };
  const double ideal_s = flow_time(ideal, ideal_router, ideal_comm), ecmp_s = flow_time(ecmp, router, comm);
  CHECK(ideal_s == Approx(hop / nic).epsilon(1e-6));  // 10.9 ms
  CHECK(ecmp_s == Approx(2 * hop / nic).epsilon(1e-6));
  // dtsim collective: slower by that hop time plus the longer pipeline fill of the tail.
  const double t_ecmp = sweep_collective(ecmp, CommKind::all_reduce, 64, {S}, Protocol::simple, Algorithm::ring).front().time_s;
  const double t_ideal = sweep_collective(ideal, CommKind::all_reduce, 64, {S}, Protocol::simple, Algorithm::ring).front().time_s;
  const double tails = ns_to_seconds(comm.cost(CommKind::all_reduce, S, rings).tail_ns -
                                     ideal_comm.cost(CommKind::all_reduce, S, ideal_comm.rings(gpus)).tail_ns);
  CHECK(t_ecmp - t_ideal == Approx(hop / nic + tails).epsilon(1e-4));
  CHECK(t_ecmp > 1.5 * t_ideal);
}

TEST_CASE("a NIC between its GPU and its switch passes traffic on: one chain, its least rate, every link counted",
          "[topology][comm]") {
  // 2 nodes x 2 GPUs, one NIC per GPU: GPU -> NIC (PCIe) -> switch is a series chain, and so is
  // the way back. Node 0's first NIC port runs at a tenth of its rate (a degraded cable), far
  // below the PCIe link the chain starts with. Two sends from node 0 to node 1, one per GPU,
  // each alone on its links: the first at the degraded port's rate, the second at its route's
  // slowest link's.
  ClusterConfig c;
  c.nodes = 2;
  c.gpus_per_node = 2;
  c.nics_per_node = 2;
  c.nic_gbps = 400;
  ClusterGraph g = build_cluster(c);
  const std::string port = g.device(g.link_target(Router(g).route(0, 2).links[1])).name;  // GPU > NIC > here
  scale_link_pair(g, "node0.nic0", port, 0.1);
  const Router router(g);
  auto slowest = [&](int src) {
    double rate = std::numeric_limits<double>::infinity();
    for (int id : router.route(src, src + 2).links)
      rate = std::min(rate, g.link(id).bytes_per_s * achievable_fraction(g.link(id).kind));
    return rate;
  };
  CHECK(slowest(0) == Approx(0.1 * 400e9 / 8 * achievable_fraction(c.nic_kind)));
  CHECK(slowest(1) > 2 * slowest(0));
  const double bytes = 1e9;
  Transfers net(g, router);
  net.start(0, {HopFlow{0, 2, bytes}}, TimeNs{0}, 0);
  net.start(0, {HopFlow{1, 3, bytes}}, TimeNs{0}, 1);
  std::vector<FinishedTransfer> done;
  while (done.size() < 2) net.collect(std::max<TimeNs>(net.next_event(), 0), done);
  for (const FinishedTransfer& f : done) CHECK(ns_to_seconds(f.end_ns) == Approx(bytes / slowest(f.tag)).epsilon(1e-6));
  // Every link of each route carried the send's bytes and was busy for its whole time; links no
  // send crossed carried nothing.
  std::vector<int> crossed(g.num_links(), 0);
  for (int src : {0, 1})
    for (int id : router.route(src, src + 2).links) {
      CAPTURE(path_of(g, router.route(src, src + 2)), id);
      crossed[id] = 1;
      CHECK(net.link_bytes(id) == Approx(bytes));
      CHECK(net.link_busy_seconds(id) == Approx(bytes / slowest(src)).epsilon(1e-6));
    }
  for (int id = 0; id < g.num_links(); ++id)
    if (!crossed[id]) CHECK(net.link_bytes(id) == 0);
}

TEST_CASE("a non-blocking fat tree's leaf uplinks never bind: NIC ports, NVLink and tapered uplinks do",
          "[topology][comm]") {
  // 8 nodes of 8 GPUs with 8 NICs each: 64 NIC ports, two leaves of 32, one spine vertex.
  ClusterConfig c;
  c.nodes = 8;
  c.gpus_per_node = 8;
  c.nics_per_node = 8;
  c.nic_gbps = 400;
  for (double taper : {1.0, 2.0}) {
    CAPTURE(taper);
    c.oversubscription = taper;
    const ClusterGraph g = build_cluster(c);
    const Router router(g);
    const Transfers net(g, router);
    int uplinks = 0;
    for (int id = 0; id < g.num_links(); ++id) {
      const std::string from = g.device(g.link_source(id)).name, to = g.device(g.link_target(id)).name;
      CAPTURE(from, to);
      const bool leaf_spine = (from.rfind("leaf", 0) == 0 && to.rfind("spine", 0) == 0) ||
                              (from.rfind("spine", 0) == 0 && to.rfind("leaf", 0) == 0);
      uplinks += leaf_spine;
      CHECK(net.never_binds(id) == (leaf_spine && taper == 1.0));
    }
    CHECK(uplinks == 4);
  }
  // The rates stay max-min fair: the first GPUs of two nodes on leaf 0 send to one GPU on leaf 1
  // and share the chain into it (its NIC port in series with the NIC's PCIe link, bounded by
  // nothing but itself); a third send, on another rail, has its links alone.
  c.oversubscription = 1.0;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  Transfers net(g, router);
  double slowest = std::numeric_limits<double>::infinity();  // the same on all three routes
  for (int id : router.route(0, 32).links)
    slowest = std::min(slowest, g.link(id).bytes_per_s * achievable_fraction(g.link(id).kind));
  const double bytes = 1e9;
  net.start(0, {HopFlow{0, 32, bytes}}, TimeNs{0}, 0);
  net.start(0, {HopFlow{8, 32, bytes}}, TimeNs{0}, 1);
  net.start(0, {HopFlow{1, 33, bytes}}, TimeNs{0}, 2);
  std::vector<FinishedTransfer> done;
  while (done.size() < 3) net.collect(std::max<TimeNs>(net.next_event(), 0), done);
  for (const FinishedTransfer& f : done) {
    CAPTURE(f.tag);
    CHECK(ns_to_seconds(f.end_ns) == Approx((f.tag == 2 ? 1 : 2) * bytes / slowest).epsilon(1e-6));
  }
  // The links that never bind still count what crossed them: leaf 0's uplink and leaf 1's
  // downlink carried all three sends, busy until the last ended; leaf 1's uplink carried none.
  const auto link_between = [&](const std::string& from, const std::string& to) {
    for (int id = 0; id < g.num_links(); ++id)
      if (g.device(g.link_source(id)).name == from && g.device(g.link_target(id)).name == to) return id;
    FAIL("no link " << from << " -> " << to);
    return -1;
  };
  for (const int id : {link_between("leaf0", "spine0"), link_between("spine0", "leaf1")}) {
    REQUIRE(net.never_binds(id));
    CHECK(net.link_bytes(id) == Approx(3 * bytes));
    CHECK(net.link_busy_seconds(id) == Approx(2 * bytes / slowest).epsilon(1e-6));
  }
  CHECK(net.link_bytes(link_between("leaf1", "spine0")) == 0);
  CHECK(net.link_busy_seconds(link_between("leaf1", "spine0")) == 0);
}

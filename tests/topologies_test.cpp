// Tests of the topologies library: GPU catalog, cluster builders, routing and DOT I/O.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/base/error.hpp"
#include "topologies/builders.hpp"
#include "topologies/dot_io.hpp"
#include "topologies/routing.hpp"

using namespace dtsim;

namespace {

std::vector<std::string> route_devices(const ClusterGraph& g, const RouteInfo& r) {
  std::vector<std::string> names;
  if (r.links.empty()) return names;
  names.push_back(g.device(g.link_source(r.links.front())).name);
  for (int id : r.links) names.push_back(g.device(g.link_target(id)).name);
  return names;
}

bool route_has_kind(const ClusterGraph& g, const RouteInfo& r, LinkKind kind) {
  for (int id : r.links) {
    if (g.link(id).kind == kind) return true;
  }
  return false;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GPU catalog lookups and peak rates", "[topologies]") {
  CHECK(find_gpu("a100-80gb").name == "A100-SXM4-80GB");
  CHECK(find_gpu("H100").name == "H100-SXM5-80GB");
  CHECK(find_gpu("3090").name == "RTX-3090");
  CHECK(find_gpu("rtx3090").name == "RTX-3090");
  CHECK(find_gpu("MI300X").sm_count == 304);
  const GpuSpec& a100 = find_gpu("A100-SXM4-80GB");
  CHECK(a100.memory_bytes == 80 * kGiB);
  CHECK(a100.peak_flops(Precision::bf16) == 312e12);
  CHECK(a100.peak_flops(Precision::tf32) == 156e12);
  CHECK(a100.peak_flops(Precision::fp32) == 19.5e12);
  CHECK_THROWS_AS(a100.peak_flops(Precision::fp8), InputError);
  CHECK(find_gpu("H100").peak_flops(Precision::fp8) == 1979e12);
  CHECK(find_gpu("V100-SXM2-32GB").peak_flops(Precision::tf32) == 15.7e12);  // no TF32: FP32
  CHECK(find_gpu("RTX-2080Ti").bf16_flops == Approx(53.8e12));
  const std::string msg = error_of([] { find_gpu("Z80"); });
  CHECK(msg.find("unknown GPU 'Z80'") != std::string::npos);
  CHECK(msg.find("H200-SXM-141GB") != std::string::npos);
  CHECK(msg.find("RTX-4090") != std::string::npos);
  CHECK(parse_precision("bf16", "model.precision") == Precision::bf16);
  CHECK(precision_name(Precision::tf32) == "tf32");
  CHECK(precision_bytes(Precision::fp8) == 2);
  CHECK(precision_bytes(Precision::fp32) == 4);
  CHECK(error_of([] { parse_precision("fp4", "model.precision"); }).find("model.precision") !=
        std::string::npos);
}

TEST_CASE("8x A100 NVSwitch node", "[topologies]") {
  const ClusterGraph g = build_cluster(ClusterConfig{});
  CHECK(boost::num_vertices(g.graph()) == 9);
  CHECK(g.num_links() == 16);
  CHECK(g.num_gpus() == 8);
  CHECK(g.num_nodes() == 1);
  for (int i = 0; i < g.num_links(); ++i) {
    CHECK(g.link(i).bytes_per_s == 300e9);
    CHECK(g.link(i).kind == LinkKind::nvlink3);
  }
  Router router(g);
  const RouteInfo& r = router.route(0, 5);
  CHECK(r.links.size() == 2);
  CHECK(route_devices(g, r) == std::vector<std::string>{"node0.gpu0", "node0.nvswitch", "node0.gpu5"});
  CHECK(r.bottleneck_bytes_per_s == 300e9);
  CHECK(&router.route(0, 5) == &r);  // cached
  CHECK(router.route(3, 3).links.empty());
  CHECK(std::isinf(router.route(3, 3).bottleneck_bytes_per_s));
  router.check_connected();

  ClusterConfig h100;
  h100.gpu = "H100";
  const ClusterGraph gh = build_cluster(h100);
  CHECK(gh.link(0).bytes_per_s == 450e9);
  CHECK(gh.link(0).kind == LinkKind::nvlink4);
}

TEST_CASE("multi-node NVSwitch cluster", "[topologies]") {
  ClusterConfig c;
  c.nodes = 4;
  c.nics_per_node = 2;
  c.nic_gbps = 200;
  const ClusterGraph g = build_cluster(c);
  // 4 x (8 GPUs + nvswitch + 2 NICs) + 1 leaf.
  CHECK(boost::num_vertices(g.graph()) == 4 * 11 + 1);
  CHECK(g.num_gpus() == 32);
  CHECK(g.num_nodes() == 4);
  CHECK(g.node_of_gpu(9) == 1);
  // Directed: 4 x (8 NVLink + 8 GPU-NIC PCIe + 2 NIC-leaf) duplex.
  CHECK(g.num_links() == 2 * 4 * 18);
  Router router(g);
  const RouteInfo& r = router.route(0, 8);
  CHECK(route_devices(g, r) ==
        std::vector<std::string>{"node0.gpu0", "node0.nic0", "leaf0", "node1.nic0", "node1.gpu0"});
  CHECK(r.bottleneck_bytes_per_s == 25e9);
  // Inside a node the route stays on NVLink even where a NIC is shared.
  CHECK(router.route(0, 2).links.size() == 2);
  CHECK(route_has_kind(g, router.route(0, 2), LinkKind::nvlink3));
  router.check_connected();
}

TEST_CASE("large cluster gets a spine with oversubscribed uplinks", "[topologies]") {
  ClusterConfig c;
  c.nodes = 8;
  c.nics_per_node = 8;
  c.oversubscription = 2;
  const ClusterGraph g = build_cluster(c);  // 64 NICs: 2 leaves + spine0
  Router router(g);
  const RouteInfo& r = router.route(0, 63);
  const auto names = route_devices(g, r);
  CHECK(std::find(names.begin(), names.end(), "spine0") != names.end());
  CHECK(r.bottleneck_bytes_per_s == 12.5e9);
  double uplink = 0;
  for (int i = 0; i < g.num_links(); ++i) {
    if (g.device(g.link_target(i)).name == "spine0") uplink = g.link(i).bytes_per_s;
  }
  CHECK(uplink == 32 * 12.5e9 / 2);
}

TEST_CASE("routes searched on several threads at once are the routes one thread finds", "[topologies][concurrency]") {
  // Explicit spines, so the ECMP choice runs too; four plain threads ask for overlapping pairs.
  ClusterConfig c;
  c.nodes = 16;
  c.nics_per_node = 8;
  c.spines = 4;
  const ClusterGraph g = build_cluster(c);
  const int n = g.num_gpus();
  auto pair_of = [n](int i) { return std::pair<int, int>{(i * 37) % n, (i * 101 + 7) % n}; };
  const int pairs = 2000;
  Router alone(g);
  std::vector<std::vector<int>> expected;
  for (int i = 0; i < pairs; ++i) expected.push_back(alone.route(pair_of(i).first, pair_of(i).second).links);
  Router shared(g);
  std::vector<std::vector<std::vector<int>>> found(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < pairs; ++i) {
        const int k = (i + t * pairs / 4) % pairs;  // each thread starts elsewhere
        found[t].push_back(shared.route(pair_of(k).first, pair_of(k).second).links);
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < pairs; ++i) CHECK(found[t][i] == expected[(i + t * pairs / 4) % pairs]);
  // One stored route per pair, whichever thread searched it first.
  CHECK(&shared.route(pair_of(5).first, pair_of(5).second) == &shared.route(pair_of(5).first, pair_of(5).second));
}

TEST_CASE("PCIe boxes with and without P2P", "[topologies]") {
  ClusterConfig c;
  c.gpu = "L40S";
  c.node_kind = NodeKind::pcie;
  c.gpus_per_node = 4;
  {
    const ClusterGraph g = build_cluster(c);
    Router router(g);
    CHECK(route_devices(g, router.route(0, 1)) ==
          std::vector<std::string>{"node0.gpu0", "node0.pcie0", "node0.gpu1"});
    CHECK(route_devices(g, router.route(0, 2)) ==
          std::vector<std::string>{"node0.gpu0", "node0.pcie0", "node0.cpu0", "node0.pcie1", "node0.gpu2"});
    CHECK(router.route(0, 1).bottleneck_bytes_per_s == 31.5e9);
  }
  c.p2p = false;
  {
    const ClusterGraph g = build_cluster(c);
    Router router(g);
    CHECK(route_devices(g, router.route(0, 1)) ==
          std::vector<std::string>{"node0.gpu0", "node0.cpu0", "node0.gpu1"});
  }
  c.p2p = true;
  c.cpu_sockets = 2;
  {
    const ClusterGraph g = build_cluster(c);
    Router router(g);
    const RouteInfo& r = router.route(0, 3);
    CHECK(route_has_kind(g, r, LinkKind::upi));
    CHECK(r.bottleneck_bytes_per_s == 31.5e9);
    CHECK(route_devices(g, r)[2] == "node0.cpu0");
    CHECK(route_devices(g, r)[3] == "node0.cpu1");
  }
  c.nodes = 2;
  c.nics_per_node = 1;
  {
    const ClusterGraph g = build_cluster(c);
    Router router(g);
    const RouteInfo& r = router.route(0, 4);
    CHECK(route_devices(g, r) == std::vector<std::string>{"node0.gpu0", "node0.pcie0", "node0.nic0", "leaf0",
                                                          "node1.nic0", "node1.pcie0", "node1.gpu0"});
    CHECK(r.bottleneck_bytes_per_s == 12.5e9);
  }
}

TEST_CASE("NVLink-bridged RTX 3090 pairs", "[topologies]") {
  ClusterConfig c;
  c.gpu = "RTX-3090";
  c.node_kind = NodeKind::nvlink_pairs;
  c.gpus_per_node = 4;
  const ClusterGraph g = build_cluster(c);
  Router router(g);
  const RouteInfo& r = router.route(0, 1);
  REQUIRE(r.links.size() == 1);
  CHECK(g.link(r.links[0]).kind == LinkKind::nvlink_bridge);
  CHECK(r.bottleneck_bytes_per_s == 56.25e9);
  CHECK(router.route(1, 2).links.size() == 4);  // gpu1 -> pcie0 -> cpu0 -> pcie1 -> gpu2
}

TEST_CASE("cluster config errors name the key", "[topologies]") {
  ClusterConfig c;
  c.nodes = 2;
  c.nics_per_node = 0;
  CHECK(error_of([&] { build_cluster(c); }).find("cluster.nics_per_node = 0: must be >= 1") !=
        std::string::npos);
  c = ClusterConfig{};
  c.gpu = "RTX-4090";
  const std::string msg = error_of([&] { build_cluster(c); });
  CHECK(msg.find("cluster.node_kind") != std::string::npos);
  CHECK(msg.find("pcie") != std::string::npos);
  c = ClusterConfig{};
  c.pcie_gen = 7;
  CHECK(error_of([&] { build_cluster(c); }).find("cluster.pcie_gen") != std::string::npos);
  c = ClusterConfig{};
  c.oversubscription = 0.5;
  CHECK(error_of([&] { build_cluster(c); }).find("cluster.oversubscription") != std::string::npos);
  c = ClusterConfig{};
  c.gpu = "RTX-3090";
  c.node_kind = NodeKind::nvlink_pairs;
  c.gpus_per_node = 3;
  CHECK(error_of([&] { build_cluster(c); }).find("even") != std::string::npos);
  CHECK(parse_node_kind("nvlink_pairs", "cluster.node_kind") == NodeKind::nvlink_pairs);
  CHECK_THROWS_AS(parse_node_kind("torus", "cluster.node_kind"), InputError);
}

TEST_CASE("disconnected graphs are reported with both devices", "[topologies]") {
  ClusterGraph g;
  const VertexId a = g.add_device({"node0.gpu0", DeviceKind::gpu, 0, -1});
  const VertexId b = g.add_device({"node0.gpu1", DeviceKind::gpu, 0, -1});
  const VertexId c = g.add_device({"node1.gpu0", DeviceKind::gpu, 1, -1});
  g.add_duplex_link(a, b, LinkKind::pcie4, 31.5e9, 500);
  g.add_link(b, c, LinkKind::pcie4, 31.5e9, 500);  // one way only
  Router router(g);
  CHECK(router.route(0, 2).links.size() == 2);
  const std::string msg = error_of([&] { router.route(2, 0); });
  CHECK(msg.find("node1.gpu0") != std::string::npos);
  CHECK(msg.find("node0.gpu0") != std::string::npos);
  CHECK(msg.find("disconnected") != std::string::npos);
  CHECK(error_of([&] { router.check_connected(); }).find("node1.gpu0") != std::string::npos);
}

TEST_CASE("DOT round trip", "[topologies]") {
  ClusterConfig c;
  c.nodes = 12;  // node10.* sorts before node2.* by name; GPU order must still follow the file
  c.gpus_per_node = 2;
  c.nic_gbps = 400;
  const ClusterGraph g = build_cluster(c);
  std::ostringstream out;
  write_dot(g, out);
  const ClusterGraph back = read_dot(temp_file("dtsim_roundtrip.dot", out.str()));
  REQUIRE(boost::num_vertices(back.graph()) == boost::num_vertices(g.graph()));
  REQUIRE(back.num_links() == g.num_links());
  REQUIRE(back.num_gpus() == g.num_gpus());
  for (int i = 0; i < g.num_gpus(); ++i) {
    CHECK(back.device(back.gpu(i)).name == g.device(g.gpu(i)).name);
    CHECK(back.node_of_gpu(i) == g.node_of_gpu(i));
  }
  for (std::size_t v = 0; v < boost::num_vertices(g.graph()); ++v) {
    CHECK(back.device(v).name == g.device(v).name);
    CHECK(back.device(v).kind == g.device(v).kind);
    CHECK(back.device(v).node == g.device(v).node);
  }
  // Links may be renumbered; compare them by (source, target).
  std::map<std::pair<std::string, std::string>, Link> links;
  for (int i = 0; i < g.num_links(); ++i) {
    links[{g.device(g.link_source(i)).name, g.device(g.link_target(i)).name}] = g.link(i);
  }
  for (int i = 0; i < back.num_links(); ++i) {
    const Link& orig = links.at({back.device(back.link_source(i)).name, back.device(back.link_target(i)).name});
    CHECK(back.link(i).kind == orig.kind);
    CHECK(back.link(i).bytes_per_s == Approx(orig.bytes_per_s).epsilon(1e-15));
    CHECK(back.link(i).latency_ns == orig.latency_ns);
  }
}

TEST_CASE("bad DOT files", "[topologies]") {
  CHECK(error_of([] { read_dot("/nonexistent/x.dot"); }).find("/nonexistent/x.dot") != std::string::npos);
  const std::string syntax = temp_file("dtsim_syntax.dot", "digraph G { a -> ; }");
  CHECK(error_of([&] { read_dot(syntax); }).find(syntax) != std::string::npos);
  const std::string kind = temp_file("dtsim_kind.dot", R"(digraph G {
  "n0.gpu0" [kind=gpu "node"=0]; "n0.gpu1" [kind=tpu "node"=0];
})");
  const std::string kind_msg = error_of([&] { read_dot(kind); });
  CHECK(kind_msg.find("n0.gpu1") != std::string::npos);
  CHECK(kind_msg.find("tpu") != std::string::npos);
  const std::string bw = temp_file("dtsim_bw.dot", R"(digraph G {
  a [kind=gpu]; b [kind=gpu];
  a -> b [kind=pcie4 latency_ns=500];
})");
  const std::string bw_msg = error_of([&] { read_dot(bw); });
  CHECK(bw_msg.find("bandwidth_GBps") != std::string::npos);
  CHECK(bw_msg.find("'a' -> 'b'") != std::string::npos);
  const std::string order = temp_file("dtsim_order.dot", R"(digraph G {
  // z first: GPUs are numbered in file order, not by name
  z [kind=gpu]; a [kind=gpu];
  z -> a [kind=nvlink_bridge bandwidth_GBps=56.25];
})");
  const ClusterGraph g = read_dot(order);
  CHECK(g.device(g.gpu(0)).name == "z");
  CHECK(g.link(0).bytes_per_s == 56.25e9);
  CHECK(g.link(0).latency_ns == 0);
}

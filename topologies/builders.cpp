// build_cluster: turns a ClusterConfig into a ClusterGraph. Node kinds:
//  - nvswitch: every GPU has one duplex NVLink (all its links together) to one vertex standing for
//    the whole NVSwitch plane (DGX/HGX style).
//  - nvl72: a rack of gpus_per_node GPUs (72 by default), every GPU with one duplex NVLink to one
//    vertex "nodeN.nvlink_switch" (DeviceKind::nvlink_switch) standing for the rack's NVLink
//    switch trays; NICs as for nvswitch nodes (one per GPU by default).
//  - pcie: groups of gpus_per_pcie_switch GPUs under PCIe switches, switches split over the CPU
//    sockets in contiguous halves, sockets joined by UPI. With p2p = false the switches cannot
//    forward GPU-to-GPU traffic; we model that by hanging each GPU directly off its CPU socket (no
//    switch vertex), so every GPU-GPU route runs GPU -> CPU -> GPU.
//  - nvlink_pairs: a pcie box plus an NVLink bridge between GPUs 2k and 2k+1.
// GPU-side PCIe links run at min(cluster.pcie_gen, the GPU's own PCIe gen), x16.
// Multi-node: nics_per_node NICs per node, NIC k wired by PCIe to GPUs i with i % nics == k
// (nvswitch nodes, nvl72 racks) or to PCIe switch k % switches (pcie boxes; CPU socket k % sockets when
// p2p = false). NICs go to leaf switches of kLeafPorts ports (NICs in node-major order); with more
// than one leaf, the spine layer is collapsed into one vertex "spine0" (ideal ECMP): each leaf's
// uplink carries (its NIC ports * NIC rate) / oversubscription per direction. With spines = N > 0
// the spine layer is N vertices "spine0".."spine{N-1}" instead, and every leaf (rail switch) has
// one uplink to each, carrying 1/N of that: the paths between two leaves are then N equal-cost
// ones and the router picks one per (source, destination) GPU pair by its ECMP hash.
// fabric = clos3 (the three tiers of Meta's Llama 3 cluster): the NICs of every gpus_per_tor
// consecutive GPUs go to one top-of-rack vertex "torT"; the ToRs of every pod_gpus GPUs go to one
// vertex "podP" standing for the pod's whole aggregation layer, each ToR uplink carrying all its
// NIC ports (full bisection inside the pod); with more than one pod, every pod has an uplink to
// one vertex "core0" carrying (its NIC ports * NIC rate) / pod_oversubscription. Switch layers
// are collapsed into one vertex each (ideal ECMP), so the graph stays small at 16K GPUs.
#include "topologies/builders.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/base/error.hpp"
#include "topologies/link_catalog.hpp"
#include "sim/base/limits.hpp"

namespace dtsim {
namespace {

const TimeNs kNvlinkLatencyNs = link_fact(LinkKind::nvlink3).latency_ns;
const TimeNs kPcieLatencyNs = link_fact(LinkKind::pcie4).latency_ns;
const TimeNs kUpiLatencyNs = link_fact(LinkKind::upi).latency_ns;
const TimeNs kIbSwitchLatencyNs = link_fact(LinkKind::infiniband).latency_ns;  // also Omni-Path
const TimeNs kEthernetLatencyNs = link_fact(LinkKind::ethernet).latency_ns;
const double kUpiBytesPerS = link_fact(LinkKind::upi).bytes_per_s;
// kLeafPorts (builders.hpp): 32 NIC-facing ports per leaf, half of a 64-port switch.
// Explicit spine switches (cluster.spines): a bound that keeps the graph small.
constexpr int kMaxSpines = 1024;

void require(bool ok, std::string_view key, double value, std::string_view rule) {
  if (!ok) throw InputError(fmt::format("{} = {}: {}", key, value, rule));
}

LinkKind nvlink_kind(const GpuSpec& gpu) {
  constexpr LinkKind kinds[] = {LinkKind::nvlink2, LinkKind::nvlink3, LinkKind::nvlink4,
                                LinkKind::nvlink5};
  if (gpu.nvlink_gen < 2 || gpu.nvlink_gen > 5) {
    throw InputError(fmt::format("GPU '{}': unsupported NVLink generation {}", gpu.name, gpu.nvlink_gen));
  }
  return kinds[gpu.nvlink_gen - 2];
}

void validate(const ClusterConfig& c, const GpuSpec& gpu) {
  require(c.nodes >= 1, "cluster.nodes", c.nodes, "must be >= 1");
  require(c.gpus_per_node >= 1, "cluster.gpus_per_node", c.gpus_per_node, "must be >= 1");
  require(std::int64_t{c.nodes} * c.gpus_per_node <= limits::kMaxGpus, "cluster.nodes", c.nodes,
          fmt::format("with cluster.gpus_per_node = {}: at most {} GPUs can be simulated", c.gpus_per_node,
                      limits::kMaxGpus));
  require(c.nvlink_GBps == 0 || (c.nvlink_GBps >= limits::kMinLinkGBps && c.nvlink_GBps <= limits::kMaxLinkGBps),
          "cluster.nvlink_GBps", c.nvlink_GBps,
          fmt::format("must be 0 (from the GPU catalog) or between {} and {}", limits::kMinLinkGBps,
                      limits::kMaxLinkGBps));
  require(c.pcie_gen >= 3 && c.pcie_gen <= 6, "cluster.pcie_gen", c.pcie_gen, "must be 3, 4, 5 or 6");
  require(c.nic_gbps >= limits::kMinNicGbps && c.nic_gbps <= limits::kMaxNicGbps, "cluster.nic_gbps", c.nic_gbps,
          fmt::format("must be between {} and {}", limits::kMinNicGbps, limits::kMaxNicGbps));
  require(c.oversubscription >= 1 && std::isfinite(c.oversubscription), "cluster.oversubscription",
          c.oversubscription, "must be a finite number >= 1");
  if (c.fabric == Fabric::clos3) {
    require(c.gpus_per_tor >= 1 && c.gpus_per_tor % c.gpus_per_node == 0, "cluster.gpus_per_tor", c.gpus_per_tor,
            fmt::format("must be a positive multiple of cluster.gpus_per_node ({})", c.gpus_per_node));
    require(c.pod_gpus >= 1 && c.pod_gpus % c.gpus_per_tor == 0, "cluster.pod_gpus", c.pod_gpus,
            fmt::format("must be a positive multiple of cluster.gpus_per_tor ({})", c.gpus_per_tor));
    require(c.pod_oversubscription >= 1, "cluster.pod_oversubscription", c.pod_oversubscription, "must be >= 1");
    require(c.spines == 0, "cluster.spines", c.spines, "applies to cluster.fabric = fat_tree or rail; must be 0 for clos3");
  }
  require(c.spines >= 0 && c.spines <= kMaxSpines, "cluster.spines", c.spines,
          fmt::format("must be 0 (one collapsed spine) or 1 .. {} explicit spine switches", kMaxSpines));
  if (c.nodes > 1) {
    require(c.nics_per_node >= 1, "cluster.nics_per_node", c.nics_per_node, "must be >= 1");
    require(std::int64_t{c.nodes} * c.nics_per_node <= limits::kMaxGpus, "cluster.nics_per_node", c.nics_per_node,
            fmt::format("with cluster.nodes = {}: at most {} NICs can be simulated", c.nodes, limits::kMaxGpus));
    if (c.node_kind == NodeKind::nvswitch || c.node_kind == NodeKind::nvl72) {
      require(c.nics_per_node <= c.gpus_per_node, "cluster.nics_per_node", c.nics_per_node,
              fmt::format("must be <= cluster.gpus_per_node ({}) for {} nodes", c.gpus_per_node,
                          node_kind_name(c.node_kind)));
    }
  }
  if (c.nic_kind != LinkKind::infiniband && c.nic_kind != LinkKind::omnipath &&
      c.nic_kind != LinkKind::ethernet) {
    throw InputError(fmt::format("cluster.nic_kind = {}: must be infiniband, omnipath or ethernet",
                                 link_kind_name(c.nic_kind)));
  }
  if (c.node_kind == NodeKind::nvl72) {
    if (gpu.nvlink_gen < 5 || gpu.nvlink_bridge_only)
      throw InputError(fmt::format("cluster.node_kind = nvl72: cluster.gpu = '{}' has {}; an NVL72 rack needs NVLink 5 "
                                   "GPUs (GB200, B200); use node_kind = nvswitch for HGX nodes",
                                   gpu.name, gpu.nvlink_gen > 0 ? fmt::format("NVLink {}", gpu.nvlink_gen) : "no NVLink"));
    require(c.gpus_per_node % Nvl72Rack::kGpusPerTray == 0 && c.gpus_per_node <= Nvl72Rack::kGpus,
            "cluster.gpus_per_node", c.gpus_per_node,
            fmt::format("an nvl72 rack holds {} GPUs, or any multiple of a compute tray's {} up to {} (e.g. 36, 64)",
                        Nvl72Rack::kGpus, Nvl72Rack::kGpusPerTray, Nvl72Rack::kGpus));
  }
  if (c.node_kind == NodeKind::pcie || c.node_kind == NodeKind::nvlink_pairs) {
    require(c.gpus_per_pcie_switch >= 1, "cluster.gpus_per_pcie_switch", c.gpus_per_pcie_switch, "must be >= 1");
    require(c.cpu_sockets == 1 || c.cpu_sockets == 2, "cluster.cpu_sockets", c.cpu_sockets, "must be 1 or 2");
  }
  if (c.node_kind == NodeKind::nvswitch && (gpu.nvlink_gen == 0 || gpu.nvlink_bridge_only)) {
    throw InputError(fmt::format(
        "cluster.node_kind = nvswitch: GPU '{}' has no NVSwitch NVLink; use node_kind = pcie{}",
        gpu.name, gpu.nvlink_gen > 0 ? " or nvlink_pairs" : ""));
  }
  if (c.node_kind == NodeKind::nvlink_pairs) {
    if (gpu.nvlink_gen == 0) {
      throw InputError(fmt::format(
          "cluster.node_kind = nvlink_pairs: GPU '{}' has no NVLink; use node_kind = pcie", gpu.name));
    }
    require(c.gpus_per_node % 2 == 0, "cluster.gpus_per_node", c.gpus_per_node,
            "must be even for node_kind = nvlink_pairs");
  }
}

class Builder {
 public:
  Builder(const ClusterConfig& c, const GpuSpec& gpu)
      : c_(c), gpu_(gpu),
        gpu_pcie_gen_(std::min(c.pcie_gen, gpu.pcie_gen)),
        nvlink_bytes_(c.nvlink_GBps > 0 ? c.nvlink_GBps * 1e9 : gpu.nvlink_bytes_per_s) {}

  ClusterGraph build() {
    std::vector<std::vector<VertexId>> node_nics;
    for (int n = 0; n < c_.nodes; ++n) node_nics.push_back(build_node(n));
    if (c_.nodes > 1) build_fabric(node_nics);
    return std::move(g_);
  }

 private:
  // GPUs on an NVLink switch vertex: nvswitch nodes and nvl72 racks.
  bool switched() const { return c_.node_kind == NodeKind::nvswitch || c_.node_kind == NodeKind::nvl72; }
  VertexId add(std::string name, DeviceKind kind, int node) {
    return g_.add_device(Device{std::move(name), kind, node, -1});
  }
  void pcie_link(VertexId a, VertexId b, int gen) {
    g_.add_duplex_link(a, b, pcie_kind(gen), pcie_bytes_per_s(gen), kPcieLatencyNs);
  }

  // Builds node n's GPUs, internal fabric and NICs (NICs only when nodes > 1); returns the NICs.
  std::vector<VertexId> build_node(int n) {
    std::vector<VertexId> gpus;
    for (int i = 0; i < c_.gpus_per_node; ++i) {
      gpus.push_back(add(fmt::format("node{}.gpu{}", n, i), DeviceKind::gpu, n));
    }
    // Vertices the NICs attach to, NIC k to attach[k % size] (nvswitch: to every GPU i ≡ k).
    std::vector<VertexId> attach;
    if (switched()) {
      const VertexId sw = c_.node_kind == NodeKind::nvl72
                              ? add(fmt::format("node{}.nvlink_switch", n), DeviceKind::nvlink_switch, n)
                              : add(fmt::format("node{}.nvswitch", n), DeviceKind::nvswitch, n);
      for (VertexId v : gpus) g_.add_duplex_link(v, sw, nvlink_kind(gpu_), nvlink_bytes_, kNvlinkLatencyNs);
    } else {
      attach = build_pcie_box(n, gpus);
    }
    if (c_.node_kind == NodeKind::nvlink_pairs) {
      for (int i = 0; i + 1 < c_.gpus_per_node; i += 2) {
        g_.add_duplex_link(gpus[i], gpus[i + 1], LinkKind::nvlink_bridge, nvlink_bytes_, kNvlinkLatencyNs);
      }
    }
    std::vector<VertexId> nics;
    if (c_.nodes == 1) return nics;
    for (int k = 0; k < c_.nics_per_node; ++k) {
      const VertexId nic = add(fmt::format("node{}.nic{}", n, k), DeviceKind::nic, n);
      nics.push_back(nic);
      if (switched()) {
        // An HGX/DGX baseboard's GPU-NIC switches (an NVL72 tray's) run at the GPU's own PCIe generation.
        for (int i = k; i < c_.gpus_per_node; i += c_.nics_per_node) pcie_link(gpus[i], nic, gpu_.pcie_gen);
      } else {
        pcie_link(attach[k % attach.size()], nic, c_.pcie_gen);
      }
    }
    return nics;
  }

  // PCIe switches (or, without p2p, none) under CPU sockets; returns where NICs attach.
  std::vector<VertexId> build_pcie_box(int n, const std::vector<VertexId>& gpus) {
    std::vector<VertexId> cpus;
    for (int s = 0; s < c_.cpu_sockets; ++s) {
      cpus.push_back(add(fmt::format("node{}.cpu{}", n, s), DeviceKind::cpu, n));
    }
    if (c_.cpu_sockets == 2) g_.add_duplex_link(cpus[0], cpus[1], LinkKind::upi, kUpiBytesPerS, kUpiLatencyNs);
    const int groups = (c_.gpus_per_node + c_.gpus_per_pcie_switch - 1) / c_.gpus_per_pcie_switch;
    auto socket_of_group = [&](int k) { return cpus[k * c_.cpu_sockets / groups]; };
    if (!c_.p2p) {
      for (int i = 0; i < c_.gpus_per_node; ++i) {
        pcie_link(gpus[i], socket_of_group(i / c_.gpus_per_pcie_switch), gpu_pcie_gen_);
      }
      return cpus;
    }
    std::vector<VertexId> switches;
    for (int k = 0; k < groups; ++k) {
      const VertexId sw = add(fmt::format("node{}.pcie{}", n, k), DeviceKind::pcie_switch, n);
      switches.push_back(sw);
      pcie_link(sw, socket_of_group(k), c_.pcie_gen);
    }
    for (int i = 0; i < c_.gpus_per_node; ++i) {
      pcie_link(gpus[i], switches[i / c_.gpus_per_pcie_switch], gpu_pcie_gen_);
    }
    return switches;
  }

  void build_fabric(const std::vector<std::vector<VertexId>>& node_nics) {
    if (c_.fabric == Fabric::clos3) return build_clos3(node_nics);
    const double nic_bytes = c_.nic_gbps * 1e9 / 8;
    const TimeNs latency = c_.nic_kind == LinkKind::ethernet ? kEthernetLatencyNs : kIbSwitchLatencyNs;
    if (c_.fabric == Fabric::rail) {
      // Rail k: one (aggregated, non-blocking) switch for NIC k of every node.
      const std::vector<VertexId> spine = add_spines();
      for (int k = 0; k < c_.nics_per_node; ++k) {
        const VertexId rail = add(fmt::format("rail{}", k), DeviceKind::network_switch, -1);
        for (const auto& nics : node_nics) g_.add_duplex_link(nics[k], rail, c_.nic_kind, nic_bytes, latency);
        uplinks(rail, spine, c_.nodes * nic_bytes / c_.oversubscription, latency);
      }
      return;
    }
    // NICs fill leaves in node-major order; an NVL72 rack's NICs take leaves of their own (a rack
    // of 72 would otherwise share a leaf with the next, and routes between the two racks would
    // detour over one rack's NVLink to the few NICs on the shared leaf).
    std::vector<int> leaf_of;  // per NIC, in node-major order
    int current = 0, taken = 0;  // the leaf being filled and its ports taken
    for (const auto& nics : node_nics) {
      if (c_.node_kind == NodeKind::nvl72 && taken > 0) ++current, taken = 0;
      for (std::size_t k = 0; k < nics.size(); ++k, ++taken) {
        if (taken == kLeafPorts) ++current, taken = 0;
        leaf_of.push_back(current);
      }
    }
    const int leaves = leaf_of.back() + 1;
    std::vector<VertexId> leaf;
    for (int l = 0; l < leaves; ++l) leaf.push_back(add(fmt::format("leaf{}", l), DeviceKind::network_switch, -1));
    std::vector<int> ports(leaves, 0);
    std::size_t j = 0;
    for (const auto& nics : node_nics)
      for (VertexId nic : nics) {
        g_.add_duplex_link(nic, leaf[leaf_of[j]], c_.nic_kind, nic_bytes, latency);
        ++ports[leaf_of[j++]];
      }
    if (leaves == 1) return;
    const std::vector<VertexId> spine = add_spines();
    for (int l = 0; l < leaves; ++l) uplinks(leaf[l], spine, ports[l] * nic_bytes / c_.oversubscription, latency);
  }

  // One collapsed spine, or cluster.spines explicit ones.
  std::vector<VertexId> add_spines() {
    std::vector<VertexId> spine;
    for (int s = 0; s < std::max(1, c_.spines); ++s)
      spine.push_back(add(fmt::format("spine{}", s), DeviceKind::network_switch, -1));
    return spine;
  }
  // A switch's uplink capacity split evenly over one duplex link to each spine.
  void uplinks(VertexId from, const std::vector<VertexId>& spine, double bytes_per_s, TimeNs latency) {
    for (VertexId s : spine)
      g_.add_duplex_link(from, s, c_.nic_kind, bytes_per_s / static_cast<double>(spine.size()), latency);
  }

  // NICs -> ToR -> pod -> core; each uplink carries the NIC ports below it (the pod's divided by
  // pod_oversubscription).
  void build_clos3(const std::vector<std::vector<VertexId>>& node_nics) {
    const double port = c_.nic_gbps * 1e9 / 8;
    const TimeNs latency = c_.nic_kind == LinkKind::ethernet ? kEthernetLatencyNs : kIbSwitchLatencyNs;
    const int nodes_per_tor = c_.gpus_per_tor / c_.gpus_per_node;
    const int tors_per_pod = c_.pod_gpus / c_.gpus_per_tor;
    const int tors = (c_.nodes + nodes_per_tor - 1) / nodes_per_tor;
    const int pods = (tors + tors_per_pod - 1) / tors_per_pod;
    const VertexId core = pods > 1 ? add("core0", DeviceKind::network_switch, -1) : VertexId{};
    std::vector<VertexId> pod;
    if (tors > 1) {
      for (int p = 0; p < pods; ++p) pod.push_back(add(fmt::format("pod{}", p), DeviceKind::network_switch, -1));
    }
    std::vector<double> pod_ports(pods, 0.0);
    for (int t = 0; t < tors; ++t) {
      const VertexId tor = add(fmt::format("tor{}", t), DeviceKind::network_switch, -1);
      int ports = 0;
      for (int n = t * nodes_per_tor; n < std::min(c_.nodes, (t + 1) * nodes_per_tor); ++n) {
        for (VertexId nic : node_nics[n]) g_.add_duplex_link(nic, tor, c_.nic_kind, port, latency);
        ports += static_cast<int>(node_nics[n].size());
      }
      if (tors == 1) return;
      g_.add_duplex_link(tor, pod[t / tors_per_pod], c_.nic_kind, ports * port, latency);
      pod_ports[t / tors_per_pod] += ports;
    }
    if (pods == 1) return;
    for (int p = 0; p < pods; ++p)
      g_.add_duplex_link(pod[p], core, c_.nic_kind, pod_ports[p] * port / c_.pod_oversubscription, latency);
  }

  const ClusterConfig& c_;
  const GpuSpec& gpu_;
  const int gpu_pcie_gen_;
  const double nvlink_bytes_;
  ClusterGraph g_;
};

}  // namespace

NicPreset parse_nic_preset(std::string_view text, std::string_view key) {
  static const std::pair<std::string_view, NicPreset> presets[] = {
      {"edr", {LinkKind::infiniband, 100}},   {"hdr", {LinkKind::infiniband, 200}},
      {"ndr", {LinkKind::infiniband, 400}},   {"xdr", {LinkKind::infiniband, 800}},
      {"opa100", {LinkKind::omnipath, 100}},  {"roce100", {LinkKind::ethernet, 100}},
      {"roce200", {LinkKind::ethernet, 200}}, {"roce400", {LinkKind::ethernet, 400}}};
  for (const auto& [name, preset] : presets)
    if (name == text) return preset;
  throw InputError(fmt::format("{} = '{}': valid values are edr, hdr, ndr, xdr (InfiniBand), opa100 (Omni-Path), "
                               "roce100, roce200, roce400", key, text));
}

NodeKind parse_node_kind(std::string_view text, std::string_view key) {
  for (NodeKind k : {NodeKind::nvswitch, NodeKind::pcie, NodeKind::nvlink_pairs, NodeKind::nvl72}) {
    if (node_kind_name(k) == text) return k;
  }
  throw InputError(
      fmt::format("{} = '{}': unknown node kind; valid values: nvswitch, pcie, nvlink_pairs, nvl72", key, text));
}

std::string_view node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::nvswitch: return "nvswitch";
    case NodeKind::pcie: return "pcie";
    case NodeKind::nvlink_pairs: return "nvlink_pairs";
    case NodeKind::nvl72: return "nvl72";
  }
  return "?";
}

Fabric parse_fabric(std::string_view text, std::string_view key) {
  for (Fabric f : {Fabric::fat_tree, Fabric::rail, Fabric::clos3}) {
    if (fabric_name(f) == text) return f;
  }
  throw InputError(fmt::format("{} = '{}': unknown fabric; valid values: fat_tree, rail, clos3", key, text));
}

std::string_view fabric_name(Fabric f) {
  return f == Fabric::fat_tree ? "fat_tree" : f == Fabric::rail ? "rail" : "clos3";
}

ClusterGraph build_cluster(const ClusterConfig& config) {
  const GpuSpec& gpu = find_gpu(config.gpu);
  validate(config, gpu);
  return Builder(config, gpu).build();
}

}  // namespace dtsim

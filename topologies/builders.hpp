// Cluster builders from parameters: 8-GPU NVSwitch nodes (DGX/HGX), NVL72 racks (one NVLink
// domain of up to 72 GPUs), PCIe boxes, NVLink-bridged pairs, and many nodes joined through NICs
// into a two-level fat tree, rails or a three-tier Clos. A "node" is one NVLink domain: a server,
// or a whole NVL72 rack.
#pragma once
#include <string>

#include "topologies/cluster_graph.hpp"
#include "topologies/gpu_catalog.hpp"

namespace dtsim {

enum class NodeKind { nvswitch, pcie, nvlink_pairs, nvl72 };
NodeKind parse_node_kind(std::string_view text, std::string_view key);
std::string_view node_kind_name(NodeKind k);

// An NVL72 rack (NVIDIA GB200 NVL72: 72 Blackwell GPUs in 18 compute trays of 4, one NVLink 5
// domain through 9 NVLink switch trays, 1.8 TB/s of NVLink per GPU, i.e. 900 GB/s each way; one
// ConnectX-7 400 Gb/s InfiniBand NIC per GPU for the scale-out fabric). A scenario that sets
// node_kind = nvl72 and leaves these keys out gets these values; gpus_per_node may also be any
// multiple of the tray's 4 GPUs up to 72 (NVL36 racks, or the 64 GPUs of 16 trays jobs often use).
struct Nvl72Rack {
  static constexpr int kGpus = 72;
  static constexpr int kGpusPerTray = 4;
  static constexpr double kNicGbps = 400;
  static constexpr LinkKind kNicKind = LinkKind::infiniband;
};

// fat_tree: 32-port leaves under one collapsed spine (or cluster.spines explicit ones); rail: NIC k of every node on rail switch k
// (rail-optimized, as DGX SuperPODs), rails joined by a spine; clos3: top-of-rack switches, one
// aggregation layer per pod (full bisection inside the pod) and a core joining the pods.
enum class Fabric { fat_tree, rail, clos3 };
// fat_tree: NIC-facing ports per leaf switch (NICs fill leaves in node-major order).
constexpr int kLeafPorts = 32;
Fabric parse_fabric(std::string_view text, std::string_view key);
std::string_view fabric_name(Fabric f);

// Named NICs: InfiniBand EDR/HDR/NDR/XDR (100/200/400/800 Gb/s), Omni-Path 100, RoCE 100/200/400.
struct NicPreset {
  LinkKind kind;
  double gbps;
};
NicPreset parse_nic_preset(std::string_view text, std::string_view key);

struct ClusterConfig {
  std::string gpu = "A100-SXM4-80GB";  // GPU catalog name
  int nodes = 1;                      // >= 1
  int gpus_per_node = 8;              // >= 1
  NodeKind node_kind = NodeKind::nvswitch;
  double nvlink_GBps = 0;             // per GPU per direction; 0 = from the GPU catalog
  int pcie_gen = 4;                   // 3..6, PCIe links inside a PCIe box / to NICs
  int gpus_per_pcie_switch = 2;       // pcie boxes: GPUs sharing one PCIe switch
  int cpu_sockets = 1;                // pcie boxes: 1 or 2 (switches split over sockets, UPI between)
  bool p2p = true;                    // pcie boxes: false = GPU-GPU traffic bounces through the CPU
  int nics_per_node = 1;              // multi-node only, >= 1 (nvswitch, nvl72: at most gpus_per_node)
  double nic_gbps = 100;              // per NIC, Gbit/s
  LinkKind nic_kind = LinkKind::infiniband;  // infiniband | omnipath | ethernet
  double oversubscription = 1.0;      // leaf (or rail) to spine taper, >= 1
  Fabric fabric = Fabric::fat_tree;
  // fat_tree / rail: 0 = the spine layer collapsed into one vertex (ideal ECMP); N >= 1 = N
  // explicit spine switches, every leaf (rail) with one uplink to each carrying 1/N of its share,
  // routes spread over them by the router's ECMP hash.
  int spines = 0;
  int gpus_per_tor = 16;              // clos3: GPUs whose NICs share a top-of-rack switch
  int pod_gpus = 3072;                // clos3: GPUs per pod (a multiple of gpus_per_tor)
  double pod_oversubscription = 1.0;  // clos3: pod-to-core taper, >= 1
};

// Builds the cluster; throws InputError for impossible values (naming the cluster.* key).
ClusterGraph build_cluster(const ClusterConfig& config);

}  // namespace dtsim

// The cluster as a directed Boost graph: vertices are devices (GPU, NVSwitch, PCIe switch, CPU,
// NIC, network switch), edges are directed links with a kind, bandwidth per direction and
// latency. GPUs are numbered 0..num_gpus()-1 in the order they were added (the rank order).
#pragma once
#include <boost/graph/adjacency_list.hpp>
#include <string>
#include <string_view>
#include <memory>
#include <vector>

#include "sim/base/units.hpp"

namespace dtsim {

// nvswitch: the NVSwitches of one HGX/DGX baseboard; nvlink_switch: the NVLink switch tier of a
// rack (NVL72: switch trays joining the GPUs of several hosts into one NVLink domain).
enum class DeviceKind { gpu, nvswitch, pcie_switch, cpu, nic, network_switch, nvlink_switch };
enum class LinkKind {
  nvlink2, nvlink3, nvlink4, nvlink5, nvlink_bridge, pcie3, pcie4, pcie5, pcie6, upi,
  infiniband, omnipath, ethernet
};

std::string_view device_kind_name(DeviceKind k);
std::string_view link_kind_name(LinkKind k);
// Parse the names above; throw InputError naming `what` and the valid names.
DeviceKind parse_device_kind(std::string_view text, std::string_view what);
LinkKind parse_link_kind(std::string_view text, std::string_view what);

struct Device {
  std::string name;             // unique, e.g. "node3.gpu5", "node3.nic1", "spine0"
  DeviceKind kind = DeviceKind::gpu;
  int node = -1;                // node index for devices inside a node, -1 for fabric switches
  int gpu_index = -1;           // 0..num_gpus-1 for GPUs, -1 otherwise
};

struct Link {
  LinkKind kind = LinkKind::pcie4;
  double bytes_per_s = 0;       // per direction
  TimeNs latency_ns = 0;
  int id = -1;                  // dense index 0..num_links()-1
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Device, Link>;
using VertexId = Graph::vertex_descriptor;

class ClusterGraph {
 public:
  ClusterGraph();
  // A copy re-points the link table at the new graph's edges (edge descriptors point into the
  // graph they came from). boost::adjacency_list has no move constructor, so the graph lives on
  // the heap: a move takes it whole, and its edge descriptors stay valid (a 16K-GPU cluster was
  // copied twice on its way out of the builder).
  ClusterGraph(const ClusterGraph& other);
  ClusterGraph(ClusterGraph&& other) noexcept = default;
  ClusterGraph& operator=(const ClusterGraph& other);
  ClusterGraph& operator=(ClusterGraph&& other) noexcept = default;

  VertexId add_device(Device device);          // GPUs get gpu_index in insertion order
  // Adds the two directed edges a->b and b->a with the same properties.
  void add_duplex_link(VertexId a, VertexId b, LinkKind kind, double bytes_per_s, TimeNs latency_ns);
  void add_link(VertexId from, VertexId to, LinkKind kind, double bytes_per_s, TimeNs latency_ns);

  int num_gpus() const { return static_cast<int>(gpus_.size()); }
  VertexId gpu(int gpu_index) const { return gpus_.at(gpu_index); }
  int node_of_gpu(int gpu_index) const { return (*graph_)[gpus_.at(gpu_index)].node; }
  int num_nodes() const;                       // 1 + largest node index of any device
  int num_links() const { return static_cast<int>(links_.size()); }
  const Link& link(int id) const { return (*graph_)[links_.at(id)]; }
  // Multiplies the bandwidth of link `id` by factor (> 0).
  void scale_link(int id, double factor) { (*graph_)[links_.at(id)].bytes_per_s *= factor; }
  VertexId link_source(int id) const { return boost::source(links_.at(id), *graph_); }
  VertexId link_target(int id) const { return boost::target(links_.at(id), *graph_); }
  const Device& device(VertexId v) const { return (*graph_)[v]; }
  const Graph& graph() const { return *graph_; }

 private:
  void reindex_links();

  std::unique_ptr<Graph> graph_;  // never null but when moved from
  std::vector<VertexId> gpus_;
  std::vector<Graph::edge_descriptor> links_;
};

// Scales both directions of the link(s) between the devices named a and b (cluster.degraded_links);
// throws InputError naming the key when a device is unknown or the two are not linked.
void scale_link_pair(ClusterGraph& graph, const std::string& a, const std::string& b, double factor);

}  // namespace dtsim

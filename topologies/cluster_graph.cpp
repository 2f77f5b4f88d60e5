// ClusterGraph construction (devices, directed links with dense ids) and the device/link kind
// names used in scenario and DOT files (spelled exactly like the enumerators).
#include "topologies/cluster_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "sim/base/error.hpp"

namespace dtsim {
namespace {

constexpr std::pair<DeviceKind, std::string_view> kDeviceNames[] = {
    {DeviceKind::gpu, "gpu"}, {DeviceKind::nvswitch, "nvswitch"},
    {DeviceKind::pcie_switch, "pcie_switch"}, {DeviceKind::cpu, "cpu"},
    {DeviceKind::nic, "nic"}, {DeviceKind::network_switch, "network_switch"},
    {DeviceKind::nvlink_switch, "nvlink_switch"}};

constexpr std::pair<LinkKind, std::string_view> kLinkNames[] = {
    {LinkKind::nvlink2, "nvlink2"}, {LinkKind::nvlink3, "nvlink3"},
    {LinkKind::nvlink4, "nvlink4"}, {LinkKind::nvlink5, "nvlink5"},
    {LinkKind::nvlink_bridge, "nvlink_bridge"}, {LinkKind::pcie3, "pcie3"},
    {LinkKind::pcie4, "pcie4"}, {LinkKind::pcie5, "pcie5"}, {LinkKind::pcie6, "pcie6"},
    {LinkKind::upi, "upi"}, {LinkKind::infiniband, "infiniband"},
    {LinkKind::omnipath, "omnipath"}, {LinkKind::ethernet, "ethernet"}};

template <typename Kind, std::size_t N>
std::string_view kind_name(const std::pair<Kind, std::string_view> (&table)[N], Kind k) {
  for (const auto& [kind, name] : table) {
    if (kind == k) return name;
  }
  return "?";
}

template <typename Kind, std::size_t N>
Kind parse_kind(const std::pair<Kind, std::string_view> (&table)[N], std::string_view text,
                std::string_view what) {
  std::vector<std::string_view> names;
  for (const auto& [kind, name] : table) {
    if (name == text) return kind;
    names.push_back(name);
  }
  throw InputError(fmt::format("{} = '{}': unknown kind; valid values: {}", what, text,
                               fmt::join(names, ", ")));
}

}  // namespace

std::string_view device_kind_name(DeviceKind k) { return kind_name(kDeviceNames, k); }
std::string_view link_kind_name(LinkKind k) { return kind_name(kLinkNames, k); }

DeviceKind parse_device_kind(std::string_view text, std::string_view what) {
  return parse_kind(kDeviceNames, text, what);
}
LinkKind parse_link_kind(std::string_view text, std::string_view what) {
  return parse_kind(kLinkNames, text, what);
}

ClusterGraph::ClusterGraph() : graph_(std::make_unique<Graph>()) {}
ClusterGraph::ClusterGraph(const ClusterGraph& other)
    : graph_(std::make_unique<Graph>(*other.graph_)), gpus_(other.gpus_) {
  reindex_links();
}
ClusterGraph& ClusterGraph::operator=(const ClusterGraph& other) {
  if (this != &other) *this = ClusterGraph(other);
  return *this;
}

void ClusterGraph::reindex_links() {
  links_.assign(boost::num_edges(*graph_), {});
  for (auto e : boost::make_iterator_range(boost::edges(*graph_))) links_[(*graph_)[e].id] = e;
}

VertexId ClusterGraph::add_device(Device device) {
  const bool is_gpu = device.kind == DeviceKind::gpu;
  device.gpu_index = is_gpu ? num_gpus() : -1;
  const VertexId v = boost::add_vertex(std::move(device), *graph_);
  if (is_gpu) gpus_.push_back(v);
  return v;
}

void ClusterGraph::add_link(VertexId from, VertexId to, LinkKind kind, double bytes_per_s,
                            TimeNs latency_ns) {
  const Link link{kind, bytes_per_s, latency_ns, num_links()};
  links_.push_back(boost::add_edge(from, to, link, *graph_).first);
}

void ClusterGraph::add_duplex_link(VertexId a, VertexId b, LinkKind kind, double bytes_per_s,
                                   TimeNs latency_ns) {
  add_link(a, b, kind, bytes_per_s, latency_ns);
  add_link(b, a, kind, bytes_per_s, latency_ns);
}

int ClusterGraph::num_nodes() const {
  int largest = -1;
  for (VertexId v : boost::make_iterator_range(boost::vertices(*graph_))) {
    largest = std::max(largest, (*graph_)[v].node);
  }
  return largest + 1;
}

void scale_link_pair(ClusterGraph& graph, const std::string& a, const std::string& b, double factor) {
  const Graph& g = graph.graph();
  auto find = [&](const std::string& name) {
    for (VertexId v = 0; v < boost::num_vertices(g); ++v)
      if (g[v].name == name) return v;
    throw InputError(fmt::format("cluster.degraded_links: no device '{}' (see 'dtsim topology --dot' for the names)", name));
  };
  const VertexId va = find(a), vb = find(b);
  int scaled = 0;
  for (int id = 0; id < graph.num_links(); ++id) {
    const VertexId s = graph.link_source(id), t = graph.link_target(id);
    if ((s == va && t == vb) || (s == vb && t == va)) {
      graph.scale_link(id, factor);
      ++scaled;
    }
  }
  if (scaled == 0) throw InputError(fmt::format("cluster.degraded_links: no link between '{}' and '{}'", a, b));
}

}  // namespace dtsim

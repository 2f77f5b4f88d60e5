// NVLS domains, bytes per link and cost (see nvls.hpp).
#include "sim/network/nvls.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim::nvls {

namespace {
bool sharp_nvlink(LinkKind k) { return k == LinkKind::nvlink4 || k == LinkKind::nvlink5; }

NvlsFabric fabric_of_switch(DeviceKind k) {
  return k == DeviceKind::nvswitch ? NvlsFabric::nvswitch : k == DeviceKind::nvlink_switch ? NvlsFabric::rack
                                                                                           : NvlsFabric::none;
}
}  // namespace

NvlsFabric fabric_of(const ClusterGraph& graph, const RouteInfo& route) {
  if (route.links.size() != 2) return NvlsFabric::none;
  const Link& up = graph.link(route.links[0]);
  const Link& down = graph.link(route.links[1]);
  if (!sharp_nvlink(up.kind) || !sharp_nvlink(down.kind)) return NvlsFabric::none;
  return fabric_of_switch(graph.device(graph.link_target(route.links[0])).kind);
}

bool graph_has_nvls(const ClusterGraph& graph) {
  for (int l = 0; l < graph.num_links(); ++l)
    if (sharp_nvlink(graph.link(l).kind) && graph.device(graph.link_source(l)).kind == DeviceKind::gpu &&
        fabric_of_switch(graph.device(graph.link_target(l)).kind) != NvlsFabric::none)
      return true;
  return false;
}

bool applies(CommKind kind, const RingSet& rings, const NcclProfile& nccl) {
  const int n = rings.members();
  if (!nccl.nvls || rings.nvls == NvlsFabric::none || n < 3) return false;
  if (rings.nvls == NvlsFabric::rack && !nccl.nvls_across_hosts) return false;
  if (kind == CommKind::all_reduce) return true;
  return (kind == CommKind::reduce_scatter || kind == CommKind::all_gather) && n <= nccl.nvls_arity;
}

double link_bytes(CommKind kind, double bytes, int n, int arity) {
  if (kind == CommKind::all_reduce) return bytes * (1 + 1.0 / std::min(n, arity));
  return bytes;  // reduce-scatter: S up; all-gather: S down
}

double wire_factor(NvlsFabric f) { return f == NvlsFabric::rack ? kWireFactorRack : kWireFactorNvswitch; }

int channels(LinkKind kind, bool spans_domains, const NcclProfile& nccl) {
  if (kind != LinkKind::nvlink5) return nccl.nvls_channels_hopper;
  return spans_domains ? nccl.nvls_channels_blackwell_spanning : nccl.nvls_channels_blackwell;
}

CollectiveCost cost(CommKind kind, double bytes, const RingSet& rings, const NcclProfile& nccl) {
  CollectiveCost c;
  c.algorithm = Algorithm::nvls;
  c.protocol = Protocol::simple;
  // The payload's share of what a link carries: its heavier direction's bytes per payload byte,
  // at NVLS's share of the link.
  c.wire_factor = wire_factor(rings.nvls) / link_bytes(kind, 1.0, rings.members(), nccl.nvls_arity);
  c.tail_ns = nccl.base_ns[static_cast<int>(Protocol::simple)] + nccl.nvls_latency_ns + rings.latency_ns;
  c.phase_tail_ns[0] = c.tail_ns;
  const double flow_s = bytes / (rings.bytes_per_s * c.wire_factor);
  c.estimate_ns = c.tail_ns + seconds_to_ns(flow_s);
  return c;
}

bool tree_applies(CommKind kind, const RingSet& rings, const NcclProfile& nccl) {
  if (kind != CommKind::all_reduce || !nccl.nvls_tree || rings.nvls_intra == NvlsFabric::none) return false;
  return rings.nodes() >= 2 && rings.members_per_node >= 3 &&
         (rings.nvls_intra != NvlsFabric::rack || nccl.nvls_across_hosts);
}

double tree_nic_bytes(double bytes, int nodes, int heads) { return (nodes > 2 ? 2.0 : 1.0) * bytes / heads; }

CollectiveCost tree_cost(double bytes, const RingSet& rings, const NcclProfile& nccl) {
  const int m = rings.members_per_node, nodes = rings.nodes(), heads = std::min(m, nccl.nvls_arity);
  const int simple = static_cast<int>(Protocol::simple), network = static_cast<int>(HopClass::network);
  CollectiveCost c;
  c.algorithm = Algorithm::nvls_tree;
  c.protocol = Protocol::simple;
  c.nvls_heads = heads;
  c.wire_factor = wire_factor(rings.nvls_intra) / link_bytes(CommKind::all_reduce, 1.0, m, nccl.nvls_arity);
  const int depth = static_cast<int>(std::floor(std::log2(nodes)));
  c.tail_ns = nccl.base_ns[simple] + nccl.nvls_latency_ns + rings.intra.latency_ns +
              2 * depth * (nccl.hop_ns[network][simple] + rings.inter.latency_ns);
  c.phase_tail_ns[0] = c.tail_ns;
  const double intra_s = bytes / (rings.intra.bytes_per_s * c.wire_factor);
  const double inter_s = tree_nic_bytes(bytes, nodes, heads) / rings.inter.bytes_per_s;
  c.estimate_ns = c.tail_ns + seconds_to_ns(std::max(intra_s, inter_s));
  return c;
}

}  // namespace dtsim::nvls

// NVLS domains, bytes per link and cost (see nvls.hpp).
#include "sim/network/nvls.hpp"

#include <algorithm>

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

bool applies(CommKind kind, const RingSet& rings) {
  const int n = rings.members();
  if (rings.nvls == NvlsFabric::none || n < 3) return false;
  if (kind == CommKind::all_reduce) return true;
  return (kind == CommKind::reduce_scatter || kind == CommKind::all_gather) && n <= kMaxArity;
}

double link_bytes(CommKind kind, double bytes, int n) {
  if (kind == CommKind::all_reduce) return bytes * (1 + 1.0 / std::min(n, kMaxArity));
  return bytes;  // reduce-scatter: S up; all-gather: S down
}

double wire_factor(NvlsFabric f) { return f == NvlsFabric::rack ? kWireFactorRack : kWireFactorNvswitch; }

int channels(LinkKind kind, bool spans_domains) {
  if (kind == LinkKind::nvlink5) return spans_domains ? 32 : 24;
  return 16;
}

CollectiveCost cost(CommKind kind, double bytes, const RingSet& rings, TimeNs base_ns) {
  CollectiveCost c;
  c.algorithm = Algorithm::nvls;
  c.protocol = Protocol::simple;
  c.wire_factor = wire_factor(rings.nvls);
  c.tail_ns = base_ns + kLatencyNs + rings.latency_ns;
  c.phase_tail_ns[0] = c.tail_ns;
  const double flow_s = link_bytes(kind, bytes, rings.members()) / (rings.bytes_per_s * c.wire_factor);
  c.estimate_ns = c.tail_ns + seconds_to_ns(flow_s);
  return c;
}

}  // namespace dtsim::nvls

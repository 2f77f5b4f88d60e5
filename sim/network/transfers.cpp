// Bookkeeping of transfers over the flow network.
#include "sim/network/transfers.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <unordered_map>

#include "sim/network/comm_model.hpp"

namespace dtsim {

namespace {
double effective_capacity(const ClusterGraph& graph, int id) {
  return graph.link(id).bytes_per_s * achievable_fraction(graph.link(id).kind);
}
std::vector<double> effective_capacities(const ClusterGraph& graph) {
  std::vector<double> caps;
  for (int id = 0; id < graph.num_links(); ++id) caps.push_back(effective_capacity(graph, id));
  return caps;
}
std::vector<std::pair<int, int>> local_ids(std::vector<int> links) {
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  std::vector<std::pair<int, int>> out;
  for (std::size_t i = 0; i < links.size(); ++i) out.emplace_back(links[i], static_cast<int>(i));
  return out;
}
std::vector<double> capacities_of(const ClusterGraph& graph, const std::vector<std::pair<int, int>>& local_of) {
  std::vector<double> caps;
  for (const auto& [link, local] : local_of) caps.push_back(effective_capacity(graph, link));
  return caps;
}

// Transfers::series_: union-find over the network links (each set's root its least link) of
// the two links in each direction through every pass-through vertex: a device other than a GPU
// (routes start and end only at GPUs) with one link to and one from each of exactly two
// neighbours, so a simple path that enters it from one leaves it to the other. `local` maps a
// graph link to its network link, -1 when the Transfers does not carry it; `candidates` holds
// the vertices to look at (with repeats), all those the Transfers' links enter.
template <class Local>
std::vector<int> series_chains(const ClusterGraph& cluster, int network_links, const std::vector<VertexId>& candidates,
                               Local&& local) {
  std::vector<int> parent(network_links);
  for (int l = 0; l < network_links; ++l) parent[l] = l;
  const auto root = [&](int l) {
    while (parent[l] != l) l = parent[l] = parent[parent[l]];
    return l;
  };
  const auto join = [&](int a, int b) {
    if (a < 0 || b < 0) return;
    a = root(a);
    b = root(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  };
  const Graph& g = cluster.graph();
  for (VertexId v : candidates) {
    if (g[v].kind == DeviceKind::gpu || boost::out_degree(v, g) != 2 || boost::in_degree(v, g) != 2) continue;
    const auto [out_first, out_end] = boost::out_edges(v, g);
    const auto [in_first, in_end] = boost::in_edges(v, g);
    const Graph::edge_descriptor out[2] = {*out_first, *std::next(out_first)};
    Graph::edge_descriptor in[2] = {*in_first, *std::next(in_first)};
    const VertexId u = boost::target(out[0], g), w = boost::target(out[1], g);
    if (u == w || u == v || w == v) continue;
    if (boost::source(in[0], g) == w) std::swap(in[0], in[1]);
    if (boost::source(in[0], g) != u || boost::source(in[1], g) != w) continue;
    join(local(g[in[0]].id), local(g[out[1]].id));  // u -> v -> w
    join(local(g[in[1]].id), local(g[out[0]].id));  // w -> v -> u
  }
  for (int l = 0; l < network_links; ++l) parent[l] = root(l);
  return parent;
}

// The vertices the links enter (graph links; network links when `local_of` is not empty).
std::vector<VertexId> entered(const ClusterGraph& cluster, const std::vector<std::pair<int, int>>& local_of) {
  std::vector<VertexId> out;
  if (local_of.empty())
    for (int l = 0; l < cluster.num_links(); ++l) out.push_back(cluster.link_target(l));
  for (const auto& [link, local] : local_of) out.push_back(cluster.link_target(link));
  return out;
}

// Each chain's root link gets the chain's least capacity.
std::vector<double> chain_capacities(std::vector<double> caps, const std::vector<int>& series) {
  for (std::size_t l = 0; l < caps.size(); ++l) caps[series[l]] = std::min(caps[series[l]], caps[l]);
  return caps;
}

// The chains (by root network link) whose flows' rates can never sum past the chain's capacity
// (FlowNetwork::never_binds): a link u -> v where u is no GPU (no route starts there) and the
// links into u from elsewhere than v bring in no more than the chain's capacity, or where v is no
// GPU (no route ends there) and the links out of v to elsewhere than u take out no more. Every
// crossing of the link follows a crossing of one of those (routes are simple paths, several hops
// of a chain flow meet only at GPUs), so their loads bound its load, and their capacities do when
// they hold them: links of other chains, themselves no such link (a link cannot vouch for itself,
// nor two for each other). A non-blocking fat tree's leaf uplinks and downlinks are such links;
// coupling flows through them, a solve spans every EP group under a leaf.
template <class Local>
std::vector<int> never_binding_chains(const ClusterGraph& cluster, const std::vector<int>& links,
                                      const std::vector<int>& series, const std::vector<double>& chain_caps,
                                      Local&& local) {
  const Graph& g = cluster.graph();
  const auto chain_of = [&](int id) {
    const int l = local(id);
    return l < 0 ? -1 : series[l];
  };
  // Capacity into and out of each vertex looked at, and between two vertices (one way).
  std::unordered_map<VertexId, double> into, out_of;
  const auto total = [&](std::unordered_map<VertexId, double>& memo, VertexId at, bool in) {
    const auto [it, added] = memo.try_emplace(at, 0.0);
    if (added) {
      if (in)
        for (auto [e, end] = boost::in_edges(at, g); e != end; ++e) it->second += effective_capacity(cluster, g[*e].id);
      else
        for (auto [e, end] = boost::out_edges(at, g); e != end; ++e) it->second += effective_capacity(cluster, g[*e].id);
    }
    return it->second;
  };
  const auto between = [&](VertexId from, VertexId to) {
    double sum = 0;
    if (boost::out_degree(from, g) <= boost::in_degree(to, g)) {
      for (auto [e, end] = boost::out_edges(from, g); e != end; ++e)
        if (boost::target(*e, g) == to) sum += effective_capacity(cluster, g[*e].id);
    } else {
      for (auto [e, end] = boost::in_edges(to, g); e != end; ++e)
        if (boost::source(*e, g) == from) sum += effective_capacity(cluster, g[*e].id);
    }
    return sum;
  };
  // The links on one side of link `id`: into its source from elsewhere than its target, or out
  // of its target to elsewhere than its source.
  const auto for_side = [&](int id, bool into_source, auto&& fn) {
    const VertexId u = cluster.link_source(id), v = cluster.link_target(id);
    if (into_source) {
      for (auto [e, end] = boost::in_edges(u, g); e != end; ++e)
        if (boost::source(*e, g) != v) fn(g[*e].id);
    } else {
      for (auto [e, end] = boost::out_edges(v, g); e != end; ++e)
        if (boost::target(*e, g) != u) fn(g[*e].id);
    }
  };
  // Whether that side bounds the link: not a GPU's, no more capacity than the chain's, and no
  // link of the same chain (which only a pass-through vertex, two links each way, can hold).
  const auto bounds = [&](int id, bool into_source) {
    const VertexId u = cluster.link_source(id), v = cluster.link_target(id);
    const VertexId at = into_source ? u : v, other = into_source ? v : u;
    if (g[at].kind == DeviceKind::gpu) return false;
    const double sum = into_source ? total(into, at, true) - between(other, at) : total(out_of, at, false) - between(at, other);
    if (sum > chain_caps[chain_of(id)] * (1 + 1e-12)) return false;
    if (boost::in_degree(at, g) > 2 || boost::out_degree(at, g) > 2) return true;
    bool same_chain = false;
    for_side(id, into_source, [&](int e) { same_chain = same_chain || chain_of(e) == chain_of(id); });
    return !same_chain;
  };
  std::vector<char> candidate(chain_caps.size(), 0);
  for (int id : links)
    if (chain_of(id) >= 0 && (bounds(id, true) || bounds(id, false))) candidate[chain_of(id)] = 1;
  const auto vouched = [&](int id, bool into_source) {
    if (!bounds(id, into_source)) return false;
    bool by_candidate = false;
    for_side(id, into_source, [&](int e) {
      const int c = chain_of(e);
      by_candidate = by_candidate || (c >= 0 && candidate[c]);
    });
    return !by_candidate;
  };
  std::vector<int> chains;
  for (int id : links)
    if (const int c = chain_of(id); c >= 0 && candidate[c] && (vouched(id, true) || vouched(id, false)))
      chains.push_back(c);
  std::sort(chains.begin(), chains.end());
  chains.erase(std::unique(chains.begin(), chains.end()), chains.end());
  return chains;
}
}  // namespace

namespace {

// Double binary tree: per channel, a chain through each node's members (the channel's rotated
// order) and two binary trees over the nodes' chain heads (heap order, the second mirrored),
// each carrying half the channel's share up (reduce) and down (broadcast). Each tree is one
// pipelined chain.
void lower_tree(double bytes, const RingSet& rings, const CollectiveCost& cost, std::vector<HopFlow>& hops) {
  const int m = rings.members_per_node, nodes = rings.nodes();
  const double share = bytes / static_cast<double>(rings.rings.size()) / 2 / cost.wire_factor;
  int chain = 0;
  auto both = [&](int a, int b) {
    hops.push_back(HopFlow{a, b, share, 0, nullptr, chain});
    hops.push_back(HopFlow{b, a, share, 0, nullptr, chain});
  };
  for (const std::vector<int>& ring : rings.rings) {
    for (int tree = 0; tree < 2; ++tree, ++chain) {
      auto head = [&](int position) {
        const int node = tree == 0 ? position : nodes - 1 - position;
        return ring[node * m];
      };
      for (int position = 1; position < nodes; ++position) both(head(position), head((position - 1) / 2));
      for (int node = 0; node < nodes; ++node)
        for (int i = 0; i + 1 < m; ++i) both(ring[node * m + i], ring[node * m + i + 1]);
    }
  }
}

// Hierarchical: each phase's rings (CommModel::hierarchical_phases) with the phase's bytes per
// hop: one ring per node over its members, or one ring per local rank over the nodes; each ring
// one chain.
void lower_hierarchical(CommKind kind, double bytes, const RingSet& rings, const CollectiveCost& cost,
                        std::vector<HopFlow>& hops) {
  const int m = rings.members_per_node, nodes = rings.nodes();
  const std::vector<int>& order = rings.rings.front();
  const std::vector<CommModel::Phase> phases = CommModel::hierarchical_phases(kind, bytes, rings);
  for (std::size_t k = 0; k < phases.size(); ++k) {
    const CommModel::Phase& ph = phases[k];
    const double hop_bytes = CommModel::bytes_per_hop(ph.kind, ph.bytes, ph.n) / cost.wire_factor;
    const int phase = static_cast<int>(k);
    for (int node = 0; node < nodes; ++node)
      for (int i = 0; i < m; ++i) {
        if (ph.intra) hops.push_back(HopFlow{order[node * m + i], order[node * m + (i + 1) % m], hop_bytes, phase, nullptr, node});
        else hops.push_back(HopFlow{order[node * m + i], order[(node + 1) % nodes * m + i], hop_bytes, phase, nullptr, i});
      }
  }
}

// NVLS tree (nvls.hpp): one phase; per node, its NVLS flow over its members' hops through the
// switch (chain = node); per head (the first h local ranks), one flow up and down a chain over
// the nodes' GPUs at its position carrying its S/h share each way (an inner node's NIC sends
// 2 S/h, as NCCL's tuning counts a tree beyond two nodes).
void lower_nvls_tree(double bytes, const RingSet& rings, const CollectiveCost& cost, std::vector<HopFlow>& hops) {
  const int m = rings.members_per_node, nodes = rings.nodes();
  const std::vector<int>& order = rings.rings.front();
  for (int node = 0; node < nodes; ++node)
    for (int i = 0; i < m; ++i)
      hops.push_back(HopFlow{order[node * m + i], order[node * m + (i + 1) % m], bytes / cost.wire_factor, 0, nullptr, node});
  const double share = bytes / cost.nvls_heads;
  for (int head = 0; head < cost.nvls_heads; ++head)
    for (int node = 0; node + 1 < nodes; ++node) {
      const int a = order[node * m + head], b = order[(node + 1) * m + head];
      hops.push_back(HopFlow{a, b, share, 0, nullptr, nodes + head});
      hops.push_back(HopFlow{b, a, share, 0, nullptr, nodes + head});
    }
}

// All-to-all: every rank sends `share` (S/n) to every other, all at once. Inside one node, one
// flow per pair. Across nodes (equal members per node, contiguous in the first ring) as NCCL's
// PXN and DeepSeek's DeepEP route it: what a rank sends to another node goes in one flow to the
// member of that node with the same in-node index (network traffic stays on its rail), which
// forwards it over NVLink; by symmetry each rank forwards (nodes - 1) shares to each local peer,
// so its flow to a local peer carries nodes shares. Same network bytes as all pairs, fewer flows.
void lower_all_to_all(double share, const RingSet& rings, std::vector<HopFlow>& hops) {
  const std::vector<int>& members = rings.rings.front();
  const int m = rings.members_per_node, nodes = rings.nodes();
  if (m == 0 || nodes < 2) {
    for (int a : members)
      for (int b : members)
        if (a != b) hops.push_back(HopFlow{a, b, share});
    return;
  }
  for (int u = 0; u < nodes; ++u)
    for (int i = 0; i < m; ++i) {
      const int a = members[u * m + i];
      for (int v = 0; v < nodes; ++v)
        if (v != u) hops.push_back(HopFlow{a, members[v * m + i], m * share});
      for (int j = 0; j < m; ++j)
        if (j != i) hops.push_back(HopFlow{a, members[u * m + j], nodes * share});
    }
}

// DeepEP's dispatch, both hops at once (its kernels pipeline them): each rank sends `bytes` in
// equal parts to the group's members with its in-node index on the other nodes (its rail), and
// `forward_bytes` in equal parts to the group's other members in its node (NVLink). Members per
// node are equal and contiguous (validate_plan).
void lower_two_hop(double bytes, double forward_bytes, const RingSet& rings, std::vector<HopFlow>& hops) {
  const std::vector<int>& members = rings.rings.front();
  const int n = static_cast<int>(members.size()), m = rings.members_per_node;
  if (m == 0) throw std::logic_error("two-hop dispatch over a group with unequal members per node");
  const int nodes = n / m;
  for (int u = 0; u < nodes; ++u)
    for (int i = 0; i < m; ++i) {
      const int a = members[u * m + i];
      for (int v = 0; v < nodes; ++v)
        if (v != u) hops.push_back(HopFlow{a, members[v * m + i], bytes / (nodes - 1)});
      for (int j = 0; j < m; ++j)
        if (j != i) hops.push_back(HopFlow{a, members[u * m + j], forward_bytes / (m - 1)});
    }
}

}  // namespace

void lower_collective(CommKind kind, double bytes, const RingSet& rings, const CollectiveCost& cost,
                      std::vector<HopFlow>& hops, double forward_bytes) {
  hops.clear();
  if (kind == CommKind::two_hop) {
    lower_two_hop(bytes, forward_bytes, rings, hops);
    return;
  }
  if (cost.algorithm == Algorithm::tree) {
    lower_tree(bytes, rings, cost, hops);
    return;
  }
  if (cost.algorithm == Algorithm::hierarchical) {
    lower_hierarchical(kind, bytes, rings, cost, hops);
    return;
  }
  if (cost.algorithm == Algorithm::nvls_tree) {
    lower_nvls_tree(bytes, rings, cost, hops);
    return;
  }
  const int n = rings.members();
  if (cost.algorithm == Algorithm::nvls) {
    // One pipelined flow through the switch: the first ring's hops, each GPU's links once,
    // carrying what a link carries in its heavier direction (the wire factor holds it).
    const double link_bytes = bytes / cost.wire_factor;
    for (int i = 0; i < n; ++i)
      hops.push_back(HopFlow{rings.rings[0][i], rings.rings[0][(i + 1) % n], link_bytes, 0, rings.hop_routes[0][i], 0});
    return;
  }
  if (kind == CommKind::all_to_all) {
    lower_all_to_all(bytes / n / cost.wire_factor, rings, hops);
    return;
  }
  const double hop_bytes =
      CommModel::bytes_per_hop(kind, bytes / static_cast<double>(rings.rings.size()), n) / cost.wire_factor;
  for (std::size_t r = 0; r < rings.rings.size(); ++r) {
    const std::vector<int>& ring = rings.rings[r];
    const bool routed = r < rings.hop_routes.size() && static_cast<int>(rings.hop_routes[r].size()) == n;
    for (int i = 0; i < n; ++i)  // a broadcast's ring ends where it began: no hop back to the root
      if (kind != CommKind::broadcast || i + 1 < n)
        hops.push_back(HopFlow{ring[i], ring[(i + 1) % n], hop_bytes, 0, routed ? rings.hop_routes[r][i] : nullptr,
                               static_cast<int>(r)});
  }
}

Transfers::Transfers(const ClusterGraph& graph, const Router& router)
    : router_(router),
      series_(series_chains(graph, graph.num_links(), entered(graph, {}), [](int link) { return link; })),
      net_(chain_capacities(effective_capacities(graph), series_)) {
  mark_never_binding(graph);
}

Transfers::Transfers(const ClusterGraph& graph, const Router& router, std::vector<int> links)
    : router_(router),
      local_of_(local_ids(std::move(links))),
      series_(series_chains(graph, static_cast<int>(local_of_.size()), entered(graph, local_of_),
                            [this](int link) { return find_local(link); })),
      net_(chain_capacities(capacities_of(graph, local_of_), series_)) {
  mark_never_binding(graph);
}

void Transfers::mark_never_binding(const ClusterGraph& graph) {
  std::vector<double> caps(net_.num_links());
  for (int l = 0; l < net_.num_links(); ++l) caps[l] = net_.capacity(l);
  std::vector<int> links;
  if (local_of_.empty())
    for (int l = 0; l < graph.num_links(); ++l) links.push_back(l);
  for (const auto& [link, local] : local_of_) links.push_back(link);
  for (int chain : never_binding_chains(graph, links, series_, caps, [this](int link) { return find_local(link); }))
    net_.never_binds(chain);
}

int Transfers::find_local(int link) const {
  if (local_of_.empty()) return link;
  const auto at = std::lower_bound(local_of_.begin(), local_of_.end(), std::pair<int, int>{link, -1});
  return at != local_of_.end() && at->first == link ? at->second : -1;
}

int Transfers::local(int link) const {
  const int l = find_local(link);
  if (l < 0) throw std::logic_error("Transfers: a route left the links it owns");
  return l;
}

void Transfers::start(TimeNs now, const std::vector<HopFlow>& flows, TimeNs tail_ns, int tag) {
  start(now, flows, std::span<const TimeNs>(&tail_ns, 1), tag);
}

void Transfers::start(TimeNs now, const std::vector<HopFlow>& flows, std::span<const TimeNs> phase_tails, int tag) {
  int id;
  if (free_transfers_.empty()) {
    id = static_cast<int>(transfers_.size());
    transfers_.emplace_back();
  } else {
    id = free_transfers_.back();
    free_transfers_.pop_back();
  }
  Transfer& t = transfers_[id];
  t.pending = 0;
  t.start_ns = now;
  t.tag = tag;
  t.phase = 0;
  t.tails.assign(phase_tails.begin(), phase_tails.end());
  t.flows.clear();
  if (t.tails.size() > 1) t.flows = flows;  // later phases start from here
  if (lone_) {
    if (t.tails.size() > 1) throw std::logic_error("Transfers: a transfer in phases in lone mode");
    lone_now_ = std::max(lone_now_, now);
    start_phase(id, now, flows);
    if (t.pending > 1) throw std::logic_error("Transfers: a transfer of several flows in lone mode");
    return;
  }
  net_.advance(now);
  start_phase(id, now, flows);
  net_.solve();
}

// The network links of the flow of chain flows[begin, end), in crossing order; a chain of
// several hops is looked up by its hops' routes (the rings of a group run many collectives).
std::span<const int> Transfers::flow_links(const std::vector<HopFlow>& flows, std::size_t begin, std::size_t end) {
  auto route_of = [&](const HopFlow& hop) -> const RouteInfo& {
    return hop.route ? *hop.route : router_.route(hop.src_gpu, hop.dst_gpu);
  };
  auto append = [&](const RouteInfo& route, std::vector<int>& out) {
    int chain = -1;  // a series chain's links come one after the other: one crossing
    for (int l : route.links) {
      if (!forbidden_.empty() && forbidden_[l]) throw LinkOwnedElsewhere("Transfers: a route crosses a link owned elsewhere");
      const int n = series_[local_of_.empty() ? l : local(l)];
      if (n != chain) out.push_back(n);
      chain = n;
    }
  };
  links_scratch_.clear();
  if (end - begin == 1) {
    if (flows[begin].src_gpu == flows[begin].dst_gpu) return {};
    // A flow of its own: its links' chains, cached per route.
    const RouteInfo& route = route_of(flows[begin]);
    auto at = route_chains_.find(route.id);
    if (at == route_chains_.end()) {
      append(route, links_scratch_);  // may throw: store after
      at = route_chains_.emplace(route.id, std::pair<int, int>(static_cast<int>(route_chain_links_.size()),
                                                              static_cast<int>(links_scratch_.size()))).first;
      route_chain_links_.insert(route_chain_links_.end(), links_scratch_.begin(), links_scratch_.end());
    }
    return std::span<const int>(route_chain_links_).subspan(at->second.first, at->second.second);
  }
  hop_routes_scratch_.clear();
  for (std::size_t k = begin; k < end; ++k)
    if (flows[k].src_gpu != flows[k].dst_gpu) hop_routes_scratch_.push_back(&route_of(flows[k]));
  if (auto at = chain_links_.find(hop_routes_scratch_); at != chain_links_.end()) return at->second;
  for (const RouteInfo* route : hop_routes_scratch_) append(*route, links_scratch_);  // may throw: store after
  return chain_links_.emplace(hop_routes_scratch_, links_scratch_).first->second;
}

// The chain's route: cached by its hops' routes (a lone domain has a few rings).
int Transfers::lone_route(const std::vector<HopFlow>& flows, std::size_t begin, std::size_t end) {
  hop_routes_scratch_.clear();
  for (std::size_t k = begin; k < end; ++k) {
    const HopFlow& hop = flows[k];
    if (hop.src_gpu != hop.dst_gpu) hop_routes_scratch_.push_back(hop.route ? hop.route : &router_.route(hop.src_gpu, hop.dst_gpu));
  }
  for (std::size_t r = 0; r < lone_routes_.size(); ++r)
    if (lone_routes_[r].hops == hop_routes_scratch_) return static_cast<int>(r);
  LoneRoute& route = lone_routes_.emplace_back();
  route.hops = hop_routes_scratch_;
  // Distinct links in first-crossing order, with the times the flow crosses each.
  for (const RouteInfo* hop : route.hops)
    for (int graph_link : hop->links) {
      if (!forbidden_.empty() && forbidden_[graph_link]) throw LinkOwnedElsewhere("Transfers: a route crosses a link owned elsewhere");
      const int l = local_of_.empty() ? graph_link : local(graph_link);
      auto at = std::find_if(route.links.begin(), route.links.end(), [l](const auto& e) { return e.first == l; });
      if (at == route.links.end()) route.links.emplace_back(l, 1);
      else ++at->second;
    }
  // What fill_single gives a flow alone on its links.
  route.rate = std::numeric_limits<double>::infinity();
  for (const auto& [l, k] : route.links) route.rate = std::min(route.rate, net_.capacity(l) / static_cast<double>(k));
  return static_cast<int>(lone_routes_.size() - 1);
}

// FlowNetwork::add_flow, solve and schedule of a flow alone on its links.
int Transfers::add_lone(int route, double bytes) {
  if (lone_bytes_.empty()) {
    lone_bytes_.assign(net_.num_links(), 0.0);
    lone_busy_s_.assign(net_.num_links(), 0.0);
  }
  int id;
  if (lone_free_ids_.empty()) {
    id = static_cast<int>(lone_flows_.size());
    lone_flows_.emplace_back();
  } else {
    std::pop_heap(lone_free_ids_.begin(), lone_free_ids_.end(), std::greater<>());
    id = lone_free_ids_.back();
    lone_free_ids_.pop_back();
  }
  lone_flows_[id] = LoneFlow{route, bytes, lone_now_};
  const double rate = lone_routes_[route].rate;
  const TimeNs finish =
      bytes <= std::min(1e-9 * bytes, 1.0) ? lone_now_ : lone_now_ + static_cast<TimeNs>(std::ceil(bytes / rate * 1e9));
  lone_finishes_.emplace_back(finish, id);
  std::push_heap(lone_finishes_.begin(), lone_finishes_.end(), std::greater<>());
  return id;
}

// FlowNetwork::collect_finished and remove_flow: each crossing adds the flow's bytes to the
// link, and the link's busy time grows by the flow's time on it.
void Transfers::collect_lone(std::vector<int>& done) {
  while (!lone_finishes_.empty() && lone_finishes_.front().first <= lone_now_) {
    std::pop_heap(lone_finishes_.begin(), lone_finishes_.end(), std::greater<>());
    const int id = lone_finishes_.back().second;
    lone_finishes_.pop_back();
    const LoneFlow& f = lone_flows_[id];
    for (const auto& [l, k] : lone_routes_[f.route].links) {
      for (int i = 0; i < k; ++i) lone_bytes_[l] += f.bytes;
      lone_busy_s_[l] += ns_to_seconds(lone_now_ - f.start);
    }
    done.push_back(id);
    lone_free_ids_.push_back(id);
    std::push_heap(lone_free_ids_.begin(), lone_free_ids_.end(), std::greater<>());
  }
  std::sort(done.begin(), done.end());
}

void Transfers::start_phase(int id, TimeNs now, const std::vector<HopFlow>& flows) {
  Transfer& t = transfers_[id];
  t.phase_start_ns = now;
  auto own = [&](int flow) {
    if (flow >= static_cast<int>(owner_.size())) owner_.resize(flow + 1, -1);
    owner_[flow] = id;
    ++t.pending;
  };
  for (std::size_t i = 0; i < flows.size();) {
    const HopFlow& f = flows[i];
    if (f.phase != t.phase || f.bytes <= 0) {
      ++i;
      continue;
    }
    // The hops of f's chain (f alone when it has none).
    std::size_t end = i + 1;
    if (f.chain >= 0)
      while (end < flows.size() && flows[end].phase == f.phase && flows[end].chain == f.chain) ++end;
    if (lone_) {
      const int route = lone_route(flows, i, end);
      if (!lone_routes_[route].links.empty()) own(add_lone(route, f.bytes));
      i = end;
      continue;
    }
    const std::span<const int> links = flow_links(flows, i, end);
    if (!links.empty()) own(net_.add_flow(links, f.bytes, now));
    i = end;
  }
  if (t.pending > 0) return;
  if (t.phase + 1 < static_cast<int>(t.tails.size())) due_.emplace(now + t.tails[t.phase], id);
  else instant_.push_back(id);
}

TimeNs Transfers::next_event() const {
  if (!instant_.empty()) return -1;  // due now
  const TimeNs flow = lone_ ? (lone_finishes_.empty() ? kNever : lone_finishes_.front().first) : net_.next_completion().first;
  return due_.empty() ? flow : std::min(flow, due_.begin()->first);
}

void Transfers::finish_flow(int flow, TimeNs now, std::vector<FinishedTransfer>& out) {
  const int id = owner_[flow];
  owner_[flow] = -1;
  Transfer& t = transfers_[id];
  if (--t.pending > 0) return;
  if (t.phase + 1 < static_cast<int>(t.tails.size())) {
    due_.emplace(now + t.tails[t.phase], id);
    return;
  }
  out.push_back(FinishedTransfer{t.tag, t.start_ns, now + t.tails[t.phase]});
  free_transfers_.push_back(id);
}

void Transfers::collect(TimeNs now, std::vector<FinishedTransfer>& out) {
  for (int id : instant_) {
    const Transfer& t = transfers_[id];
    out.push_back(FinishedTransfer{t.tag, t.start_ns, std::max(now, t.phase_start_ns) + t.tails[t.phase]});
    free_transfers_.push_back(id);
  }
  instant_.clear();
  done_scratch_.clear();
  if (lone_) {
    lone_now_ = std::max(lone_now_, now);
    collect_lone(done_scratch_);
    for (int flow : done_scratch_) finish_flow(flow, now, out);
    return;
  }
  net_.advance(now);
  net_.collect_finished(done_scratch_);
  for (int flow : done_scratch_) finish_flow(flow, now, out);
  // Next phases whose predecessors' tails have passed, in (time, transfer) order.
  while (!due_.empty() && due_.begin()->first <= now) {
    const int id = due_.begin()->second;
    due_.erase(due_.begin());
    ++transfers_[id].phase;
    start_phase(id, now, transfers_[id].flows);
  }
  net_.solve();
}

}  // namespace dtsim

// Router: GPU-to-GPU routes by Boost's Dijkstra with weight = kHopWeight per link + its latency,
// i.e. fewest hops first, then lowest total latency (exact in doubles: latencies sum far below
// kHopWeight). Where a route enters a vertex from a network switch and several switches offer
// an equally short way in (explicit spines), it takes the one at ecmp_hash(src, dst, vertex)
// modulo their number, in link-id order (deterministic ECMP); other ties are resolved by Boost's
// vertex/edge order.
// A route crosses only fabric devices (node -1) and the devices of its two end nodes, never the
// inside of a third node; the search stops when the destination is settled and resets only the
// vertices it touched, so a route costs the size of the fabric, not of the whole cluster. Leaf
// switches (at most one fabric neighbour) that serve neither end node are skipped as well: no
// shortest path crosses one (it would enter and leave by the same neighbour), and without them a
// route across a 16K-GPU three-tier Clos settles a few dozen vertices instead of its ~1,000 ToRs.
// Routes are computed on first request and cached per (src, dst) pair under a mutex; the
// searches themselves run outside it, on per-thread scratch, so threads search in parallel.
#include "topologies/routing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <limits>

#include "sim/base/error.hpp"

namespace dtsim {
namespace {

constexpr double kHopWeight = 1e9;  // > any plausible route latency in ns

// Which vertices BFS from `start` reaches in g (the graph or its reverse).
template <typename G>
std::vector<bool> reachable(const G& g, VertexId start) {
  const auto n = boost::num_vertices(g);
  std::vector<boost::default_color_type> color(n, boost::white_color);
  auto color_map = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g));
  boost::breadth_first_search(g, start, boost::color_map(color_map));
  std::vector<bool> seen(n);
  for (std::size_t v = 0; v < n; ++v) seen[v] = color[v] != boost::white_color;
  return seen;
}

// Remembers every vertex touched (to reset the scratch maps) and each vertex's last relaxed
// edge; notes when the destination is settled (its route is final then).
struct SearchVisitor : boost::default_dijkstra_visitor {
  VertexId dst;
  std::vector<VertexId>* touched;
  std::vector<Graph::edge_descriptor>* pred_edge;
  bool* settled;
  template <class G>
  void discover_vertex(VertexId v, const G&) const { touched->push_back(v); }
  template <class G>
  void edge_relaxed(Graph::edge_descriptor e, const G& g) const { (*pred_edge)[boost::target(e, g)] = e; }
  template <class G>
  void examine_vertex(VertexId v, const G&) const {
    if (v == dst) *settled = true;
  }
};

// The search's queue as breadth_first_visit sees it: empty once the destination is settled, so
// the search stops there. (Stopping by throwing from the visitor, as Boost's documentation
// suggests, serialised parallel searches: unwinding takes a process-wide lock in libgcc.)
template <class Queue>
struct UntilSettled {
  using value_type = typename Queue::value_type;
  Queue* queue;
  const bool* settled;
  bool empty() const { return *settled || queue->empty(); }
  value_type& top() { return queue->top(); }
  void pop() { queue->pop(); }
  void push(const value_type& v) { queue->push(v); }
};

// Vertices a route between two nodes may cross: fabric devices and the two nodes' own, less the
// leaf switches that serve neither node (those in `leaf` and not in `leaf_allowed`).
struct RouteDevices {
  const std::vector<int>* node_of = nullptr;     // Router::node_of_
  const std::vector<char>* leaf = nullptr;       // Router::leaf_
  const std::vector<char>* leaf_allowed = nullptr;  // the search's scratch
  int src_node = -1, dst_node = -1;
  bool operator()(VertexId v) const {
    const int node = (*node_of)[v];
    if (node >= 0) return node == src_node || node == dst_node;
    return !(*leaf)[v] || (*leaf_allowed)[v];
  }
};

double link_weight(const Graph& g, Graph::edge_descriptor e) { return kHopWeight + static_cast<double>(g[e].latency_ns); }

// splitmix64: the ECMP hash's mixing function.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t ecmp_hash(int src_gpu, int dst_gpu, VertexId at) {
  return mix((static_cast<std::uint64_t>(src_gpu) << 32 | static_cast<std::uint32_t>(dst_gpu)) ^ mix(at));
}

namespace {

// Dijkstra scratch of one thread, sized to the graph; reset after each search (the touched
// vertices only). It includes the heap's index of each vertex, which Boost's
// dijkstra_shortest_paths_no_init would allocate and zero over the whole graph on every search
// (a memset of ~2 % of the 16K step's time, 0.15 s of its 1.1 s of searches).
struct SearchScratch {
  std::vector<std::size_t> heap_index;
  std::vector<double> dist;
  std::vector<VertexId> pred;
  std::vector<Graph::edge_descriptor> pred_edge;
  std::vector<boost::default_color_type> color;
  std::vector<VertexId> touched;
  std::vector<Graph::edge_descriptor> candidates;
  std::vector<char> leaf_allowed;  // the leaf switches of the search's end nodes (and its ends)
};

SearchScratch& scratch_for(std::size_t n) {
  thread_local SearchScratch s;
  if (s.dist.size() != n) {
    s.heap_index.assign(n, 0);
    s.dist.assign(n, std::numeric_limits<double>::infinity());
    s.pred.resize(n);
    for (VertexId v = 0; v < n; ++v) s.pred[v] = v;
    s.pred_edge.resize(n);
    s.color.assign(n, boost::white_color);
    s.leaf_allowed.assign(n, 0);
  }
  return s;
}

// Among the equal-cost links into `v` from network switches, the one the ECMP hash picks;
// `recorded` (Dijkstra's) when there is no choice.
template <typename FilteredGraph>
Graph::edge_descriptor ecmp_choice(const Graph& g, const FilteredGraph& fg, SearchScratch& s, VertexId v, int src_gpu,
                                   int dst_gpu, Graph::edge_descriptor recorded) {
  s.candidates.clear();
  for (Graph::edge_descriptor e : boost::make_iterator_range(boost::in_edges(v, fg))) {
    const VertexId u = boost::source(e, g);
    if (g[u].kind == DeviceKind::network_switch && s.dist[u] + link_weight(g, e) == s.dist[v]) s.candidates.push_back(e);
  }
  if (s.candidates.size() < 2) return recorded;
  std::sort(s.candidates.begin(), s.candidates.end(), [&g](Graph::edge_descriptor a, Graph::edge_descriptor b) {
    return g[a].id < g[b].id;
  });
  return s.candidates[ecmp_hash(src_gpu, dst_gpu, v) % s.candidates.size()];
}

}  // namespace

Router::Router(const ClusterGraph& graph) : graph_(graph) {
  const Graph& g = graph.graph();
  const std::size_t n = boost::num_vertices(g);
  for (VertexId v = 0; v < n; ++v) node_of_.push_back(g[v].node);
  node_leaves_.resize(graph.num_nodes());
  leaf_.assign(n, 0);
  std::vector<VertexId> fabric_neighbours, served;
  for (VertexId v = 0; v < n; ++v) {
    if (node_of_[v] >= 0) continue;
    fabric_neighbours.clear();
    served.clear();
    const auto note = [&](VertexId u) {
      if (u == v) return;
      if (node_of_[u] < 0) fabric_neighbours.push_back(u);
      else served.push_back(static_cast<VertexId>(node_of_[u]));
    };
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) note(boost::target(e, g));
    for (auto e : boost::make_iterator_range(boost::in_edges(v, g))) note(boost::source(e, g));
    std::sort(fabric_neighbours.begin(), fabric_neighbours.end());
    if (std::unique(fabric_neighbours.begin(), fabric_neighbours.end()) - fabric_neighbours.begin() > 1) continue;
    leaf_[v] = 1;
    std::sort(served.begin(), served.end());
    served.erase(std::unique(served.begin(), served.end()), served.end());
    for (VertexId node : served) node_leaves_[node].push_back(v);
  }
}

const RouteInfo& Router::route(int src_gpu, int dst_gpu) const {
  const auto find = [&](auto& known) {
    return std::lower_bound(known.begin(), known.end(), dst_gpu, [](const auto& entry, int dst) { return entry.first < dst; });
  };
  {
    tbb::spin_mutex::scoped_lock lock(mutex_);
    if (by_src_.empty()) by_src_.resize(graph_.num_gpus());
    auto& known = by_src_.at(src_gpu);
    const auto at = find(known);
    if (at != known.end() && at->first == dst_gpu) return *at->second;
  }
  RouteInfo info = search(src_gpu, dst_gpu);
  tbb::spin_mutex::scoped_lock lock(mutex_);
  auto& known = by_src_[src_gpu];
  const auto at = find(known);
  if (at != known.end() && at->first == dst_gpu) return *at->second;  // another thread's search, the same route
  info.id = static_cast<int>(routes_.size());
  const RouteInfo& stored = routes_.emplace_back(std::move(info));
  known.insert(at, {dst_gpu, &stored});
  return stored;
}

RouteInfo Router::search(int src_gpu, int dst_gpu) const {
  const Graph& g = graph_.graph();
  const VertexId src = graph_.gpu(src_gpu);
  const VertexId dst = graph_.gpu(dst_gpu);
  RouteInfo info;
  info.bottleneck_bytes_per_s = std::numeric_limits<double>::infinity();
  if (src == dst) return info;
  SearchScratch& s = scratch_for(boost::num_vertices(g));
  // Only fabric devices (node -1) and the two end nodes' devices may carry the route, and of the
  // leaf switches only the end nodes' (or the ends themselves, where a GPU is a fabric device).
  s.leaf_allowed[src] = s.leaf_allowed[dst] = 1;
  for (int node : {g[src].node, g[dst].node}) {
    if (node < 0) continue;
    for (VertexId leaf : node_leaves_[node]) s.leaf_allowed[leaf] = 1;
  }
  const boost::filtered_graph<Graph, boost::keep_all, RouteDevices> fg(
      g, boost::keep_all(), RouteDevices{&node_of_, &leaf_, &s.leaf_allowed, g[src].node, g[dst].node});
  const auto index = boost::get(boost::vertex_index, g);
  auto weight = boost::make_function_property_map<Graph::edge_descriptor, double>(
      [&g](Graph::edge_descriptor e) { return link_weight(g, e); });
  s.touched.clear();
  s.touched.push_back(src);
  s.dist[src] = 0;
  // What dijkstra_shortest_paths_no_init does (its 4-ary heap, visitor and breadth-first visit,
  // so the same routes), with the heap's index map from the scratch.
  const auto pred = boost::make_iterator_property_map(s.pred.begin(), index);
  const auto dist = boost::make_iterator_property_map(s.dist.begin(), index);
  const auto heap_index = boost::make_iterator_property_map(s.heap_index.begin(), index);
  using Queue = boost::d_ary_heap_indirect<VertexId, 4, decltype(heap_index), decltype(dist), std::less<double>>;
  Queue queue(dist, heap_index, std::less<double>());
  bool settled = false;
  boost::detail::dijkstra_bfs_visitor<SearchVisitor, Queue, decltype(weight), decltype(pred), decltype(dist),
                                      boost::closed_plus<double>, std::less<double>>
      visitor(SearchVisitor{{}, dst, &s.touched, &s.pred_edge, &settled}, queue, weight, pred, dist,
              boost::closed_plus<double>(), std::less<double>(), 0.0);
  UntilSettled<Queue> until_settled{&queue, &settled};
  boost::breadth_first_visit(fg, &src, &src + 1, until_settled, visitor,
                             boost::make_iterator_property_map(s.color.begin(), index));
  const bool found = s.pred[dst] != dst;
  if (found) {
    for (VertexId v = dst; v != src; v = boost::source(s.pred_edge[v], g)) {
      if (g[boost::source(s.pred_edge[v], g)].kind == DeviceKind::network_switch)
        s.pred_edge[v] = ecmp_choice(g, fg, s, v, src_gpu, dst_gpu, s.pred_edge[v]);
      const Link& link = g[s.pred_edge[v]];
      info.links.push_back(link.id);
      info.bottleneck_bytes_per_s = std::min(info.bottleneck_bytes_per_s, link.bytes_per_s);
      info.latency_ns += link.latency_ns;
    }
    std::reverse(info.links.begin(), info.links.end());
  }
  s.leaf_allowed[src] = s.leaf_allowed[dst] = 0;
  for (int node : {g[src].node, g[dst].node}) {
    if (node < 0) continue;
    for (VertexId leaf : node_leaves_[node]) s.leaf_allowed[leaf] = 0;
  }
  for (VertexId v : s.touched) {
    s.heap_index[v] = 0;
    s.dist[v] = std::numeric_limits<double>::infinity();
    s.pred[v] = v;
    s.color[v] = boost::white_color;
  }
  if (!found)
    throw InputError(fmt::format("no route from {} to {}: the topology is disconnected", g[src].name, g[dst].name));
  return info;
}

void Router::check_connected() const {
  if (graph_.num_gpus() == 0) return;
  const Graph& g = graph_.graph();
  const VertexId gpu0 = graph_.gpu(0);
  const std::vector<bool> from0 = reachable(g, gpu0);
  const std::vector<bool> to0 = reachable(boost::make_reverse_graph(g), gpu0);
  for (int i = 1; i < graph_.num_gpus(); ++i) {
    const VertexId v = graph_.gpu(i);
    if (!from0[v]) {
      throw InputError(fmt::format("no route from {} to {}: the topology is disconnected",
                                   g[gpu0].name, g[v].name));
    }
    if (!to0[v]) {
      throw InputError(fmt::format("no route from {} to {}: the topology is disconnected",
                                   g[v].name, g[gpu0].name));
    }
  }
}

}  // namespace dtsim

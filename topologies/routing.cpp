// Router: GPU-to-GPU routes by Boost's Dijkstra with weight = kHopWeight per link + its latency,
// i.e. fewest hops first, then lowest total latency (exact in doubles: latencies sum far below
// kHopWeight), remaining ties resolved deterministically by Boost's vertex/edge order.
// Routes are computed on first request and cached per (src, dst) pair under a mutex.
#include "topologies/routing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
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

}  // namespace

const RouteInfo& Router::route(int src_gpu, int dst_gpu) const {
  const long long key = static_cast<long long>(src_gpu) * graph_.num_gpus() + dst_gpu;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;

  const Graph& g = graph_.graph();
  const VertexId src = graph_.gpu(src_gpu);
  const VertexId dst = graph_.gpu(dst_gpu);
  RouteInfo info;
  info.bottleneck_bytes_per_s = std::numeric_limits<double>::infinity();
  if (src != dst) {
    const auto n = boost::num_vertices(g);
    std::vector<double> dist(n);
    std::vector<VertexId> pred(n);
    std::vector<Graph::edge_descriptor> pred_edge(n);
    const auto index = boost::get(boost::vertex_index, g);
    auto weight = boost::make_function_property_map<Graph::edge_descriptor, double>(
        [&g](Graph::edge_descriptor e) { return kHopWeight + static_cast<double>(g[e].latency_ns); });
    boost::dijkstra_shortest_paths(
        g, src,
        boost::weight_map(weight)
            .distance_map(boost::make_iterator_property_map(dist.begin(), index))
            .predecessor_map(boost::make_iterator_property_map(pred.begin(), index))
            .visitor(boost::make_dijkstra_visitor(boost::record_edge_predecessors(
                boost::make_iterator_property_map(pred_edge.begin(), index), boost::on_edge_relaxed()))));
    if (pred[dst] == dst) {
      throw InputError(fmt::format("no route from {} to {}: the topology is disconnected",
                                   g[src].name, g[dst].name));
    }
    for (VertexId v = dst; v != src; v = boost::source(pred_edge[v], g)) {
      const Link& link = g[pred_edge[v]];
      info.links.push_back(link.id);
      info.bottleneck_bytes_per_s = std::min(info.bottleneck_bytes_per_s, link.bytes_per_s);
      info.latency_ns += link.latency_ns;
    }
    std::reverse(info.links.begin(), info.links.end());
  }
  return cache_.emplace(key, std::move(info)).first->second;
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

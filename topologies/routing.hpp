// Routes between GPUs: shortest paths over the cluster graph (fewest hops, ties broken by the
// lower total latency, then between equal switches by a deterministic ECMP hash of the GPU pair,
// else by vertex order), through fabric devices and the two end nodes only (and through a leaf
// switch only where it serves one of them), computed once per pair and cached.
#pragma once
#include <cstdint>
#include <deque>
#include <tbb/spin_mutex.h>
#include <span>
#include <utility>
#include <vector>

#include <boost/graph/properties.hpp>

#include "topologies/cluster_graph.hpp"

namespace dtsim {

// The ECMP hash of a route choice: splitmix64 of the (source, destination) GPU pair, salted by
// the vertex where the equal-cost ways in are chosen between. Fixed: routes are the same run to
// run, in any order of requests and on any number of threads.
std::uint64_t ecmp_hash(int src_gpu, int dst_gpu, VertexId at);

struct RouteInfo {
  std::vector<int> links;       // link ids from source to destination
  double bottleneck_bytes_per_s = 0;  // slowest link on the route
  TimeNs latency_ns = 0;        // sum of link latencies
  int id = -1;                  // its index among the router's cached routes (a key for caches of routes)
};

class Router {
 public:
  explicit Router(const ClusterGraph& graph);
  // Thread-safe: searches run in parallel, the cache is shared. Throws InputError naming both
  // devices when no path exists.
  const RouteInfo& route(int src_gpu, int dst_gpu) const;
  // Checks every GPU reaches GPU 0 and GPU 0 reaches every GPU; throws InputError otherwise.
  void check_connected() const;

 private:
  // The route's search, outside the lock (each thread has its own scratch).
  RouteInfo search(int src_gpu, int dst_gpu) const;

  const ClusterGraph& graph_;
  std::vector<int> node_of_;  // per vertex: Device::node, flat (searches test it for every edge they examine)
  // Per vertex: 1 for a leaf switch, a fabric device with at most one fabric neighbour (a ToR
  // under one pod vertex, a leaf under a collapsed spine). A simple path can cross it only from
  // or to a device of a node it serves, so a search skips the leaves that serve neither end node.
  std::vector<char> leaf_;
  std::vector<std::vector<VertexId>> node_leaves_;  // per node index: the leaf switches its devices link to
  mutable tbb::spin_mutex mutex_;  // held for a lookup or an insertion only, never for a search
  // Cached routes (a deque keeps references stable); per source GPU, (destination, route)
  // sorted by destination: a route lookup reads one small contiguous list, not a hash node.
  mutable std::deque<RouteInfo> routes_;
  mutable std::vector<std::vector<std::pair<int, const RouteInfo*>>> by_src_;
};

}  // namespace dtsim

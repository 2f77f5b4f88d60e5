// GraphViz DOT reading and writing of a ClusterGraph (Boost.Graph's graphviz support).
// Vertex attributes: kind (gpu|nvswitch|pcie_switch|cpu|nic|network_switch), node (int).
// Edge attributes: kind (link kind name), bandwidth_GBps (per direction), latency_ns.
// Edges are directed; a duplex link is two edges. GPUs are numbered in file order.
#pragma once
#include <iosfwd>
#include <string>

#include "topologies/cluster_graph.hpp"

namespace dtsim {

void write_dot(const ClusterGraph& graph, std::ostream& out);
// Throws InputError naming the file (and the vertex/edge/attribute) on any problem.
ClusterGraph read_dot(const std::string& path);
// The same from the file's text; `name` stands for the file in messages.
ClusterGraph read_dot_text(const std::string& text, const std::string& name);
// Throws InputError naming file `path` and the first GPU without a node (a file where no GPU has
// "node" reads, for drawing, but cannot be simulated).
void require_gpu_nodes(const ClusterGraph& graph, const std::string& path);

}  // namespace dtsim

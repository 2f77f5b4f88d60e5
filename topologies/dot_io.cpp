// DOT I/O for ClusterGraph. Writing uses boost::write_graphviz_dp; reading parses with
// boost::read_graphviz into a graph of string attributes, validates them, and rebuilds a
// ClusterGraph. Boost's parser keeps vertices sorted by name, so the file order that numbers the
// GPUs is recovered by a small scan for each vertex id's first appearance in the file.
// Vertex attribute `node` is optional (default -1; a DOT keyword, so files quote it: "node"=3), but
// a GPU's is 0 or more and, once one GPU has a node, every GPU needs one; edge `latency_ns` is optional (default 0); `kind` and
// `bandwidth_GBps` are required. Other attributes (label, color...) are ignored. Before Boost
// parses the text, braces nested deeper than kMaxDotNesting are refused (Boost's parser recurses
// per level) and an unquoted attribute value such as 1e30, which Boost's lexer would read as the
// number 1 followed by the name e30, is quoted so that it is read whole.
#include "topologies/dot_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/graphviz.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "sim/base/error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/input_file.hpp"

namespace dtsim {
namespace {

struct DotVertex {
  std::string name, kind, node;
};
struct DotEdge {
  std::string kind, bandwidth, latency;
};
using DotGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, DotVertex, DotEdge>;

bool is_id_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Position (token index) of each vertex id's first appearance as a statement operand, skipping
// comments and attribute names/values (tokens next to '=').
std::map<std::string, std::size_t> first_appearance(const std::string& text) {
  std::vector<std::string> tokens;
  std::vector<bool> is_id;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0 || (c == '#' && (i == 0 || text[i - 1] == '\n'))) {
      i = std::min(text.find('\n', i), text.size());
    } else if (text.compare(i, 2, "/*") == 0) {
      i = std::min(text.find("*/", i + 2), text.size()) + 2;
    } else if (c == '"') {
      std::string s;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '"') ++i;
        s += text[i];
      }
      ++i;
      tokens.push_back(std::move(s));
      is_id.push_back(true);
    } else if (is_id_char(c)) {
      const std::size_t start = i;
      while (i < text.size() && is_id_char(text[i])) ++i;
      tokens.push_back(text.substr(start, i - start));
      is_id.push_back(true);
    } else {
      tokens.emplace_back(1, c);
      is_id.push_back(false);
      ++i;
    }
  }
  std::map<std::string, std::size_t> first;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const bool attr = (t + 1 < tokens.size() && !is_id[t + 1] && tokens[t + 1] == "=") ||
                      (t > 0 && !is_id[t - 1] && tokens[t - 1] == "=");
    if (is_id[t] && !attr) first.emplace(tokens[t], t);
  }
  return first;
}

double parse_number(const std::string& text, const std::string& what) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw InputError(fmt::format("{} = '{}': not a number", what, text));
  }
  return value;
}

// Braces nested deeper than this (subgraphs in subgraphs) are refused before parsing.
constexpr int kMaxDotNesting = 64;

bool plain_numeral(const std::string& s) {  // DOT's numeral: [-]?(.[0-9]+|[0-9]+(.[0-9]*)?)
  std::size_t i = s.size() > 0 && s[0] == '-' ? 1 : 0;
  const std::size_t start = i;
  bool digits = false, dot = false;
  for (; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) digits = true;
    else if (s[i] == '.' && !dot) dot = true;
    else return false;
  }
  return digits && i > start;
}

// `text` with every unquoted attribute value that is neither a DOT name nor a DOT numeral (1e30,
// 1e-3, 2.5e+2) quoted; throws InputError when braces nest deeper than kMaxDotNesting.
std::string prepare(const std::string& text, const std::string& path) {
  std::string out;
  out.reserve(text.size());
  int depth = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      i = std::min(i + 1, text.size());
      out.append(text, start, i - start);
    } else if (text.compare(i, 2, "//") == 0 || (c == '#' && (i == 0 || text[i - 1] == '\n'))) {
      const std::size_t end = std::min(text.find('\n', i), text.size());
      out.append(text, i, end - i);
      i = end;
    } else if (text.compare(i, 2, "/*") == 0) {
      const std::size_t end = std::min(text.find("*/", i + 2), text.size() - 2) + 2;
      out.append(text, i, end - i);
      i = end;
    } else if (c == '=') {
      out += c;
      for (++i; i < text.size() && std::isspace(static_cast<unsigned char>(text[i])); ++i) out += text[i];
      std::size_t end = i;
      while (end < text.size() && (is_id_char(text[end]) || text[end] == '-' || text[end] == '+')) ++end;
      const std::string value = text.substr(i, end - i);
      const bool name = !value.empty() && !std::isdigit(static_cast<unsigned char>(value[0])) && value[0] != '-' &&
                        value[0] != '.' && value[0] != '+' && value.find_first_of("+-.") == std::string::npos;
      out += value.empty() || name || plain_numeral(value) ? value : "\"" + value + "\"";
      i = end;
    } else {
      if (c == '{' && ++depth > kMaxDotNesting)
        throw InputError(fmt::format("{}: braces (subgraphs) nested more than {} deep", path, kMaxDotNesting));
      if (c == '}') --depth;
      out += c;
      ++i;
    }
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in = open_input_file(path, "a topology (.dot) file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

void write_dot(const ClusterGraph& graph, std::ostream& out) {
  const Graph& g = graph.graph();
  using E = Graph::edge_descriptor;
  boost::dynamic_properties dp;
  dp.property("node_id", boost::make_function_property_map<VertexId, std::string>(
                             [&g](VertexId v) { return g[v].name; }));
  dp.property("kind", boost::make_function_property_map<VertexId, std::string>(
                          [&g](VertexId v) { return std::string(device_kind_name(g[v].kind)); }));
  // `node` is a DOT keyword: as an attribute name it must be quoted ("node"=3).
  dp.property("\"node\"", boost::make_function_property_map<VertexId, int>([&g](VertexId v) { return g[v].node; }));
  dp.property("kind", boost::make_function_property_map<E, std::string>(
                          [&g](E e) { return std::string(link_kind_name(g[e].kind)); }));
  dp.property("bandwidth_GBps", boost::make_function_property_map<E, std::string>(
                                    [&g](E e) { return fmt::format("{}", g[e].bytes_per_s / 1e9); }));
  dp.property("latency_ns", boost::make_function_property_map<E, TimeNs>([&g](E e) { return g[e].latency_ns; }));
  boost::write_graphviz_dp(out, g, dp, "node_id");
}

void require_gpu_nodes(const ClusterGraph& graph, const std::string& path) {
  for (int i = 0; i < graph.num_gpus(); ++i)
    if (graph.node_of_gpu(i) < 0)
      throw InputError(fmt::format("{}: vertex '{}': missing attribute \"node\" (a GPU's node index, 0 to {}): "
                                   "every GPU of a simulated machine needs one",
                                   path, graph.device(graph.gpu(i)).name, limits::kMaxGpus));
}

ClusterGraph read_dot(const std::string& path) { return read_dot_text(read_file(path), path); }

ClusterGraph read_dot_text(const std::string& text, const std::string& path) {
  DotGraph dot;
  boost::dynamic_properties dp(boost::ignore_other_properties);
  dp.property("node_id", boost::get(&DotVertex::name, dot));
  dp.property("kind", boost::get(&DotVertex::kind, dot));
  dp.property("node", boost::get(&DotVertex::node, dot));
  dp.property("kind", boost::get(&DotEdge::kind, dot));
  dp.property("bandwidth_GBps", boost::get(&DotEdge::bandwidth, dot));
  dp.property("latency_ns", boost::get(&DotEdge::latency, dot));
  const std::string prepared = prepare(text, path);
  try {
    boost::read_graphviz(prepared, dot, dp, "node_id");
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: cannot parse the DOT graph: {}", path, e.what()));
  }
  if (boost::num_vertices(dot) > static_cast<std::size_t>(limits::kMaxDevices))
    throw InputError(fmt::format("{}: {} devices: at most {} can be simulated", path, boost::num_vertices(dot),
                                 limits::kMaxDevices));

  // Vertices in file order.
  const auto first = first_appearance(text);
  std::vector<DotGraph::vertex_descriptor> order;
  for (auto v : boost::make_iterator_range(boost::vertices(dot))) order.push_back(v);
  auto position = [&](DotGraph::vertex_descriptor v) {
    const auto it = first.find(dot[v].name);
    return it == first.end() ? std::numeric_limits<std::size_t>::max() : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return position(a) < position(b); });

  const bool any_gpu_node = std::any_of(order.begin(), order.end(), [&](auto v) {
    return dot[v].kind == "gpu" && !dot[v].node.empty();
  });
  ClusterGraph graph;
  std::vector<VertexId> id(boost::num_vertices(dot));
  for (auto v : order) {
    const DotVertex& dv = dot[v];
    const std::string what = fmt::format("{}: vertex '{}'", path, dv.name);
    if (dv.kind.empty()) throw InputError(fmt::format("{}: missing attribute kind", what));
    Device device;
    device.name = dv.name;
    device.kind = parse_device_kind(dv.kind, what + " kind");
    const bool gpu = device.kind == DeviceKind::gpu;
    if (gpu && dv.node.empty() && any_gpu_node)
      throw InputError(fmt::format("{}: missing attribute \"node\" (other GPUs have one; a GPU's node index, 0 to {})",
                                   what, limits::kMaxGpus));
    if (!dv.node.empty()) {
      const double node = parse_number(dv.node, what + " node");
      const int lowest = gpu ? 0 : -1;
      if (!(node >= lowest && node <= limits::kMaxGpus) || node != std::floor(node)) {
        throw InputError(fmt::format("{} node = '{}': must be an integer from {} to {}{}", what, dv.node, lowest,
                                     limits::kMaxGpus, gpu ? " for a GPU" : ""));
      }
      device.node = static_cast<int>(node);
    }
    id[v] = graph.add_device(std::move(device));
  }
  for (auto e : boost::make_iterator_range(boost::edges(dot))) {
    const DotEdge& de = dot[e];
    const std::string what = fmt::format("{}: edge '{}' -> '{}'", path, dot[boost::source(e, dot)].name,
                                         dot[boost::target(e, dot)].name);
    if (de.kind.empty()) throw InputError(fmt::format("{}: missing attribute kind", what));
    if (de.bandwidth.empty()) throw InputError(fmt::format("{}: missing attribute bandwidth_GBps", what));
    const LinkKind kind = parse_link_kind(de.kind, what + " kind");
    const double gbps = parse_number(de.bandwidth, what + " bandwidth_GBps");
    if (!(gbps >= limits::kMinLinkGBps && gbps <= limits::kMaxLinkGBps))
      throw InputError(fmt::format("{} bandwidth_GBps = {}: must be between {} and {}", what, de.bandwidth,
                                   limits::kMinLinkGBps, limits::kMaxLinkGBps));
    const double latency = de.latency.empty() ? 0 : parse_number(de.latency, what + " latency_ns");
    if (!(latency >= 0 && latency <= limits::kMaxLatencyNs))
      throw InputError(fmt::format("{} latency_ns = {}: must be between 0 and {:.0e}", what, de.latency,
                                   limits::kMaxLatencyNs));
    graph.add_link(id[boost::source(e, dot)], id[boost::target(e, dot)], kind, gbps * 1e9,
                   static_cast<TimeNs>(std::llround(latency)));
  }
  return graph;
}

}  // namespace dtsim

// Rings through the NICs, protocol latency and wire efficiency of NCCL-style collectives.
#include "sim/network/comm_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/base/error.hpp"
#include "sim/network/nvls.hpp"

namespace dtsim {

double achievable_fraction(LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink2:
    case LinkKind::nvlink3: return 0.78;   // 8xA100 ring all-reduce 234.9 of 300 GB/s (MLENG)
    case LinkKind::nvlink4: return 0.815;  // 8xH200 ring all-reduce 367.2 of 450 GB/s, NVLS off (MLENG)
    case LinkKind::nvlink5: return 0.76;   // 8xB200 all-reduce 682.2 of 900 GB/s, NVLS off (MLENG)
    case LinkKind::nvlink_bridge: return 0.40;  // 2xH100 PCIe bridge 116 of 300; 2x2080Ti 21 of 50
    case LinkKind::pcie3:
    case LinkKind::pcie4:
    case LinkKind::pcie5:
    case LinkKind::pcie6: return 0.80;     // H200 H2D 55.4 of 63 GB/s (0.88) less NCCL protocol cost
    case LinkKind::upi: return 0.60;       // NCCL falls back to host-memory copies across sockets
    case LinkKind::infiniband:
    case LinkKind::ethernet: return 0.95;  // ib_write_bw 96.9 % (MLENG); 4x8 B200 over 8x400G EFA: 381.8 GB/s bus = 0.95 per NIC
    // NCCL over Omni-Path's verbs (hfi1, no GPUDirect RDMA, no network plugin): BigScience's
    // all_reduce_bench on Jean Zay's A100 nodes, 4 x 8 GPUs, NCCL 2.10.3 (bigscience
    // experiments/bandwidth/all_reduce_bench-a100-n4.txt, Jan 2022): bus bandwidth 40.5 Gb/s, and
    // both of NCCL's rings leave each node through NIC 3 and enter through NIC 1 ("Channel 00/01
    // ... via NET/IB/3", "NET/IB/1"), so one NIC carried 40.5 of its 100 Gb/s each way.
    case LinkKind::omnipath: return 0.405;
  }
  return 1.0;
}

std::string_view protocol_name(Protocol p) {
  return p == Protocol::ll ? "ll" : p == Protocol::ll128 ? "ll128" : "simple";
}

namespace {
constexpr Algorithm kAlgorithms[] = {Algorithm::ring, Algorithm::tree, Algorithm::hierarchical, Algorithm::nvls,
                                     Algorithm::nvls_tree};
}  // namespace

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::nvls: return "nvls";
    case Algorithm::nvls_tree: return "nvls_tree";
  }
  return "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view text, std::string_view key) {
  if (text == "auto") return std::nullopt;
  for (Algorithm a : kAlgorithms)
    if (text == algorithm_name(a)) return a;
  throw InputError(
      fmt::format("{} = '{}': valid values are auto, ring, tree, hierarchical, nvls, nvls_tree", key, text));
}

std::optional<Protocol> parse_protocol(std::string_view text, std::string_view key) {
  if (text == "auto") return std::nullopt;
  if (text == "ll") return Protocol::ll;
  if (text == "ll128") return Protocol::ll128;
  if (text == "simple") return Protocol::simple;
  throw InputError(fmt::format("{} = '{}': valid values are auto, ll, ll128, simple", key, text));
}

namespace {

HopClass class_of(LinkKind k) {
  switch (k) {
    case LinkKind::infiniband:
    case LinkKind::omnipath:
    case LinkKind::ethernet: return HopClass::network;
    case LinkKind::pcie3:
    case LinkKind::pcie4:
    case LinkKind::pcie5:
    case LinkKind::pcie6:
    case LinkKind::upi: return HopClass::pcie;
    default: return HopClass::nvlink;
  }
}

PathParams params_of(const ClusterGraph& graph, const RouteInfo& route) {
  PathParams p;
  p.bytes_per_s = std::numeric_limits<double>::infinity();
  for (int id : route.links) {
    const Link& l = graph.link(id);
    p.bytes_per_s = std::min(p.bytes_per_s, l.bytes_per_s * achievable_fraction(l.kind));
    p.hop_class = std::max(p.hop_class, class_of(l.kind));
    if (graph.device(graph.link_target(id)).kind == DeviceKind::cpu) p.hop_class = std::max(p.hop_class, HopClass::host);
  }
  p.latency_ns = route.latency_ns;
  return p;
}

}  // namespace

CommModel::CommModel(const ClusterGraph& graph, const Router& router, std::optional<Protocol> forced,
                     std::optional<Algorithm> forced_algorithm, const NcclProfile& nccl)
    : graph_(graph), router_(router), forced_(forced), forced_algorithm_(forced_algorithm), nccl_(nccl),
      nics_per_node_(graph.num_nodes(), 0) {
  if (forced_algorithm == Algorithm::nvls || forced_algorithm == Algorithm::nvls_tree) {
    const std::string_view name = algorithm_name(*forced_algorithm);
    const bool tree = forced_algorithm == Algorithm::nvls_tree;
    if (!(tree ? nccl.nvls_tree : nccl.nvls))
      throw InputError(fmt::format("NCCL algorithm '{}' (cluster.nccl_algorithm, --algo): NCCL {} has no {}; it came "
                                   "with {} (cluster.nccl_version, --nccl)",
                                   name, nccl.releases, tree ? "NVLS tree" : "NVLS", tree ? "2.18" : "2.17"));
    if (!nvls::graph_has_nvls(graph))
      throw InputError(fmt::format(
          "NCCL algorithm '{}' (cluster.nccl_algorithm, --algo): this cluster has no NVLS (NVLink SHARP) switches; "
          "NVLS needs GPUs with NVLink 4 or later (H100, H200, B200, GB200) on NVSwitches (cluster.node_kind = "
          "nvswitch or nvl72)",
          name));
    if (forced && *forced != Protocol::simple)
      throw InputError(fmt::format("NCCL algorithm '{}' runs the simple protocol only; cluster.nccl_protocol = {} "
                                   "cannot run with it (use auto or simple)",
                                   name, protocol_name(*forced)));
  }
  for (auto v : boost::make_iterator_range(boost::vertices(graph.graph()))) {
    const Device& d = graph.device(v);
    if (d.kind == DeviceKind::nic && d.node >= 0) ++nics_per_node_[d.node];
  }
}

PathParams CommModel::path(int src_gpu, int dst_gpu) const {
  return params_of(graph_, router_.route(src_gpu, dst_gpu));
}

RingSet CommModel::rings(std::span<const int> gpus) const {
  RingSet set;
  const int n = static_cast<int>(gpus.size());
  // Members per node (contiguous runs) decide the channels: one ring per NIC a node's members
  // can use, when the group crosses nodes.
  std::vector<std::span<const int>> nodes;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && graph_.node_of_gpu(gpus[j]) == graph_.node_of_gpu(gpus[i])) ++j;
    nodes.push_back(gpus.subspan(i, j - i));
    i = j;
  }
  set.members_per_node = static_cast<int>(nodes.front().size());
  for (std::span<const int> members : nodes)
    if (static_cast<int>(members.size()) != set.members_per_node) set.members_per_node = 0;
  int channels = 1;
  if (nodes.size() > 1) {
    channels = std::numeric_limits<int>::max();
    for (std::span<const int> members : nodes) {
      const int nics = std::max(1, nics_per_node_[graph_.node_of_gpu(members.front())]);
      channels = std::min({channels, nics, static_cast<int>(members.size())});
    }
  }
  for (int c = 0; c < channels; ++c) {
    std::vector<int> ring;
    for (std::span<const int> members : nodes) {
      const int m = static_cast<int>(members.size());
      for (int i = 0; i < m; ++i) ring.push_back(members[(i + c) % m]);
    }
    set.rings.push_back(std::move(ring));
  }
  std::vector<std::pair<int, int>> hops;
  for (const std::vector<int>& ring : set.rings) {
    set.hop_routes.emplace_back();
    for (int i = 0; i < n && n > 1; ++i) {
      hops.emplace_back(ring[i], ring[(i + 1) % n]);
      set.hop_routes.back().push_back(&router_.route(ring[i], ring[(i + 1) % n]));
    }
  }
  const PhaseShape all = shape_of(hops);
  if (nodes.size() == 1 && n >= 3) {
    set.nvls = nvls::fabric_of(graph_, *set.hop_routes.front().front());
    for (const RouteInfo* route : set.hop_routes.front())
      if (nvls::fabric_of(graph_, *route) != set.nvls) set.nvls = NvlsFabric::none;
  }
  set.bytes_per_s = all.bytes_per_s;
  set.latency_ns = all.latency_ns;
  set.hop_class = all.hop_class;
  if (set.members_per_node >= 2 && set.nodes() >= 2) {
    const int m = set.members_per_node, nodes = set.nodes();
    const std::vector<int>& order = set.rings.front();
    hops.clear();
    for (int node = 0; node < nodes; ++node)
      for (int i = 0; i < m; ++i) hops.emplace_back(order[node * m + i], order[node * m + (i + 1) % m]);
    set.intra = shape_of(hops);
    hops.clear();
    for (int i = 0; i < m; ++i)
      for (int node = 0; node < nodes; ++node) hops.emplace_back(order[node * m + i], order[(node + 1) % nodes * m + i]);
    set.inter = shape_of(hops);
    if (m >= 3) {
      set.nvls_intra = nvls::fabric_of(graph_, router_.route(order[0], order[1]));
      for (int node = 0; node < nodes; ++node)
        for (int i = 0; i < m; ++i)
          if (nvls::fabric_of(graph_, router_.route(order[node * m + i], order[node * m + (i + 1) % m])) != set.nvls_intra)
            set.nvls_intra = NvlsFabric::none;
    }
  }
  return set;
}

PhaseShape CommModel::shape_of(std::span<const std::pair<int, int>> hops) const {
  PhaseShape shape;
  shape.bytes_per_s = std::numeric_limits<double>::infinity();
  std::vector<int> links;
  for (const auto& [src, dst] : hops) {
    const RouteInfo& route = router_.route(src, dst);
    const PathParams p = params_of(graph_, route);
    shape.latency_ns = std::max(shape.latency_ns, p.latency_ns);
    shape.hop_class = std::max(shape.hop_class, p.hop_class);
    links.insert(links.end(), route.links.begin(), route.links.end());
  }
  std::sort(links.begin(), links.end());
  for (std::size_t i = 0; i < links.size();) {
    std::size_t j = i;
    while (j < links.size() && links[j] == links[i]) ++j;
    const Link& l = graph_.link(links[i]);
    shape.bytes_per_s = std::min(shape.bytes_per_s, l.bytes_per_s * achievable_fraction(l.kind) / static_cast<double>(j - i));
    i = j;
  }
  return shape;
}

double CommModel::bytes_per_hop(CommKind kind, double bytes, int n) {
  if (n <= 1) return 0;
  switch (kind) {
    case CommKind::all_reduce: return 2.0 * (n - 1) / n * bytes;
    case CommKind::reduce_scatter:
    case CommKind::all_gather: return 1.0 * (n - 1) / n * bytes;
    case CommKind::send:
    case CommKind::recv:
    case CommKind::broadcast: return bytes;
    case CommKind::all_to_all: return 1.0 * (n - 1) / n * bytes;  // what each rank sends
    case CommKind::two_hop: return bytes;  // what each rank sends over the network
    case CommKind::none: return 0;
  }
  return 0;
}

int CommModel::steps(CommKind kind, int n) {
  if (kind == CommKind::all_reduce) return 2 * (n - 1);
  if (kind == CommKind::send || is_all_to_all(kind)) return 1;
  return n - 1;
}

int CommModel::tree_steps(const RingSet& set) {
  const int depth = static_cast<int>(std::floor(std::log2(std::max(set.nodes(), 1))));
  return 2 * (depth + set.members_per_node - 1);
}

bool CommModel::tree_applies(CommKind kind, const RingSet& set) {
  return kind == CommKind::all_reduce && set.nodes() >= 2;
}

bool CommModel::hierarchical_applies(CommKind kind, const RingSet& set) {
  return (kind == CommKind::all_reduce || kind == CommKind::reduce_scatter || kind == CommKind::all_gather) &&
         set.nodes() >= 2 && set.members_per_node >= 2;
}

std::vector<CommModel::Phase> CommModel::hierarchical_phases(CommKind kind, double bytes, const RingSet& set) {
  const int m = set.members_per_node, nodes = set.nodes();
  const Phase scatter{CommKind::reduce_scatter, bytes, m, true}, gather{CommKind::all_gather, bytes, m, true};
  switch (kind) {
    case CommKind::all_reduce: return {scatter, Phase{CommKind::all_reduce, bytes / m, nodes, false}, gather};
    case CommKind::reduce_scatter: return {scatter, Phase{CommKind::reduce_scatter, bytes / m, nodes, false}};
    case CommKind::all_gather: return {Phase{CommKind::all_gather, bytes / m, nodes, false}, gather};
    default: return {};
  }
}

CollectiveCost CommModel::hierarchical_cost(Protocol p, CommKind kind, double bytes, const RingSet& set) const {
  const int pi = static_cast<int>(p);
  CollectiveCost c;
  c.algorithm = Algorithm::hierarchical;
  c.protocol = p;
  c.wire_factor = kWireFactor[pi];
  if (set.intra.hop_class == HopClass::host) {
    c.wire_factor *= kHostStagingFactor;
    if (kind == CommKind::all_reduce || kind == CommKind::reduce_scatter) c.wire_factor *= kHostReductionFactor;
  }
  const std::vector<Phase> phases = hierarchical_phases(kind, bytes, set);
  c.phases = static_cast<int>(phases.size());
  double total_s = 0;
  for (std::size_t k = 0; k < phases.size(); ++k) {
    const Phase& ph = phases[k];
    const PhaseShape& shape = ph.intra ? set.intra : set.inter;
    const int steps_n = steps(ph.kind, ph.n);
    double tail_s = 1e-9 * (nccl_.base_ns[pi] + steps_n * (nccl_.hop_ns[static_cast<int>(shape.hop_class)][pi] + shape.latency_ns));
    if (p == Protocol::simple) tail_s += steps_n * std::min(kSimpleSliceBytes, ph.bytes / ph.n) / shape.bytes_per_s;
    c.phase_tail_ns[k] = seconds_to_ns(tail_s);
    c.tail_ns += c.phase_tail_ns[k];
    total_s += tail_s + bytes_per_hop(ph.kind, ph.bytes, ph.n) / (shape.bytes_per_s * c.wire_factor);
  }
  c.estimate_ns = seconds_to_ns(total_s);
  return c;
}

CollectiveCost CommModel::cost_with(Algorithm a, Protocol p, CommKind kind, double bytes, const RingSet& set) const {
  if (a == Algorithm::hierarchical) return hierarchical_cost(p, kind, bytes, set);
  if (a == Algorithm::nvls) return nvls::cost(kind, bytes, set, nccl_);
  if (a == Algorithm::nvls_tree) return nvls::tree_cost(bytes, set, nccl_);
  const int n = set.members(), k = static_cast<int>(set.rings.size());
  const int pi = static_cast<int>(p), ci = static_cast<int>(set.hop_class);
  const bool tree = a == Algorithm::tree;
  const int steps_n = tree ? tree_steps(set) : steps(kind, n);
  // Each channel's part of the message; a tree channel carries half of it on each of its trees.
  const double share = bytes / k / (tree ? 2 : 1);
  const double slice = tree ? share : share / n;  // what one pipeline step moves
  double tail_s = 1e-9 * (nccl_.base_ns[pi] + steps_n * (nccl_.hop_ns[ci][pi] + set.latency_ns));
  if (p == Protocol::simple) tail_s += steps_n * std::min(kSimpleSliceBytes, slice) / set.bytes_per_s;
  CollectiveCost c;
  c.algorithm = a;
  c.protocol = p;
  c.wire_factor = kWireFactor[pi] * (tree ? kTreeEfficiency : 1.0);
  if (set.hop_class == HopClass::host) {
    c.wire_factor *= kHostStagingFactor;
    if (kind == CommKind::all_reduce || kind == CommKind::reduce_scatter) c.wire_factor *= kHostReductionFactor;
  }
  c.tail_ns = seconds_to_ns(tail_s);
  c.phase_tail_ns[0] = c.tail_ns;
  // The busiest direction of a tree: an inner node's head sends up once and down to two
  // children on one tree, and up once on the other: 4 shares.
  const double busiest = tree ? 4 * share : bytes_per_hop(kind, share, n);
  c.estimate_ns = seconds_to_ns(tail_s + busiest / (set.bytes_per_s * c.wire_factor));
  return c;
}

CollectiveCost CommModel::two_hop_cost(double bytes, double forward_bytes, const RingSet& set) const {
  // With ranks on several nodes and several in each, the hops' flows are those of the two
  // hierarchical phases (rails across the nodes, each node's NVLink); else the group's own.
  const bool both = set.members_per_node >= 2 && set.nodes() >= 2;
  const PhaseShape group{set.bytes_per_s, set.latency_ns, set.hop_class};
  const PhaseShape& out = both ? set.inter : group;
  const PhaseShape& up = both ? set.intra : group;
  // The slower hop's latency: the network's whenever the group spans nodes.
  const PhaseShape& slow = set.nodes() >= 2 ? out : up;
  const int pi = static_cast<int>(Protocol::simple);
  const double tail_s = 1e-9 * (nccl_.base_ns[pi] + nccl_.hop_ns[static_cast<int>(slow.hop_class)][pi] + slow.latency_ns);
  CollectiveCost c;
  c.tail_ns = seconds_to_ns(tail_s);
  c.phase_tail_ns[0] = c.tail_ns;
  c.estimate_ns = seconds_to_ns(tail_s + std::max(bytes / out.bytes_per_s, forward_bytes / up.bytes_per_s));
  return c;
}

CollectiveCost CommModel::cost(CommKind kind, double bytes, const RingSet& set, double forward_bytes) const {
  if (kind == CommKind::two_hop) return two_hop_cost(bytes, forward_bytes, set);
  std::vector<Algorithm> algorithms = {Algorithm::ring};
  if (tree_applies(kind, set)) algorithms.push_back(Algorithm::tree);
  if (hierarchical_applies(kind, set)) algorithms.push_back(Algorithm::hierarchical);
  if (nvls::applies(kind, set, nccl_)) algorithms.push_back(Algorithm::nvls);
  if (nvls::tree_applies(kind, set, nccl_)) algorithms.push_back(Algorithm::nvls_tree);
  // A forced algorithm where it applies; the ring where it does not.
  if (forced_algorithm_ && std::find(algorithms.begin(), algorithms.end(), *forced_algorithm_) != algorithms.end())
    algorithms = {*forced_algorithm_};
  else if (forced_algorithm_)
    algorithms = {Algorithm::ring};
  std::vector<Protocol> protocols = {Protocol::ll, Protocol::ll128, Protocol::simple};
  if (forced_) protocols = {*forced_};
  CollectiveCost best;
  best.estimate_ns = std::numeric_limits<TimeNs>::max();
  for (Algorithm a : algorithms)
    for (Protocol p : protocols) {
      if ((a == Algorithm::nvls || a == Algorithm::nvls_tree) && p != Protocol::simple) continue;  // Simple only
      const CollectiveCost c = cost_with(a, p, kind, bytes, set);
      if (c.estimate_ns < best.estimate_ns) best = c;
    }
  return best;
}

TimeNs CommModel::send_tail(const PathParams& p) const {
  const int ci = static_cast<int>(p.hop_class), pi = static_cast<int>(Protocol::simple);
  return nccl_.base_ns[pi] + nccl_.hop_ns[ci][pi] + p.latency_ns;
}

}  // namespace dtsim

// Communication model: NCCL-style ring collectives and point-to-point sends over the graph's
// routes.
//
// A group's collective runs on one ring per channel: inside a node the ring visits the members
// in order; a group that spans nodes gets one ring per NIC the members can use, each rotated so
// that it leaves and enters every node through a different NIC (as NCCL's rings do on DGX-like
// machines), and each carries its share of the bytes. Each hop's flow has the bytes that hop
// moves over the whole algorithm (2(n-1)/n S for all-reduce, (n-1)/n S for reduce-scatter and
// all-gather), divided by the protocol's wire efficiency; the flow network shares links.
//
// On top of the bandwidth term the protocol adds a latency tail: a launch/setup base, a per-step
// hop latency (by the class of the slowest hop: NVLink, PCIe, network) and, for the Simple
// protocol, the pipeline fill: every step must first fill one slice (NCCL's 4 MiB channel
// buffer, or the message's per-rank share if smaller) before the next hop can drain it. The
// protocol (LL, LL128, Simple) is the fastest by this estimate unless forced. All-reduces across
// nodes may also run as NCCL's double binary tree (fewer latency steps: 2 (log2 nodes + chain)
// instead of 2 (n - 1)), or hierarchically: a reduce-scatter inside every node, an all-reduce of
// each local rank's shard across the nodes (every local rank on its own NIC, all at once), and
// an all-gather inside every node, three phases one after the other, each with its own latency
// tail (reduce-scatter and all-gather likewise in two phases). Inside one NVLink domain of
// NVLink 4+ GPUs on NVLink switches the switches may reduce (NVLS, sim/network/nvls.hpp). The
// algorithm is the fastest by the estimate unless forced; estimates count the links a
// collective's own flows share (two rings through one NIC get half of it each). The achievable
// fractions are per link kind; the latency constants per hop class and protocol belong to the
// NCCL release (sim/network/nccl_profile.hpp), each fitted on a measured sweep of its era and
// checked on the other rows (tests/collectives_validation_test).
#pragma once
#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "sim/base/units.hpp"
#include "sim/network/nccl_profile.hpp"
#include "topologies/cluster_graph.hpp"
#include "topologies/routing.hpp"
#include "workloads/program.hpp"

namespace dtsim {

// Fraction of a link's wire rate that NCCL-style transfers reach, per link kind. Calibrated per
// kind on shared/validation/collectives.csv (see comm_model.cpp), never per row.
double achievable_fraction(LinkKind kind);

enum class Protocol : std::uint8_t { ll, ll128, simple };
// tree: NCCL's double binary tree for all-reduce across nodes (a chain inside each node, two
// complementary binary trees over the nodes, each carrying half the data). hierarchical:
// intra-node reduce-scatter, inter-node all-reduce of each local rank's shard, intra-node
// all-gather (reduce-scatter and all-gather: the first two / the last two phases). nvls: the
// NVLink switches reduce (sim/network/nvls.hpp), inside one NVLink domain; nvls_tree: an
// all-reduce with NVLS inside each domain and trees between the domains' heads.
enum class Algorithm : std::uint8_t { ring, tree, hierarchical, nvls, nvls_tree };
// host: GPU-to-GPU through a CPU without peer-to-peer, staged in host memory (NCCL's SHM path).
enum class HopClass : std::uint8_t { nvlink, pcie, host, network };
// The switches an NVLS collective reduces in: none (no NVLS), an HGX baseboard's NVSwitches, or
// a rack's NVLink switch tier (NVL72).
enum class NvlsFabric : std::uint8_t { none, nvswitch, rack };
std::string_view protocol_name(Protocol p);
std::string_view algorithm_name(Algorithm a);
// "auto" gives nullopt (the model chooses); throw InputError naming the key otherwise.
std::optional<Protocol> parse_protocol(std::string_view text, std::string_view key);
std::optional<Algorithm> parse_algorithm(std::string_view text, std::string_view key);

struct PathParams {
  double bytes_per_s = 0;  // effective bandwidth of the slowest link
  TimeNs latency_ns = 0;   // route latency
  HopClass hop_class = HopClass::nvlink;
};

// The rate, latency and class of a set of flows running at once (a phase of a collective):
// bytes_per_s is what each flow gets on its busiest link when every flow there shares it
// equally (min over links of effective capacity / flows crossing it).
struct PhaseShape {
  double bytes_per_s = 0;
  TimeNs latency_ns = 0;                  // largest route latency of a flow
  HopClass hop_class = HopClass::nvlink;  // class of the slowest hop
};

// The rings of one group's collectives.
struct RingSet {
  std::vector<std::vector<int>> rings;  // each visits every member once
  // Per ring, the route of hop i (ring[i] -> ring[i + 1], the last back to ring[0]): the
  // router's cached routes, kept so a ring collective's flows skip the route look-up.
  std::vector<std::vector<const RouteInfo*>> hop_routes;
  double bytes_per_s = 0;               // a ring hop's rate with all rings' hops running (PhaseShape)
  TimeNs latency_ns = 0;                // largest route latency of a hop
  HopClass hop_class = HopClass::nvlink;  // class of the slowest hop
  // The NVLS fabric every hop of the group crosses when the group lies in one NVLink domain of
  // NVLink 4+ GPUs on NVLink switches (nvls.hpp), else none.
  NvlsFabric nvls = NvlsFabric::none;
  // Members per node when every node holds the same number (contiguous in each ring), else 0;
  // trees need it. nodes = members / members_per_node.
  int members_per_node = 0;
  int members() const { return rings.empty() ? 0 : static_cast<int>(rings.front().size()); }
  int nodes() const { return members_per_node > 0 ? members() / members_per_node : 0; }
  // Hierarchical phases, when members_per_node >= 2 and nodes() >= 2: one ring per node over its
  // members (rings[0]'s order), all nodes at once; and one ring per local rank over the nodes
  // (the members at the same position in each node), all at once.
  PhaseShape intra, inter;
  // The NVLS fabric every node's ring crosses when each node holds 3 or more members on NVLink
  // switches (nvls_tree), else none.
  NvlsFabric nvls_intra = NvlsFabric::none;
};

struct CollectiveCost {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  TimeNs tail_ns = 0;        // latency added after the flows (all phases together)
  // Phases run one after another (hierarchical: 2 or 3, else 1); phase k + 1 starts when phase
  // k's flows have ended and its tail has passed. HopFlow::phase says which phase a flow is in.
  int phases = 1;
  std::array<TimeNs, 3> phase_tail_ns{};
  std::span<const TimeNs> tails() const { return {phase_tail_ns.data(), static_cast<std::size_t>(phases)}; }
  double wire_factor = 1;    // payload fraction of the bytes on the wire (nvls_tree: inside the domains)
  int nvls_heads = 0;        // nvls_tree: heads per domain, each with its trees across the domains
  TimeNs estimate_ns = 0;    // uncontended time, tail included
};

class CommModel {
 public:
  // A forced algorithm runs where it applies and the ring elsewhere; forcing nvls on a graph
  // without NVLS switches, or with an NCCL release without NVLS, throws InputError. `nccl`: the
  // release whose protocol latencies and NVLS the collectives follow.
  CommModel(const ClusterGraph& graph, const Router& router, std::optional<Protocol> forced = std::nullopt,
            std::optional<Algorithm> forced_algorithm = std::nullopt, const NcclProfile& nccl = legacy_nccl_profile());
  const NcclProfile& nccl() const { return nccl_; }
  // Rings over `gpus` (in the group's order; members of a node must be contiguous).
  RingSet rings(std::span<const int> gpus) const;
  PathParams path(int src_gpu, int dst_gpu) const;
  const Router& router() const { return router_; }
  // forward_bytes: CommKind::two_hop's NVLink bytes (StageProgram::forward_bytes).
  CollectiveCost cost(CommKind kind, double bytes, const RingSet& rings, double forward_bytes = 0) const;
  // Latency tail of a send of `bytes` on a path.
  TimeNs send_tail(const PathParams& p) const;

  // Latency-bound steps of the ring algorithm: 2(n-1) for all-reduce, n-1 for reduce-scatter,
  // all-gather and broadcast, 1 for a send and for an all-to-all (all pairs at once).
  static int steps(CommKind kind, int n);
  // Steps of a tree all-reduce: up and down the chain inside a node and the tree over nodes.
  static int tree_steps(const RingSet& rings);
  // Whether the tree applies: an all-reduce over two or more nodes with equal members per node.
  static bool tree_applies(CommKind kind, const RingSet& rings);
  // Whether the hierarchical algorithm applies: an all-reduce, reduce-scatter or all-gather over
  // two or more nodes with the same two or more members in each.
  static bool hierarchical_applies(CommKind kind, const RingSet& rings);
  // One phase of a hierarchical collective: a ring `kind` of `bytes` over n ranks (per node or
  // per local rank).
  struct Phase {
    CommKind kind;
    double bytes;
    int n;
    bool intra;  // inside the nodes (RingSet::intra) or across them (RingSet::inter)
  };
  // The phases of a hierarchical `kind` of `bytes` on rings (m members per node, N nodes):
  // all-reduce = reduce-scatter of S over m, all-reduce of S/m over N, all-gather of S over m;
  // reduce-scatter = the first two; all-gather = all-gather of S/m over N, then of S over m.
  static std::vector<Phase> hierarchical_phases(CommKind kind, double bytes, const RingSet& rings);
  // Bytes each ring hop carries for a collective of `bytes` over n ranks (all-to-all: what each
  // rank sends, S/n to every other rank).
  static double bytes_per_hop(CommKind kind, double bytes, int n);

  // Payload fraction on the wire: LL sends a flag with every 8 bytes, LL128 with every 128.
  static constexpr double kWireFactor[3] = {0.5, 120.0 / 128.0, 1.0};
  // Host staging (no P2P): each byte is copied into pinned host memory and out again, reaching
  // this fraction of what the PCIe links carry directly (2 x RTX 2080 Ti without P2P: all-gather
  // 7.69 GB/s on PCIe 3 x16 = 0.49 of the wire, against 0.80 for direct PCIe transfers), and a
  // reduction reads the staged data with GPU loads from host memory, at half that again
  // (all-reduce 4.0 GB/s on the same machine).
  static constexpr double kHostStagingFactor = 0.49 / 0.80;
  static constexpr double kHostReductionFactor = 0.5;
  // Wire factor of a send on a path (host staging), 1 elsewhere.
  static double send_wire_factor(const PathParams& p) { return p.hop_class == HopClass::host ? kHostStagingFactor : 1.0; }
  // A tree moves fewer bytes across the network than a ring, but its node heads reduce three
  // inputs per step and its chains pipeline through them; NCCL derates its tree bandwidth the
  // same way. An assumption (no tree rows in the validation data yet), not a calibration.
  static constexpr double kTreeEfficiency = 0.75;
  // Simple protocol: the slice each ring step fills before the next hop drains it.
  static constexpr double kSimpleSliceBytes = 4.0 * 1024 * 1024;

 private:
  CollectiveCost cost_with(Algorithm a, Protocol p, CommKind kind, double bytes, const RingSet& rings) const;
  CollectiveCost hierarchical_cost(Protocol p, CommKind kind, double bytes, const RingSet& rings) const;
  // DeepEP's two-hop dispatch (CommKind::two_hop): its own kernels, not NCCL's, so no protocol or
  // algorithm choice: the payload at the wire's rate (no LL flags), both hops at once (DeepEP
  // pipelines them), the launch base and one step of the slower hop's latency (Simple's),
  // whatever is forced.
  CollectiveCost two_hop_cost(double bytes, double forward_bytes, const RingSet& rings) const;
  // Shape of flows on the routes of `hops` (source, destination GPU pairs) running at once.
  PhaseShape shape_of(std::span<const std::pair<int, int>> hops) const;

  const ClusterGraph& graph_;
  const Router& router_;
  std::optional<Protocol> forced_;
  std::optional<Algorithm> forced_algorithm_;
  const NcclProfile& nccl_;
  std::vector<int> nics_per_node_;
};

}  // namespace dtsim

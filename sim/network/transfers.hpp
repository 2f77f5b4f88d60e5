// Transfers: sends and collectives lowered to flows on the flow network. A send is one flow on
// its route. A ring (or tree) collective is one flow per ring: NCCL pipelines a ring's chunks
// through bounded buffers, so every hop moves at the pace of the slowest, and the ring is one
// flow over the links of all its hops (a link two hops cross counts twice), carrying the bytes
// each hop moves over the whole algorithm. A transfer ends when its last flow ends plus its
// latency tail (the per-step latencies of the algorithm). A hierarchical collective has two or
// three phases: a phase's flows start when the previous phase's flows have all ended and its
// tail has passed. Concurrent transfers that cross a link share it.
//
// Thread safety: used by one thread (the engine's).
#pragma once
#include <limits>
#include <stdexcept>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include <boost/container_hash/hash.hpp>

#include "sim/base/units.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/network/flow_network.hpp"
#include "topologies/cluster_graph.hpp"
#include "topologies/routing.hpp"
#include "workloads/program.hpp"

namespace dtsim {

struct HopFlow {
  int src_gpu, dst_gpu;
  double bytes;
  int phase = 0;  // which phase of the transfer (0 unless hierarchical)
  const RouteInfo* route = nullptr;  // src -> dst when the caller has it, else looked up
  // Consecutive hops of one phase with the same chain >= 0 are one pipelined ring (or tree):
  // one flow over all their routes, with the bytes of one hop (they all move the same). -1: a
  // flow of its own (sends, all-to-all pairs).
  int chain = -1;
};

struct FinishedTransfer {
  int tag;          // what the caller passed to start()
  TimeNs start_ns;  // when the transfer started
  TimeNs end_ns;    // last flow end + latency tail
};

// Lowers a collective on `rings` to its hops into `hops`, each ring's hops one chain (each ring
// carries its share of the bytes, inflated by the protocol's wire factor); `cost` is from
// CommModel::cost; forward_bytes: CommKind::two_hop's NVLink bytes.
void lower_collective(CommKind kind, double bytes, const RingSet& rings, const CollectiveCost& cost,
                      std::vector<HopFlow>& hops, double forward_bytes = 0);

// Thrown when a transfer's route crosses a link another Transfers owns (Transfers::forbid).
struct LinkOwnedElsewhere : std::logic_error {
  using std::logic_error::logic_error;
};

class Transfers {
 public:
  // Over every link of the graph.
  Transfers(const ClusterGraph& graph, const Router& router);
  // Over `links` only (link ids of the graph): every route of its transfers must stay on them.
  Transfers(const ClusterGraph& graph, const Router& router, std::vector<int> links);
  // Routes of later transfers must not cross the links marked here (per link id): they throw
  // LinkOwnedElsewhere.
  void forbid(std::vector<char> links) { forbidden_ = std::move(links); }
  // The caller guarantees that no two flows of these transfers ever share a link (a node domain
  // of TP rings, NodeDomains::lone). A flow alone on its links gets min over them of capacity /
  // the times it crosses the link, which is what the flow network gives it, so each flow is
  // timed in closed form at its start: flow ids, finish times, their order and the per-link
  // accounting are the flow network's, without its solves. Call before the first start().
  void set_lone() { lone_ = true; }

  // Starts a transfer at `now`; when it ends, collect() reports `tag`.
  void start(TimeNs now, const std::vector<HopFlow>& flows, TimeNs tail_ns, int tag);
  // A transfer in phases, one tail per phase (CollectiveCost::tails()).
  void start(TimeNs now, const std::vector<HopFlow>& flows, std::span<const TimeNs> phase_tails, int tag);
  // Time of the next flow completion, phase start (or of a transfer whose flows are all done),
  // or kNever.
  TimeNs next_event() const;
  // Advances the network to `now` and appends the transfers whose flows have all finished.
  void collect(TimeNs now, std::vector<FinishedTransfer>& out);

  // Per-link accounting of a link this Transfers carries (a link id of the graph).
  double link_bytes(int link) const {
    return lone_ ? lone_bytes_[local(link)] : net_.link_bytes(series_[local(link)]);
  }
  double link_busy_seconds(int link) const {
    return lone_ ? lone_busy_s_[local(link)] : net_.link_busy_seconds(series_[local(link)]);
  }

  // Whether the link's flows can never sum past its capacity, so it couples none of them in the
  // flow network's solves (never_binding_chains in transfers.cpp).
  bool never_binds(int link) const { return !net_.can_bind(series_[local(link)]); }

  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

 private:
  struct Transfer {
    int pending = 0;          // flows of the current phase still running
    TimeNs start_ns = 0, phase_start_ns = 0;
    int tag = -1;
    int phase = 0;
    std::vector<TimeNs> tails;    // per phase
    std::vector<HopFlow> flows;   // all phases' flows, kept when there are later phases
  };
  void finish_flow(int flow, TimeNs now, std::vector<FinishedTransfer>& out);
  // The flow network's index of graph link `link` (the same when this Transfers has every link):
  // -1 when it does not carry the link; local() throws then.
  int find_local(int link) const;
  // Tells net_ which of its links can never bind (never_binding_chains in transfers.cpp).
  void mark_never_binding(const ClusterGraph& graph);
  int local(int link) const;
  // Adds the flows of the transfer's current phase at `now`.
  void start_phase(int id, TimeNs now, const std::vector<HopFlow>& flows);
  // The flow network's links (series chains) of the flow over flows[begin, end); valid until the next call.
  std::span<const int> flow_links(const std::vector<HopFlow>& flows, std::size_t begin, std::size_t end);
  // Lone mode (set_lone): the route of the chain flows[begin, end) (an index in lone_routes_);
  // a flow on it at the clock, its id as the flow network would give it; and the removal of the
  // flows finished by the clock, in id order.
  int lone_route(const std::vector<HopFlow>& flows, std::size_t begin, std::size_t end);
  int add_lone(int route, double bytes);
  void collect_lone(std::vector<int>& done);

  const Router& router_;
  std::vector<std::pair<int, int>> local_of_;  // (graph link, network link) sorted; empty: every link, same ids
  std::vector<char> forbidden_;                // per graph link; empty: none
  // Per network link: the least link of its series chain, the links through vertices that only
  // pass traffic on (a non-GPU device with two neighbours, such as a NIC between its GPU and
  // its switch): every route that crosses one crosses them all, one after the other, so the
  // same flows cross each and one network link stands for the chain, with the least capacity
  // (itself when in no chain; not in lone mode). A DP ring of the 16K step crossed 4,224
  // links, now 2,176.
  std::vector<int> series_;
  FlowNetwork net_;
  std::vector<Transfer> transfers_;
  std::vector<int> free_transfers_;
  std::vector<int> owner_;         // flow id -> transfer id
  std::vector<int> instant_;       // transfers with no flow left to wait for
  std::set<std::pair<TimeNs, int>> due_;  // (start time, transfer) of phases waiting for their start
  std::vector<int> done_scratch_;
  std::vector<int> links_scratch_;  // the links of one flow
  struct RoutesHash {
    std::size_t operator()(const std::vector<const RouteInfo*>& routes) const {
      return boost::hash_range(routes.begin(), routes.end());
    }
  };
  // A chain's links by its hops' routes (routes live as long as the router).
  std::unordered_map<std::vector<const RouteInfo*>, std::vector<int>, RoutesHash> chain_links_;
  // A one-hop flow's links by its route's id: (offset in route_chain_links_, count). A map, not a
  // vector by id: ids count the router's routes over the whole cluster, each Transfers uses its own.
  std::unordered_map<int, std::pair<int, int>> route_chains_;
  std::vector<int> route_chain_links_;

  // Lone mode.
  struct LoneRoute {
    std::vector<const RouteInfo*> hops;      // the chain's hop routes
    std::vector<std::pair<int, int>> links;  // (network link, times the flow crosses it)
    double rate = 0;                         // least capacity / crossings over the links
  };
  struct LoneFlow {
    int route = -1;
    double bytes = 0;
    TimeNs start = 0;
  };
  std::vector<const RouteInfo*> hop_routes_scratch_;  // a chain's hop routes (both modes)
  bool lone_ = false;
  std::vector<LoneRoute> lone_routes_;
  TimeNs lone_now_ = 0;                 // the network clock
  std::vector<LoneFlow> lone_flows_;    // by flow id
  std::vector<int> lone_free_ids_;      // min-heap: the smallest finished id is reused first
  std::vector<std::pair<TimeNs, int>> lone_finishes_;  // min-heap of (finish, flow id)
  std::vector<double> lone_bytes_, lone_busy_s_;       // per network link
};

}  // namespace dtsim

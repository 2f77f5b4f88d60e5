// Transfers: sends and collectives lowered to flows on the flow network. A send is one flow on
// its route; a ring collective is one flow per hop of each of its rings, each carrying the bytes
// that hop moves over the whole algorithm. A transfer ends when its last flow ends plus its latency tail (the
// per-step latencies of the algorithm). Concurrent transfers that cross a link share it.
//
// Thread safety: used by one thread (the engine's).
#pragma once
#include <limits>
#include <span>
#include <vector>

#include "sim/base/units.hpp"
#include "sim/comm_model.hpp"
#include "sim/flow_network.hpp"
#include "topologies/cluster_graph.hpp"
#include "topologies/routing.hpp"
#include "workloads/program.hpp"

namespace dtsim {

struct HopFlow {
  int src_gpu, dst_gpu;
  double bytes;
};

struct FinishedTransfer {
  int tag;          // what the caller passed to start()
  TimeNs start_ns;  // when the transfer started
  TimeNs end_ns;    // last flow end + latency tail
};

// Lowers a collective on `rings` to one flow per ring hop into `hops` (each ring carries its
// share of the bytes, inflated by the protocol's wire factor); `cost` is from CommModel::cost.
void lower_collective(CommKind kind, double bytes, const RingSet& rings, const CollectiveCost& cost,
                      std::vector<HopFlow>& hops);

class Transfers {
 public:
  Transfers(const ClusterGraph& graph, const Router& router);

  // Starts a transfer at `now`; when it ends, collect() reports `tag`.
  void start(TimeNs now, const std::vector<HopFlow>& flows, TimeNs tail_ns, int tag);
  // Time of the next flow completion (or of a transfer whose flows are all done), or kNever.
  TimeNs next_event() const;
  // Advances the network to `now` and appends the transfers whose flows have all finished.
  void collect(TimeNs now, std::vector<FinishedTransfer>& out);

  double link_bytes(int link) const { return net_.link_bytes(link); }
  double link_busy_seconds(int link) const { return net_.link_busy_seconds(link); }

  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

 private:
  struct Transfer {
    int pending = 0;
    TimeNs tail_ns = 0, start_ns = 0;
    int tag = -1;
  };
  void finish_flow(int flow, TimeNs now, std::vector<FinishedTransfer>& out);

  const Router& router_;
  FlowNetwork net_;
  std::vector<Transfer> transfers_;
  std::vector<int> free_transfers_;
  std::vector<int> owner_;         // flow id -> transfer id
  std::vector<int> instant_;       // transfers with no flow left to wait for
  std::vector<int> done_scratch_;
};

}  // namespace dtsim

// Bookkeeping of transfers over the flow network.
#include "sim/transfers.hpp"

#include <algorithm>

#include "sim/comm_model.hpp"

namespace dtsim {

namespace {
std::vector<double> effective_capacities(const ClusterGraph& graph) {
  std::vector<double> caps;
  for (int id = 0; id < graph.num_links(); ++id)
    caps.push_back(graph.link(id).bytes_per_s * achievable_fraction(graph.link(id).kind));
  return caps;
}
}  // namespace

void lower_collective(CommKind kind, double bytes, const RingSet& rings, const CollectiveCost& cost,
                      std::vector<HopFlow>& hops) {
  const int n = rings.members();
  const double hop_bytes =
      CommModel::bytes_per_hop(kind, bytes / static_cast<double>(rings.rings.size()), n) / cost.wire_factor;
  hops.clear();
  for (const std::vector<int>& ring : rings.rings)
    for (int i = 0; i < n; ++i) hops.push_back(HopFlow{ring[i], ring[(i + 1) % n], hop_bytes});
}

Transfers::Transfers(const ClusterGraph& graph, const Router& router)
    : router_(router), net_(effective_capacities(graph)) {}

void Transfers::start(TimeNs now, const std::vector<HopFlow>& flows, TimeNs tail_ns, int tag) {
  int id;
  if (free_transfers_.empty()) {
    id = static_cast<int>(transfers_.size());
    transfers_.emplace_back();
  } else {
    id = free_transfers_.back();
    free_transfers_.pop_back();
  }
  transfers_[id] = Transfer{0, tail_ns, now, tag};
  net_.advance(now);
  for (const HopFlow& f : flows) {
    if (f.bytes <= 0 || f.src_gpu == f.dst_gpu) continue;
    const int flow = net_.add_flow(router_.route(f.src_gpu, f.dst_gpu).links, f.bytes, now);
    if (flow >= static_cast<int>(owner_.size())) owner_.resize(flow + 1, -1);
    owner_[flow] = id;
    ++transfers_[id].pending;
  }
  if (transfers_[id].pending == 0) instant_.push_back(id);
  net_.solve();
}

TimeNs Transfers::next_event() const {
  if (!instant_.empty()) return -1;  // due now
  return net_.next_completion().first;
}

void Transfers::finish_flow(int flow, TimeNs now, std::vector<FinishedTransfer>& out) {
  const int id = owner_[flow];
  owner_[flow] = -1;
  Transfer& t = transfers_[id];
  if (--t.pending > 0) return;
  out.push_back(FinishedTransfer{t.tag, t.start_ns, now + t.tail_ns});
  free_transfers_.push_back(id);
}

void Transfers::collect(TimeNs now, std::vector<FinishedTransfer>& out) {
  for (int id : instant_) {
    const Transfer& t = transfers_[id];
    out.push_back(FinishedTransfer{t.tag, t.start_ns, std::max(now, t.start_ns) + t.tail_ns});
    free_transfers_.push_back(id);
  }
  instant_.clear();
  net_.advance(now);
  done_scratch_.clear();
  net_.collect_finished(done_scratch_);
  for (int flow : done_scratch_) finish_flow(flow, now, out);
  net_.solve();
}

}  // namespace dtsim

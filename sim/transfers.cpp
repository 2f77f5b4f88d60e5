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

namespace {

// Double binary tree: per channel, a chain through each node's members (the channel's rotated
// order) and two binary trees over the nodes' chain heads (heap order, the second mirrored),
// each carrying half the channel's share up (reduce) and down (broadcast).
void lower_tree(double bytes, const RingSet& rings, const CollectiveCost& cost, std::vector<HopFlow>& hops) {
  const int m = rings.members_per_node, nodes = rings.nodes();
  const double share = bytes / static_cast<double>(rings.rings.size()) / 2 / cost.wire_factor;
  auto both = [&](int a, int b) {
    hops.push_back(HopFlow{a, b, share});
    hops.push_back(HopFlow{b, a, share});
  };
  for (const std::vector<int>& ring : rings.rings) {
    for (int tree = 0; tree < 2; ++tree) {
      auto head = [&](int position) {
        const int node = tree == 0 ? position : nodes - 1 - position;
        return ring[node * m];
      };
      for (int position = 1; position < nodes; ++position) both(head(position), head((position - 1) / 2));
      for (int node = 0; node < nodes; ++node)
        for (int i = 0; i + 1 < m; ++i) both(ring[node * m + i], ring[node * m + i + 1]);
    }
  }
}

// All-to-all: every rank sends `share` (S/n) to every other, all at once. Inside one node, one
// flow per pair. Across nodes (equal members per node, contiguous in the first ring) as NCCL's
// PXN and DeepSeek's DeepEP route it: what a rank sends to another node goes in one flow to the
// member of that node with the same in-node index (network traffic stays on its rail), which
// forwards it over NVLink; by symmetry each rank forwards (nodes - 1) shares to each local peer,
// so its flow to a local peer carries nodes shares. Same network bytes as all pairs, fewer flows.
void lower_all_to_all(double share, const RingSet& rings, std::vector<HopFlow>& hops) {
  const std::vector<int>& members = rings.rings.front();
  const int m = rings.members_per_node, nodes = rings.nodes();
  if (m == 0 || nodes < 2) {
    for (int a : members)
      for (int b : members)
        if (a != b) hops.push_back(HopFlow{a, b, share});
    return;
  }
  for (int u = 0; u < nodes; ++u)
    for (int i = 0; i < m; ++i) {
      const int a = members[u * m + i];
      for (int v = 0; v < nodes; ++v)
        if (v != u) hops.push_back(HopFlow{a, members[v * m + i], m * share});
      for (int j = 0; j < m; ++j)
        if (j != i) hops.push_back(HopFlow{a, members[u * m + j], nodes * share});
    }
}

}  // namespace

void lower_collective(CommKind kind, double bytes, const RingSet& rings, const CollectiveCost& cost,
                      std::vector<HopFlow>& hops) {
  hops.clear();
  if (cost.algorithm == Algorithm::tree) {
    lower_tree(bytes, rings, cost, hops);
    return;
  }
  const int n = rings.members();
  if (kind == CommKind::all_to_all) {
    lower_all_to_all(bytes / n / cost.wire_factor, rings, hops);
    return;
  }
  const double hop_bytes =
      CommModel::bytes_per_hop(kind, bytes / static_cast<double>(rings.rings.size()), n) / cost.wire_factor;
  for (const std::vector<int>& ring : rings.rings)
    for (int i = 0; i < n; ++i)  // a broadcast's ring ends where it began: no hop back to the root
      if (kind != CommKind::broadcast || i + 1 < n) hops.push_back(HopFlow{ring[i], ring[(i + 1) % n], hop_bytes});
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

// Max-min fair flow-level network: incremental component solves by progressive filling over the
// links that can bind, lazy per-flow progress and a lazy heap of finish times.
#include "sim/network/flow_network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>

namespace dtsim {

FlowNetwork::FlowNetwork(std::vector<double> link_bytes_per_s)
    : links_(link_bytes_per_s.size()),
      link_busy_s_(link_bytes_per_s.size(), 0.0),
      hop_of_link_(link_bytes_per_s.size(), -1),
      link_dirty_(link_bytes_per_s.size(), 0),
      link_seen_(link_bytes_per_s.size(), 0),
      residual_(link_bytes_per_s.size(), 0.0),
      pushed_share_(link_bytes_per_s.size(), 0.0),
      unfixed_(link_bytes_per_s.size(), 0),
      link_pos_(link_bytes_per_s.size(), 0) {
  for (std::size_t l = 0; l < links_.size(); ++l) links_[l].capacity = link_bytes_per_s[l];
}

double FlowNetwork::remaining_now(const Flow& f) const {
  if (f.rate <= 0 || now_ <= f.updated_at) return f.remaining;
  return std::max(0.0, f.remaining - f.rate * ns_to_seconds(now_ - f.updated_at));
}

bool FlowNetwork::finished(const Flow& f) const {
  return remaining_now(f) <= std::min(1e-9 * f.size, 1.0);
}

// Settles the flow's progress to now, then switches it to `rate` and reschedules its finish.
void FlowNetwork::set_rate(int id, double rate) {
  Flow& f = flows_[id];
  if (rate == f.rate) return;
  f.remaining = remaining_now(f);
  f.updated_at = now_;
  for (const Hop& h : f.hops)
    for (int k = 0; k < h.crossings; ++k) links_[h.link].load += rate - f.rate;
  f.rate = rate;
  schedule(id);
}

// Finish time from the settled state: now when within epsilon, never when stalled at rate 0.
void FlowNetwork::schedule(int id) {
  Flow& f = flows_[id];
  if (finished(f)) {
    f.finish = now_;
  } else if (f.rate > 0) {
    f.finish = f.updated_at + static_cast<TimeNs>(std::ceil(f.remaining / f.rate * 1e9));
  } else {
    f.finish = kNever;
    heap_erase(id);
    return;
  }
  const Finish e{f.finish, id};
  int& pos = heap_pos_[id];
  if (pos == kNoPos) {
    finishes_.push_back(e);
    pos = static_cast<int>(finishes_.size() - 1);
    sift_up(finishes_.size() - 1);
    return;
  }
  const std::size_t at = static_cast<std::size_t>(pos);
  const bool earlier = finishes_[at] > e;
  finishes_[at] = e;
  if (earlier) sift_up(at);
  else sift_down(at);
}

void FlowNetwork::heap_set(std::size_t at, Finish e) {
  finishes_[at] = e;
  heap_pos_[e.id] = static_cast<int>(at);
}

void FlowNetwork::sift_up(std::size_t at) {
  const Finish e = finishes_[at];
  while (at > 0) {
    const std::size_t parent = (at - 1) / 2;
    if (!(finishes_[parent] > e)) break;
    heap_set(at, finishes_[parent]);
    at = parent;
  }
  heap_set(at, e);
}

void FlowNetwork::sift_down(std::size_t at) {
  const Finish e = finishes_[at];
  const std::size_t n = finishes_.size();
  while (true) {
    std::size_t child = 2 * at + 1;
    if (child >= n) break;
    if (child + 1 < n && finishes_[child] > finishes_[child + 1]) ++child;
    if (!(e > finishes_[child])) break;
    heap_set(at, finishes_[child]);
    at = child;
  }
  heap_set(at, e);
}

void FlowNetwork::heap_erase(int id) {
  const int pos = heap_pos_[id];
  if (pos == kNoPos) return;
  heap_pos_[id] = kNoPos;
  const Finish last = finishes_.back();
  finishes_.pop_back();
  if (static_cast<std::size_t>(pos) == finishes_.size()) return;
  const bool earlier = finishes_[pos] > last;
  heap_set(pos, last);
  if (earlier) sift_up(pos);
  else sift_down(pos);
}

void FlowNetwork::mark_dirty(int link) {
  if (!link_dirty_[link]) {
    link_dirty_[link] = 1;
    dirty_links_.push_back(link);
  }
}

int FlowNetwork::add_flow(std::span<const int> links, double bytes, TimeNs now) {
  assert(bytes >= 0);
  advance(now);
  int id;
  if (free_ids_.empty()) {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
    flow_seen_.push_back(0);
    fixed_.push_back(0);
    heap_pos_.push_back(kNoPos);
  } else {
    std::pop_heap(free_ids_.begin(), free_ids_.end(), std::greater<>());
    id = free_ids_.back();
    free_ids_.pop_back();
  }
  Flow& f = flows_[id];
  f.size = bytes;
  f.rate = 0;
  f.updated_at = now_;
  f.finish = kNever;
  f.active = true;
  ++active_;
  f.hops.clear();
  f.passive.clear();
  if (links.empty() || bytes <= 0) {
    f.remaining = 0;  // finishes at once; occupies no link
    schedule(id);
    return id;
  }
  f.remaining = bytes;
  for (std::size_t i = 0; i < links.size(); ++i) {
    // As in remove_flow: the link states a few hops ahead, their lists' ends nearer.
    if (i + kAhead < links.size()) __builtin_prefetch(&links_[links[i + kAhead]], 1);
    if (i + kAhead / 2 < links.size()) {
      const auto& list = links_[links[i + kAhead / 2]].flows;
      __builtin_prefetch(list.data() + list.size(), 1);
    }
    const int l = links[i];
    assert(l >= 0 && l < num_links());
    LinkState& link = links_[l];
    if (link.crossings++ == 0) link.busy_since = now_;
    if (!link.can_bind) {
      f.passive.push_back(l);
      continue;
    }
    if (hop_of_link_[l] >= 0) {  // crossed again
      ++f.hops[hop_of_link_[l]].crossings;
      continue;
    }
    hop_of_link_[l] = static_cast<int>(f.hops.size());
    f.hops.push_back(Hop{l, 1, static_cast<int>(link.flows.size())});
    link.flows.emplace_back(id, hop_of_link_[l]);
    if (link.coupling) mark_dirty(l);
  }
  for (const Hop& h : f.hops) hop_of_link_[h.link] = -1;
  dirty_flows_.push_back(id);
  return id;
}

void FlowNetwork::advance(TimeNs now) {
  assert(now >= now_);
  now_ = std::max(now_, now);
}

void FlowNetwork::solve() {
  while (!dirty_links_.empty() || !dirty_flows_.empty()) {
    solve_component();
    couple_overfilled(comp_flows_);  // marks what must be solved again
  }
}

// One solve of everything reachable from the dirty links and flows through coupling links:
// BFS coupling link -> flows on it -> their coupling links.
void FlowNetwork::solve_component() {
  comp_links_.clear();
  comp_flows_.clear();
  bound_.clear();
  auto visit_flow = [this](int f) {
    if (flow_seen_[f]) return;
    flow_seen_[f] = 1;
    fixed_[f] = 0;
    comp_flows_.push_back(f);
    // One pass over the route: its coupling links join the component, its relaxed links bound it.
    double bound = std::numeric_limits<double>::infinity();
    for (const Hop& h : flows_[f].hops) {
      const int l = h.link;
      const LinkState& link = links_[l];
      if (!link.coupling) {
        bound = std::min(bound, relaxed_bound(link));
      } else if (!link_seen_[l]) {
        link_seen_[l] = 1;
        comp_links_.push_back(l);
      }
    }
    bound_.push_back(bound);
  };
  for (int l : dirty_links_) {
    link_dirty_[l] = 0;
    if (links_[l].coupling && !link_seen_[l]) {
      link_seen_[l] = 1;
      comp_links_.push_back(l);
    }
  }
  dirty_links_.clear();
  for (int f : dirty_flows_)
    if (flows_[f].active) visit_flow(f);
  dirty_flows_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i)
    for (const auto& [f, hop] : links_[comp_links_[i]].flows) visit_flow(f);
  for (int l : comp_links_) link_seen_[l] = 0;
  for (int f : comp_flows_) flow_seen_[f] = 0;
  fill(comp_flows_, comp_links_);
}

void FlowNetwork::couple_overfilled(const std::vector<int>& flows) {
  for (int f : flows)
    for (const Hop& h : flows_[f].hops)
      if (LinkState& link = links_[h.link];
          !link.coupling && link.flows.size() > 1 && link.load > link.capacity * (1 - 1e-9)) {
        link.coupling = true;
        mark_dirty(h.link);
      }
}

// Progressive filling: repeatedly the link with the smallest fair share residual / unfixed flows
// (the first in `links` order among equal shares) fixes its unfixed flows at that share. Shares
// sit in a lazy min-heap of (share, position in `links`). Fixing flows at the least share s never
// lowers another link's share ((r - s) / (u - 1) >= r / u when s <= r / u), so a link keeps one
// entry whose key is at most its share, re-pushed with the current share when it surfaces stale:
// the entry that surfaces current is the least (share, position), as if every change were
// pushed. A share that rounding lowers below its entry's key is pushed at once.
void FlowNetwork::fill(const std::vector<int>& flows, const std::vector<int>& links) {
  if (flows.size() <= 1) return fill_single(flows, links);
  heap_.clear();
  for (std::size_t i = 0; i < links.size(); ++i) {
    const int l = links[i];
    residual_[l] = links_[l].capacity;
    unfixed_[l] = links_[l].crossings;
    link_pos_[l] = static_cast<int>(i);
    if (unfixed_[l] > 0) {
      pushed_share_[l] = residual_[l] / unfixed_[l];
      heap_.emplace_back(pushed_share_[l], static_cast<int>(i));
    }
  }
  for (std::size_t i = 0; i < flows.size(); ++i)
    if (bound_[i] < std::numeric_limits<double>::infinity()) heap_.emplace_back(bound_[i], -1 - static_cast<int>(i));
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  std::size_t left = flows.size();
  auto fix = [&](int f, double share, int best) {
    fixed_[f] = 1;
    --left;
    set_rate(f, share);
    for (const Hop& h : flows_[f].hops) {
      const int l = h.link;
      if (!links_[l].coupling) continue;
      // Each crossing takes the share (as k flows would, one subtraction each).
      for (int k = 0; k < h.crossings; ++k) residual_[l] = std::max(0.0, residual_[l] - share);
      unfixed_[l] -= h.crossings;
      if (l != best && unfixed_[l] > 0 && residual_[l] / unfixed_[l] < pushed_share_[l]) {
        pushed_share_[l] = residual_[l] / unfixed_[l];
        heap_.emplace_back(pushed_share_[l], link_pos_[l]);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      }
    }
  };
  while (left > 0) {
    assert(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const auto [share, pos] = heap_.back();
    heap_.pop_back();
    if (pos < 0) {  // a flow's relaxed-link bound
      const int f = flows[-1 - pos];
      if (!fixed_[f]) fix(f, share, -1);
      continue;
    }
    const int best = links[pos];
    if (unfixed_[best] == 0 || share != pushed_share_[best]) continue;  // done, or superseded
    if (const double now_share = residual_[best] / unfixed_[best]; now_share != share) {
      pushed_share_[best] = now_share;  // stale: back in at its share
      heap_.emplace_back(now_share, pos);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      continue;
    }
    for (const auto& [f, hop] : links_[best].flows)
      if (!fixed_[f]) fix(f, share, best);
  }
  // A coupling link the solve left with spare capacity binds none of its flows: relax it.
  for (int l : links)
    if (residual_[l] > 1e-6 * links_[l].capacity) links_[l].coupling = false;
}

// fill() of a component of at most one flow (most are: a collective inside a node is one flow
// alone on its links), with the same arithmetic: each coupling link carries only this flow (k
// times when k of its hops cross it), so its share is capacity / k; a relaxed link bounds it at
// its capacity.
void FlowNetwork::fill_single(const std::vector<int>& flows, const std::vector<int>& links) {
  for (int l : links) residual_[l] = links_[l].capacity;
  if (!flows.empty()) {
    const int f = flows.front();
    double share = std::numeric_limits<double>::infinity();
    for (const Hop& h : flows_[f].hops) {
      const LinkState& link = links_[h.link];
      share = std::min(share, link.coupling ? link.capacity / static_cast<double>(link.crossings) : relaxed_bound(link));
    }
    set_rate(f, share);
    for (const Hop& h : flows_[f].hops)
      if (links_[h.link].coupling)
        for (int k = 0; k < h.crossings; ++k) residual_[h.link] = std::max(0.0, residual_[h.link] - share);
  }
  for (int l : links)
    if (residual_[l] > 1e-6 * links_[l].capacity) links_[l].coupling = false;
}

std::pair<TimeNs, int> FlowNetwork::next_completion() const {
  if (finishes_.empty()) return {std::numeric_limits<TimeNs>::max(), -1};
  if (finishes_.front().time > now_) return {finishes_.front().time, finishes_.front().id};
  // Flows already due all report now; the lowest id wins. Due entries form a subtree at the top.
  int id = finishes_.front().id;
  heap_walk_.assign(1, 0);
  while (!heap_walk_.empty()) {
    const std::size_t i = heap_walk_.back();
    heap_walk_.pop_back();
    if (i >= finishes_.size() || finishes_[i].time > now_) continue;
    id = std::min(id, finishes_[i].id);
    heap_walk_.push_back(2 * i + 1);
    heap_walk_.push_back(2 * i + 2);
  }
  return {now_, id};
}

void FlowNetwork::remove_flow(int id) {
  Flow& f = flows_[id];
  f.finish = kNever;
  heap_erase(id);
  // Each hop's entry leaves its link's list in O(1): the list's last entry takes its slot (a pod
  // uplink of the 16K step carries hundreds of flows). A long route's links are scattered in
  // memory: fetch the link states a few hops ahead, and their lists' ends nearer.
  const std::size_t hops = f.hops.size();
  for (std::size_t i = 0; i < hops; ++i) {
    if (i + kAhead < hops) __builtin_prefetch(&links_[f.hops[i + kAhead].link]);
    if (i + kAhead / 2 < hops) {
      const auto& list = links_[f.hops[i + kAhead / 2].link].flows;
      __builtin_prefetch(list.data() + list.size() - 1);
      __builtin_prefetch(list.data() + f.hops[i + kAhead / 2].slot, 1);
    }
    const Hop& h = f.hops[i];
    LinkState& link = links_[h.link];
    const auto moved = link.flows.back();
    link.flows[h.slot] = moved;
    flows_[moved.first].hops[moved.second].slot = h.slot;
    link.flows.pop_back();
    link.crossings -= h.crossings;
    for (int k = 0; k < h.crossings; ++k) {
      link.bytes += f.size;
      link.load -= f.rate;
    }
    // Other flows can only gain where the link couples them; a relaxed link bound none. A link
    // left with one flow couples nothing: it is relaxed, and its flow, which may gain, re-solved.
    if (link.coupling) mark_dirty(h.link);
    if (link.coupling && link.flows.size() == 1) {
      link.coupling = false;
      dirty_flows_.push_back(link.flows.front().first);
    }
    if (link.flows.empty()) {
      link_busy_s_[h.link] += ns_to_seconds(now_ - link.busy_since);
      link.load = 0;
    }
  }
  for (int l : f.passive) {
    LinkState& link = links_[l];
    link.bytes += f.size;
    if (--link.crossings == 0) link_busy_s_[l] += ns_to_seconds(now_ - link.busy_since);
  }
  f.active = false;
  f.rate = 0;
  f.remaining = 0;
  --active_;
  free_ids_.push_back(id);
  std::push_heap(free_ids_.begin(), free_ids_.end(), std::greater<>());
}

void FlowNetwork::collect_finished(std::vector<int>& done) {
  const std::size_t first = done.size();
  while (!finishes_.empty() && finishes_.front().time <= now_) {
    const int id = finishes_.front().id;
    assert(finished(flows_[id]));
    remove_flow(id);
    done.push_back(id);
  }
  std::sort(done.begin() + static_cast<std::ptrdiff_t>(first), done.end());
}

double FlowNetwork::rate(int flow) const { return flows_.at(flow).rate; }
double FlowNetwork::remaining(int flow) const { return remaining_now(flows_.at(flow)); }
int FlowNetwork::active_flows() const { return active_; }
double FlowNetwork::link_bytes(int link) const { return links_.at(link).bytes; }
double FlowNetwork::link_busy_seconds(int link) const {
  const double open = links_.at(link).crossings == 0 ? 0.0 : ns_to_seconds(now_ - links_[link].busy_since);
  return link_busy_s_[link] + open;
}

}  // namespace dtsim

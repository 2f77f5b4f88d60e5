// Max-min fair flow-level network: incremental component solves by progressive filling.
#include "sim/flow_network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>

namespace dtsim {

FlowNetwork::FlowNetwork(std::vector<double> link_bytes_per_s)
    : capacity_(std::move(link_bytes_per_s)),
      link_flows_(capacity_.size()),
      link_bytes_(capacity_.size(), 0.0),
      link_busy_s_(capacity_.size(), 0.0),
      link_dirty_(capacity_.size(), 0),
      link_seen_(capacity_.size(), 0),
      residual_(capacity_.size(), 0.0),
      unfixed_(capacity_.size(), 0) {}

bool FlowNetwork::finished(const Flow& f) const {
  return f.remaining <= std::min(1e-9 * f.size, 1.0);
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
  } else {
    std::pop_heap(free_ids_.begin(), free_ids_.end(), std::greater<>());
    id = free_ids_.back();
    free_ids_.pop_back();
  }
  Flow& f = flows_[id];
  f.size = bytes;
  f.rate = 0;
  f.active = true;
  ++active_;
  f.links.clear();
  if (links.empty() || bytes <= 0) {
    f.remaining = 0;  // finishes at once; occupies no link
    return id;
  }
  f.remaining = bytes;
  f.links.assign(links.begin(), links.end());
  for (int l : f.links) {
    assert(l >= 0 && l < static_cast<int>(capacity_.size()));
    link_flows_[l].push_back(id);
    mark_dirty(l);
  }
  return id;
}

void FlowNetwork::advance(TimeNs now) {
  assert(now >= now_);
  if (now <= now_) return;
  const double dt = ns_to_seconds(now - now_);
  now_ = now;
  for (std::size_t l = 0; l < link_flows_.size(); ++l)
    if (!link_flows_[l].empty()) link_busy_s_[l] += dt;
  for (Flow& f : flows_) {
    if (!f.active || f.rate <= 0) continue;
    const double moved = std::min(f.rate * dt, f.remaining);
    f.remaining -= moved;
    for (int l : f.links) link_bytes_[l] += moved;
  }
}

void FlowNetwork::solve() {
  if (dirty_links_.empty()) return;
  // BFS link -> flows on it -> their links, starting from every dirty link.
  comp_links_.clear();
  comp_flows_.clear();
  for (int l : dirty_links_) {
    link_dirty_[l] = 0;
    if (!link_seen_[l]) {
      link_seen_[l] = 1;
      comp_links_.push_back(l);
    }
  }
  dirty_links_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    for (int f : link_flows_[comp_links_[i]]) {
      if (flow_seen_[f]) continue;
      flow_seen_[f] = 1;
      comp_flows_.push_back(f);
      for (int l : flows_[f].links) {
        if (!link_seen_[l]) {
          link_seen_[l] = 1;
          comp_links_.push_back(l);
        }
      }
    }
  }
  for (int l : comp_links_) link_seen_[l] = 0;
  for (int f : comp_flows_) flow_seen_[f] = 0;
  fill(comp_flows_, comp_links_);
}

void FlowNetwork::fill(const std::vector<int>& flows, const std::vector<int>& links) {
  for (int l : links) {
    residual_[l] = capacity_[l];
    unfixed_[l] = static_cast<int>(link_flows_[l].size());
  }
  for (int f : flows) fixed_[f] = 0;
  std::size_t left = flows.size();
  while (left > 0) {
    // Bottleneck: the link with the smallest fair share among links with unfixed flows.
    int best = -1;
    double share = std::numeric_limits<double>::infinity();
    for (int l : links) {
      if (unfixed_[l] == 0) continue;
      const double s = residual_[l] / unfixed_[l];
      if (s < share) {
        share = s;
        best = l;
      }
    }
    assert(best >= 0);
    for (int f : link_flows_[best]) {
      if (fixed_[f]) continue;
      fixed_[f] = 1;
      --left;
      flows_[f].rate = share;
      for (int l : flows_[f].links) {
        residual_[l] = std::max(0.0, residual_[l] - share);
        --unfixed_[l];
      }
    }
  }
}

std::pair<TimeNs, int> FlowNetwork::next_completion() const {
  std::pair<TimeNs, int> best{std::numeric_limits<TimeNs>::max(), -1};
  for (std::size_t id = 0; id < flows_.size(); ++id) {
    const Flow& f = flows_[id];
    if (!f.active) continue;
    TimeNs t;
    if (finished(f)) {
      t = now_;
    } else if (f.rate > 0) {
      t = now_ + static_cast<TimeNs>(std::ceil(f.remaining / f.rate * 1e9));
    } else {
      continue;  // stalled on a zero-capacity link
    }
    if (t < best.first) best = {t, static_cast<int>(id)};
  }
  return best;
}

void FlowNetwork::remove_flow(int id) {
  Flow& f = flows_[id];
  for (int l : f.links) {
    std::vector<int>& on = link_flows_[l];
    on.erase(std::find(on.begin(), on.end(), id));
    mark_dirty(l);
  }
  f.active = false;
  f.rate = 0;
  f.remaining = 0;
  --active_;
  free_ids_.push_back(id);
  std::push_heap(free_ids_.begin(), free_ids_.end(), std::greater<>());
}

void FlowNetwork::collect_finished(std::vector<int>& done) {
  for (std::size_t id = 0; id < flows_.size(); ++id) {
    if (flows_[id].active && finished(flows_[id])) {
      remove_flow(static_cast<int>(id));
      done.push_back(static_cast<int>(id));
    }
  }
}

double FlowNetwork::rate(int flow) const { return flows_.at(flow).rate; }
double FlowNetwork::remaining(int flow) const { return flows_.at(flow).remaining; }
int FlowNetwork::active_flows() const { return active_; }
double FlowNetwork::link_bytes(int link) const { return link_bytes_.at(link); }
double FlowNetwork::link_busy_seconds(int link) const { return link_busy_s_.at(link); }

}  // namespace dtsim

// FlowNetwork: transfers as flows over routes of directed links; flows sharing a link share its
// capacity by max-min fairness (progressive filling). Rates are recomputed only for the connected
// component (flows linked through shared links) touched since the last solve, and only links that
// can bind couple flows into components: a link whose flows' rates sum to less than its capacity
// is relaxed (it only caps each of its flows at its capacity), which leaves the max-min
// allocation unchanged; a relaxed link that would be overfilled couples again and its component
// is re-solved, and a coupling link left with spare capacity after a solve is relaxed. A link
// carrying one flow never couples: it caps that flow at capacity / its crossings. Progress is lazy:
// each flow keeps its remaining bytes as of its last rate change, and finish times sit in an
// min-heap indexed by flow (a reschedule moves the flow's entry), so advancing time and finding
// the next completion cost O(1) and a reschedule O(log n).
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/base/units.hpp"

namespace dtsim {

class FlowNetwork {
 public:
  explicit FlowNetwork(std::vector<double> link_bytes_per_s);  // capacity per link id
  // Starts a flow of `bytes` over `links` (link ids) at time `now`; returns its id (ids are reused
  // after the flow finishes). A flow with no links or 0 bytes still gets an id and finishes at once.
  int add_flow(std::span<const int> links, double bytes, TimeNs now);
  // Moves the clock to `now`; flows progress at their current rates (call before add/complete).
  void advance(TimeNs now);
  // Recomputes rates of the touched components. Cheap when nothing changed.
  void solve();
  // Earliest finishing active flow: {time, id}; {INT64_MAX, -1} when no flow is active.
  // Time rounds up to the next nanosecond so a flow is never reported done early.
  std::pair<TimeNs, int> next_completion() const;
  // Removes every flow whose completion time has come (its remaining bytes are then <= a tiny
  // epsilon: relative 1e-9 of its size or 1 byte); appends their ids to `done` in increasing id
  // order.
  void collect_finished(std::vector<int>& done);
  double capacity(int link) const { return links_[link].capacity; }  // bytes/s
  // Declares that the rates of the link's flows can never sum past its capacity (their routes
  // enter it only through links of no more capacity in all, Transfers): it takes no part in the
  // solves, only counts its flows' bytes and busy time. Same allocation, smaller components, and
  // nothing per flow to keep on the link. Call before the link's first flow.
  void never_binds(int link) { links_[link].can_bind = false; }
  bool can_bind(int link) const { return links_[link].can_bind; }
  int num_links() const { return static_cast<int>(links_.size()); }
  double rate(int flow) const;       // bytes/s after the last solve
  double remaining(int flow) const;  // bytes left
  int active_flows() const;
  // Per-link accounting since construction: bytes carried and time with >= 1 active flow.
  double link_bytes(int link) const;
  double link_busy_seconds(int link) const;

 private:
  // A distinct link of a flow's route: a route that crosses a link k times (a ring's hops, the
  // TP copies a flow carries) holds it once, with k crossings, and shares it as k flows would.
  struct Hop {
    int link;
    int crossings;
    int slot;  // its entry's index in links_[link].flows
  };
  struct Flow {
    std::vector<Hop> hops;  // links that can bind, in first-crossing order; capacity kept when the id is reused
    // Each crossing of a link that never binds (never_binds): it only counts the flow's bytes and
    // busy time, so the flow joins no list of it and its rate no load.
    std::vector<int> passive;
    double size = 0;
    double remaining = 0;  // as of `updated_at`
    double rate = 0;
    TimeNs updated_at = 0;
    TimeNs finish = kNever;  // kNever when not scheduled
    bool active = false;
  };
  static constexpr TimeNs kNever = INT64_MAX;

  double remaining_now(const Flow& f) const;
  bool finished(const Flow& f) const;
  void set_rate(int id, double rate);
  void schedule(int id);
  void mark_dirty(int link);
  void remove_flow(int id);
  void solve_component();
  void fill(const std::vector<int>& flows, const std::vector<int>& links);
  void fill_single(const std::vector<int>& flows, const std::vector<int>& links);
  // Couples (and marks dirty) every relaxed link of these flows that its flows' rates overfill;
  // a link of one flow never couples (it only caps that flow, see relaxed_bound).
  void couple_overfilled(const std::vector<int>& flows);

  // What starting and ending a flow touch of each link it crosses, in one cache line: a DP ring
  // the TP copies carry crosses thousands of links, and with a flat array per field its starts
  // and ends (~10 cache misses per link) were 12 % of the 16K step.
  struct alignas(64) LinkState {
    // Its active flows, one entry per flow (in no particular order: a removed entry's slot takes
    // the list's last): the flow's id and the index of its hop on this link.
    std::vector<std::pair<int, int>> flows;
    double capacity = 0;  // bytes/s
    double load = 0;      // sum of its flows' rates, once per crossing
    double bytes = 0;     // carried, once per crossing
    TimeNs busy_since = 0;  // start of the open busy interval (the link has flows)
    int crossings = 0;      // its flows' crossings in all (busy while > 0)
    bool coupling = false;  // couples its flows in solves (else relaxed)
    bool can_bind = true;   // false: never_binds()
  };
  std::vector<LinkState> links_;
  // What a relaxed link caps each of its flows at: its capacity, or, carrying a single flow, that
  // flow's exact share (capacity / its crossings), so a flow alone on links (a DP ring on the
  // NICs it has to itself) couples only through the links it shares.
  static double relaxed_bound(const LinkState& link) {
    return link.flows.size() == 1 ? link.capacity / static_cast<double>(link.crossings) : link.capacity;
  }
  static constexpr std::size_t kAhead = 8;  // hops prefetched ahead by add_flow and remove_flow
  std::vector<double> link_busy_s_;  // per link: closed busy intervals
  std::vector<int> hop_of_link_;  // scratch of add_flow: a link's hop on the new flow, -1 none
  std::vector<Flow> flows_;
  struct Finish {
    TimeNs time;
    int id;
    bool operator>(const Finish& o) const { return time != o.time ? time > o.time : id > o.id; }
  };
  // The heap's entries move with their flows (heap_pos_); kNoPos: not in the heap.
  static constexpr int kNoPos = -1;
  void heap_set(std::size_t at, Finish e);
  void sift_up(std::size_t at);
  void sift_down(std::size_t at);
  void heap_erase(int id);
  // Min-heap by (time, id) of the scheduled flows' finishes, one entry per flow.
  std::vector<Finish> finishes_;
  std::vector<int> heap_pos_;  // per flow id: its entry's position in finishes_, or kNoPos
  mutable std::vector<std::size_t> heap_walk_;  // scratch of next_completion()
  std::vector<int> free_ids_;  // min-heap: the smallest finished id is reused first
  int active_ = 0;
  TimeNs now_ = 0;

  std::vector<int> dirty_links_;
  std::vector<char> link_dirty_;
  std::vector<int> dirty_flows_;   // flows added since the last solve (they need a rate)
  // Scratch for solve(), sized once per link / flow and reset after each use.
  std::vector<char> link_seen_;
  std::vector<char> flow_seen_;
  std::vector<int> comp_links_;
  std::vector<int> comp_flows_;
  std::vector<double> residual_;
  std::vector<double> pushed_share_;  // per link: the key of its live entry in heap_ (fill)
  std::vector<int> unfixed_;
  std::vector<char> fixed_;
  std::vector<int> link_pos_;                   // link -> its position in the component's links
  std::vector<double> bound_;                   // per component flow: the least bound of its relaxed links
  // (fair share, position): min-heap of fill(); position >= 0 a link of the component, -1 - i
  // the relaxed-link bound of the component's flow i.
  std::vector<std::pair<double, int>> heap_;
};

}  // namespace dtsim

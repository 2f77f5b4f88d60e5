// The engine's per-rank state (internal to sim/engine*.cpp): a rank's progress through its stage
// program, its pending local events, and what it produced in the current window (cross-rank
// actions and trace records), all owned by the rank so ranks can be handled concurrently.
//
// Thread safety: during a window's parallel phase only the thread handling a rank touches its
// RankState; the sequential merge phase touches any rank's.
#pragma once
#include <algorithm>
#include <array>
#include <functional>
#include <cstdint>
#include <vector>

#include "sim/trace/records.hpp"
#include "workloads/program.hpp"

namespace dtsim {

// A rank's pending event: op `op` ends at `time` (started at `start`); op -1 starts the rank.
// Ordered by (time, seq), seq counting the rank's own events with kLocal set for the ends of its
// own kernels, which so come after the network's completions at the same instant.
struct LocalEvent {
  static constexpr std::uint32_t kLocal = 1u << 31;
  TimeNs time;
  std::uint32_t seq;
  std::int32_t op;
  TimeNs start;
  bool operator>(const LocalEvent& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// Something a rank did that touches shared state: posted collective `op` or started send `op`
// at `time`. Applied in (time, rank, seq) order.
struct Action {
  TimeNs time;
  std::int32_t rank;
  std::uint32_t seq;
  std::int32_t op;
};

// The order actions are applied in: (time, rank, sequence).
inline bool action_before(const Action& a, const Action& b) {
  return a.time != b.time ? a.time < b.time : a.rank != b.rank ? a.rank < b.rank : a.seq < b.seq;
}

struct RankState {
  int stage = 0;
  bool traced = false;
  double speed = 1;  // compute speed factor
  std::array<int, kNumStreams> next{};
  std::array<bool, kNumStreams> busy{};
  std::array<int, kNumStreams> deps_known{};  // leading dependencies of the stream's next op found done
  // Per stream, the sequence (engine_deps.hpp) whose next completion may let it start its next
  // op: its own while it runs an op, the one its next op is blocked on, -1 when it has no op left.
  std::array<std::int8_t, kNumStreams> waits_on{};
  std::array<int, 2> recv_done{};    // receives finished so far, from the previous and the next stage
  int collectives_in_flight = 0;     // NCCL collective kernels resident on the GPU (posted, not done)
  int two_hop_in_flight = 0;         // of those, DeepEP dispatches and combines (CommKind::two_hop)
  std::array<double, kNumMemCategories> mem{};
  double peak = 0;
  std::array<double, kNumMemCategories> at_peak{};  // mem when the peak was reached
  TimeNs oom_time = -1;  // first time over the GPU's memory, -1 when never
  int oom_category = -1;  // the MemCategory whose growth first went over it
  TimeNs compute_idle_since = 0, last_end = 0;
  TimeNs compute_ns = 0, memory_ns = 0, exposed_ns = 0, bubble_ns = 0;
  std::int64_t events = 0;
  double model_flops = 0, recompute_flops = 0;

  // The compute stream's kernel chain (rank.hpp): the kernels up to position chain_last
  // run back to back with one event, at the last one's end; -1 when there is no chain. The
  // kernel running (position next - 1, chained or not) started at kernel_start and ends at
  // kernel_end; chain_in_flight and chain_two_hop are collectives_in_flight and
  // two_hop_in_flight when the chain was timed.
  int chain_last = -1, chain_in_flight = 0, chain_two_hop = 0;
  TimeNs kernel_start = 0, kernel_end = 0;

  std::vector<LocalEvent> queue;  // min-heap by (time, seq)
  std::uint32_t event_seq = 0, action_seq = 0;

  void push(LocalEvent ev) {
    queue.push_back(ev);
    std::push_heap(queue.begin(), queue.end(), std::greater<>());
  }
  // The end of op at `end`: of a kernel of the rank's (local), or delivered by the network.
  void schedule(int op, TimeNs start, TimeNs end, bool local) {
    push(LocalEvent{end, (local ? LocalEvent::kLocal : 0u) | event_seq++, op, start});
  }
  // Produced in the current window, cleared by the merge phase (capacity kept).
  std::vector<Action> actions;
  std::vector<EventRecord> event_records;
  std::vector<MemoryRecord> memory_records;
};

}  // namespace dtsim

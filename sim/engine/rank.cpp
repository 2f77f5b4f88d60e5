// A rank's own events and its kernel chains (see rank.hpp).
#include "sim/engine/rank.hpp"

#include <cmath>
#include <stdexcept>

namespace dtsim {
namespace {

constexpr int kCompute = static_cast<int>(Stream::compute);

// NCCL collectives run as kernels that hold SMs from their launch to their end; sends and
// receives are not counted.
bool is_collective(CommKind k) { return k != CommKind::none && k != CommKind::send && k != CommKind::recv; }
bool is_two_hop(CommKind k) { return k == CommKind::two_hop; }

// How many ops of a sequence (ops.hpp) are done.
int completed(const RankState& s, int seq) {
  return seq < kNumStreams ? s.next[seq] - s.busy[seq] : s.recv_done[seq - kNumStreams];
}

// The sequence whose progress `e`, the next op of `stream`, waits for, or -1 when its
// dependencies are done; resumes after those found done before (done never reverts), so a
// long-blocked op is not rescanned.
int blocking_sequence(RankState& s, const StageOps& table, int stream, const EngineOp& e) {
  int& known = s.deps_known[stream];
  for (int i = e.dep_begin + known; i < e.dep_begin + e.dep_count; ++i, ++known) {
    const SeqPos dep = table.deps[i];
    if (dep.pos >= completed(s, dep.seq)) return dep.seq;
  }
  return -1;
}

bool deps_done(const RankState& s, const StageOps& table, const EngineOp& e) {
  for (int i = e.dep_begin; i < e.dep_begin + e.dep_count; ++i)
    if (table.deps[i].pos >= completed(s, table.deps[i].seq)) return false;
  return true;
}

}  // namespace

void RankEvents::run(RankState& s, int rank, TimeNs window_end) const {
  while (!s.queue.empty() && s.queue.front().time < window_end) {
    std::pop_heap(s.queue.begin(), s.queue.end(), std::greater<>());
    const LocalEvent ev = s.queue.back();
    s.queue.pop_back();
    if (ev.op < 0) {
      start_rank(s, rank);  // a collective its other streams post slows the chain it may begin
    } else {
      const bool local = (ev.seq & LocalEvent::kLocal) != 0;
      if (s.chain_last >= 0) advance_chain(s, rank, ev.time, local);
      if (local && s.kernel_end != ev.time) throw std::logic_error("engine: a kernel chain ended off its timing");
      finish(s, rank, ev);
    }
    if (s.chain_last >= 0 && (s.collectives_in_flight != s.chain_in_flight || s.two_hop_in_flight != s.chain_two_hop))
      retime_chain(s);
  }
}

void RankEvents::start_rank(RankState& s, int rank) const {
  const StageProgram& p = program_.stages[s.stage];
  for (int c = 0; c < kNumMemCategories; ++c) allocate(s, rank, 0, static_cast<MemCategory>(c), p.static_bytes[c]);
  for (int st = 0; st < kNumStreams; ++st) try_start(s, rank, st, 0, false);
}

void RankEvents::allocate(RankState& s, int rank, TimeNs time, MemCategory c, double bytes) const {
  if (bytes == 0) return;
  s.mem[static_cast<int>(c)] += bytes;
  double total = 0;
  for (double b : s.mem) total += b;
  if (total > s.peak) s.peak = total, s.at_peak = s.mem;
  if (total > memory_bytes_ && s.oom_time < 0) s.oom_time = time, s.oom_category = static_cast<int>(c);
  if (s.traced) s.memory_records.push_back(MemoryRecord{rank, time, s.mem[0], s.mem[1], s.mem[2], s.mem[3], s.mem[4]});
}

void RankEvents::apply_memory(RankState& s, int rank, TimeNs time, const EngineOp& e, bool at_end) const {
  const std::vector<MemChange>& changes = program_.stages[s.stage].mem_changes;
  for (int i = e.mem_begin; i < e.mem_begin + e.mem_count; ++i)
    if (changes[i].at_end == at_end) allocate(s, rank, time, changes[i].category, changes[i].bytes);
}

// A kernel that starts while a collective's kernel holds SMs runs on the SMs left to it: NCCL's
// while an NCCL collective is resident, DeepEP's while only its dispatch hops are (a copy-engine
// collective, sm_free, holds none).
TimeNs RankEvents::kernel_time(const RankState& s, const EngineOp& e) const {
  const double slowdown = s.collectives_in_flight == 0                     ? 1.0
                          : s.collectives_in_flight > s.two_hop_in_flight ? comm_slowdown_
                                                                          : two_hop_slowdown_;
  const double speed = s.speed / slowdown;
  return speed == 1 ? e.duration : static_cast<TimeNs>(std::llround(static_cast<double>(e.duration) / speed));
}

// Starts the next op of `stream` if it can start now, and records what the stream waits for
// next (RankState::waits_on). pipeline_wait: the op that just ended brought a pipeline message
// (a receive, or the TP all-gather of a scattered one), so a compute gap it ends is a bubble.
void RankEvents::try_start(RankState& s, int rank, int stream, TimeNs now, bool pipeline_wait) const {
  const StageProgram& p = program_.stages[s.stage];
  const auto& ops = p.stream_ops[stream];
  if (s.busy[stream]) return;
  if (s.next[stream] >= static_cast<int>(ops.size())) {
    s.waits_on[stream] = -1;
    return;
  }
  const int op = ops[s.next[stream]];
  const StageOps& table = ops_[s.stage];
  const EngineOp& e = table.ops[op];
  const int blocking = blocking_sequence(s, table, stream, e);
  if (blocking >= 0) {
    s.waits_on[stream] = static_cast<std::int8_t>(blocking);
    return;
  }
  s.waits_on[stream] = static_cast<std::int8_t>(stream);
  s.busy[stream] = true;
  ++s.next[stream];
  s.deps_known[stream] = 0;
  apply_memory(s, rank, now, e, false);
  if (e.comm != CommKind::none) {
    if (is_collective(e.comm) && !e.sm_free) ++s.collectives_in_flight;
    if (is_two_hop(e.comm)) ++s.two_hop_in_flight;
    s.actions.push_back(Action{now, rank, s.action_seq++, op});
    return;
  }
  const TimeNs gap = now - s.compute_idle_since;
  if (gap > 0) (pipeline_wait ? s.bubble_ns : s.exposed_ns) += gap;
  const TimeNs end = start_kernel(s, e, now);
  if (s.traced || !chains_ || stream != kCompute) s.schedule(op, now, end, true);
  else chain_from(s, op, end);
}

// Times a kernel starting now and counts it in the time breakdown; returns its end.
TimeNs RankEvents::start_kernel(RankState& s, const EngineOp& e, TimeNs now) const {
  const TimeNs d = kernel_time(s, e);
  (e.memory_bound ? s.memory_ns : s.compute_ns) += d;
  s.kernel_start = now;
  s.kernel_end = now + d;
  return s.kernel_end;
}

// The compute stream just started `op`, ending at `end`: schedules the end of the chain it
// begins (only its own end when nothing can follow it without an event).
void RankEvents::chain_from(RankState& s, int op, TimeNs end) const {
  const auto& order = program_.stages[s.stage].stream_ops[kCompute];
  const StageOps& table = ops_[s.stage];
  const int first = s.next[kCompute] - 1;
  int pos = first;
  TimeNs start = s.kernel_start;
  while (!table.ops[order[pos]].observed && pos + 1 < static_cast<int>(order.size())) {
    const EngineOp& e = table.ops[order[pos + 1]];
    if (e.comm != CommKind::none || !deps_done(s, table, e)) break;
    ++pos;
    start = end;
    end += kernel_time(s, e);
  }
  if (pos > first) {
    s.chain_last = pos;
    s.chain_in_flight = s.collectives_in_flight, s.chain_two_hop = s.two_hop_in_flight;
  }
  s.schedule(pos > first ? order[pos] : op, start, end, true);
}

// Handles the chain's kernels that end before `before` (every one but the last when
// through_end): each end as finish() does and the next start as try_start() does; their
// dependencies were done when the chain was timed, and no other stream waits for their ends.
void RankEvents::advance_chain(RankState& s, int rank, TimeNs before, bool through_end) const {
  const auto& order = program_.stages[s.stage].stream_ops[kCompute];
  const StageOps& table = ops_[s.stage];
  while (s.chain_last >= 0 && (through_end || s.kernel_end < before)) {
    const int pos = s.next[kCompute] - 1;
    const EngineOp& done = table.ops[order[pos]];
    const TimeNs now = s.kernel_end;
    apply_memory(s, rank, now, done, true);
    ++s.events;
    (done.recompute ? s.recompute_flops : s.model_flops) += done.flops;
    s.last_end = std::max(s.last_end, now);
    s.compute_idle_since = now;
    const EngineOp& e = table.ops[order[pos + 1]];
    ++s.next[kCompute];
    s.deps_known[kCompute] = 0;
    apply_memory(s, rank, now, e, false);
    start_kernel(s, e, now);
    if (pos + 1 == s.chain_last) s.chain_last = -1;
  }
}

// The resident collectives changed while a chain runs: its kernels not yet started get the
// speed they now start at, and its event moves to the new end.
void RankEvents::retime_chain(RankState& s) const {
  const auto& order = program_.stages[s.stage].stream_ops[kCompute];
  const StageOps& table = ops_[s.stage];
  TimeNs start = s.kernel_start, end = s.kernel_end;
  for (int pos = s.next[kCompute]; pos <= s.chain_last; ++pos) {
    start = end;
    end += kernel_time(s, table.ops[order[pos]]);
  }
  s.chain_in_flight = s.collectives_in_flight, s.chain_two_hop = s.two_hop_in_flight;
  for (LocalEvent& ev : s.queue)
    if (ev.seq & LocalEvent::kLocal) ev.time = end, ev.start = start;
  std::make_heap(s.queue.begin(), s.queue.end(), std::greater<>());
}

void RankEvents::finish(RankState& s, int rank, const LocalEvent& ev) const {
  const int op = ev.op;
  const StageOps& table = ops_[s.stage];
  const EngineOp& e = table.ops[op];
  apply_memory(s, rank, ev.time, e, true);
  ++s.events;
  if (e.comm == CommKind::recv) {
    int& received = s.recv_done[e.seq - kNumStreams];
    if (table.recv_pos[op] != received) throw std::logic_error("engine: a receive finished out of its peer's send order");
    ++received;
  }
  (e.recompute ? s.recompute_flops : s.model_flops) += e.flops;
  if (s.traced) {
    const StageProgram& p = program_.stages[s.stage];
    const std::int8_t category = e.comm != CommKind::none ? 2 : e.memory_bound ? 1 : 0;
    s.event_records.push_back(EventRecord{rank, static_cast<std::int8_t>(p.stream[op]), category,
                                          static_cast<std::int8_t>(p.phase[op]), static_cast<std::int16_t>(p.kind[op]),
                                          p.layer[op], p.micro_batch[op], ev.start, ev.time, p.flops[op], p.bytes[op]});
  }
  s.last_end = std::max(s.last_end, ev.time);
  if (e.comm != CommKind::recv) s.busy[static_cast<int>(e.stream)] = false;
  if (is_collective(e.comm) && !e.sm_free) --s.collectives_in_flight;
  if (is_two_hop(e.comm)) --s.two_hop_in_flight;
  if (e.comm == CommKind::none) s.compute_idle_since = ev.time;
  // Communication first: a collective posted at the same instant as a kernel is launched
  // before it (frameworks issue the asynchronous collective, then the overlapping GEMM).
  // Only the streams waiting for this op's sequence can start now.
  for (int st = 1; st <= kNumStreams; ++st)
    if (s.waits_on[st % kNumStreams] == e.seq) try_start(s, rank, st % kNumStreams, ev.time, e.pipeline);
}

}  // namespace dtsim

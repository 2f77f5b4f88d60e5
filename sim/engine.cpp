// The discrete-event loop in conservative windows: rank-local handling (op completions, starts,
// memory, the compute stream's time breakdown) in parallel, then the sequential merge of
// cross-rank actions (rendezvous of collectives, sends) with the network's events, and of the
// trace records, in (time, rank, sequence) order. See engine.hpp for why this is exact.
#include "sim/engine.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cassert>
#include <functional>
#include <stdexcept>

#include "sim/engine_deps.hpp"
#include "sim/engine_rank_heads.hpp"
#include "sim/engine_state.hpp"
#include "sim/engine_result.hpp"
#include "sim/transfers.hpp"

namespace dtsim {
namespace {

// A cross-rank effect is a transfer completion; every transfer pays at least the smallest launch
// base of the protocols in its latency tail, so nothing a rank does at t reaches another rank
// before t + kLookaheadNs. The merge phase checks it.
// NCCL collectives run as kernels that hold SMs from their launch to their end; sends and
// receives are not counted.
bool is_collective(CommKind k) { return k != CommKind::none && k != CommKind::send && k != CommKind::recv; }

constexpr TimeNs kLookaheadNs = *std::min_element(std::begin(CommModel::kBaseNs), std::end(CommModel::kBaseNs));
// Windows with fewer active ranks run on one thread: forking costs more than the few events
// save (BLOOM's windows hold ~30 events: 1.7 s on 1 or 2 threads with this threshold, 2.0 s on 2
// threads without it). The order of work is the same either way.
constexpr std::size_t kMinParallelRanks = 128;

// A pending collective of one group: members that posted it and when the last one did.
struct Rendezvous {
  int arrived = 0;
  TimeNs latest = 0;
};

// The op a transfer completes: a send of `rank` (op), or a collective of the group led by `rank`
// (each member completes the op it posted on `stream`).
struct CommSlot {
  int rank;
  int op;
  Group group;
  Stream stream;
};

struct StageTimes {
  std::vector<TimeNs> duration;
  std::vector<std::uint8_t> memory_bound;
};

class Simulation {
 public:
  Simulation(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, const CommModel& comm,
             const ComputeModel& compute, TraceSink* sink, TraceDetail detail, const EngineOptions& options)
      : program_(program), plan_(program.plan), graph_(graph), gpu_(gpu), comm_(comm), sink_(sink),
        peak_flops_(compute.peak_flops()), comm_slowdown_(compute.comm_overlap_slowdown()),
        threads_(std::max(1, options.threads)), transfers_(graph, comm.router()), heads_(program.plan.num_ranks()) {
    const int n = plan_.num_ranks();
    ranks_.resize(n);
    send_paths_.resize(2 * static_cast<std::size_t>(n));
    for (GroupState& g : groups_) {
      g.rendezvous.resize(n);
      g.rings.resize(n);
      g.members.resize(n);
    }
    for (const StageProgram& stage : program.stages) {
      StageTimes t;
      for (int i = 0; i < stage.size(); ++i) {
        const OpTiming timing = stage.comm[i] != CommKind::none ? OpTiming{} : compute.time(stage, i);
        t.duration.push_back(stage.comm[i] != CommKind::none ? 0 : timing.duration_ns);
        t.memory_bound.push_back(stage.comm[i] != CommKind::none ? 0 : timing.memory_bound);
      }
      times_.push_back(std::move(t));
      deps_.emplace_back(stage);
    }
    for (int r = 0; r < n; ++r) {
      RankState& s = ranks_[r];
      const RankCoords c = plan_.coords(r);
      s.stage = c.pp;
      s.traced = sink_ && (detail == TraceDetail::all || (detail == TraceDetail::stages && c.tp == 0 && c.dp == 0));
      if (!options.gpu_speed.empty()) s.speed = options.gpu_speed.at(r);
      push_local(s, LocalEvent{0, 0, -1, 0});
      heads_.set(r, 0);
    }
  }

  EngineResult run() {
    tbb::task_arena arena(threads_);
    while (true) {
      const TimeNs net = network_next();
      const TimeNs t = std::min(net, heads_.min_time());
      if (t == Transfers::kNever) break;
      window_end_ = t + kLookaheadNs;
      active_.clear();
      heads_.take_before(window_end_, active_);
      auto handle = [this](std::size_t i) {
        prefetch(i + 8, false);
        prefetch(i + 4, true);
        run_rank(ranks_[active_[i]], active_[i]);
      };
      if (threads_ == 1 || active_.size() < kMinParallelRanks) {
        for (std::size_t i = 0; i < active_.size(); ++i) handle(i);
      } else {
        arena.execute([&] {
          tbb::parallel_for(tbb::blocked_range<std::size_t>(0, active_.size(), 8), [&](const auto& range) {
            for (std::size_t i = range.begin(); i != range.end(); ++i) handle(i);
          });
        });
      }
      merge_window();
    }
    return result();
  }

 private:
  static void push_local(RankState& s, LocalEvent ev) {
    s.queue.push_back(ev);
    std::push_heap(s.queue.begin(), s.queue.end(), std::greater<>());
  }
  // At 16K ranks the ranks' states do not fit in cache and a window visits each active rank
  // once: fetch the state of the i-th active rank ahead of its turn (first the state, then its
  // queue). No effect on results.
  void prefetch(std::size_t i, bool deep) const {
    if (i >= active_.size()) return;
    const RankState& s = ranks_[active_[i]];
    if (!deep) {
      const char* base = reinterpret_cast<const char*>(&s);
      for (std::size_t line = 0; line < sizeof(RankState); line += 64) __builtin_prefetch(base + line);
      return;
    }
    __builtin_prefetch(s.queue.data());
  }

  // Sets the rank's head time to its earliest pending event (a rank with none keeps no head).
  void push_head(int rank) {
    const RankState& s = ranks_[rank];
    if (!s.queue.empty()) heads_.set(rank, s.queue.front().time);
  }
  TimeNs network_next() const {
    const TimeNs next = transfers_.next_event();
    return next == Transfers::kNever ? next : std::max(next, net_now_);
  }

  // ---- Parallel phase: everything below until merge_window() touches only rank `rank`. ----

  void run_rank(RankState& s, int rank) {
    while (!s.queue.empty() && s.queue.front().time < window_end_) {
      std::pop_heap(s.queue.begin(), s.queue.end(), std::greater<>());
      const LocalEvent ev = s.queue.back();
      s.queue.pop_back();
      if (ev.op < 0) start_rank(s, rank);
      else finish(s, rank, ev);
    }
  }

  void schedule(RankState& s, int op, TimeNs start, TimeNs end) { push_local(s, LocalEvent{end, s.event_seq++, op, start}); }

  void start_rank(RankState& s, int rank) {
    const StageProgram& p = program_.stages[s.stage];
    for (int c = 0; c < kNumMemCategories; ++c) allocate(s, rank, 0, static_cast<MemCategory>(c), p.static_bytes[c]);
    for (int st = 0; st < kNumStreams; ++st) try_start(s, rank, st, 0, false);
  }

  void allocate(RankState& s, int rank, TimeNs time, MemCategory c, double bytes) {
    if (bytes == 0) return;
    s.mem[static_cast<int>(c)] += bytes;
    double total = 0;
    for (double b : s.mem) total += b;
    s.peak = std::max(s.peak, total);
    if (total > gpu_.memory_bytes && s.oom_time < 0) s.oom_time = time;
    if (s.traced) s.memory_records.push_back(MemoryRecord{rank, time, s.mem[0], s.mem[1], s.mem[2], s.mem[3], s.mem[4]});
  }

  void apply_memory(RankState& s, int rank, TimeNs time, const StageProgram& p, int op, bool at_end) {
    for (int i = p.mem_begin[op]; i < p.mem_begin[op + 1]; ++i)
      if (p.mem_changes[i].at_end == at_end) allocate(s, rank, time, p.mem_changes[i].category, p.mem_changes[i].bytes);
  }

  // The sequence (engine_deps.hpp) whose progress `op`, the next op of `stream`, waits for, or
  // -1 when its dependencies are done; resumes after those found done before (done never
  // reverts), so a long-blocked op is not rescanned.
  int blocking_sequence(RankState& s, int stream, int op) const {
    const StageDeps& d = deps_[s.stage];
    int& known = s.deps_known[stream];
    for (int i = d.begin[op] + known; i < d.begin[op + 1]; ++i, ++known) {
      const SeqPos dep = d.deps[i];
      const int completed = dep.seq < kNumStreams ? s.next[dep.seq] - s.busy[dep.seq] : s.recv_done[dep.seq - kNumStreams];
      if (dep.pos >= completed) return dep.seq;
    }
    return -1;
  }

  // Starts the next op of `stream` if it can start now, and records what the stream waits for
  // next (RankState::waits_on). pipeline_wait: the op that just ended brought a pipeline message
  // (a receive, or the TP all-gather of a scattered one), so a compute gap it ends is a bubble.
  void try_start(RankState& s, int rank, int stream, TimeNs now, bool pipeline_wait) {
    const StageProgram& p = program_.stages[s.stage];
    const auto& ops = p.stream_ops[stream];
    if (s.busy[stream]) return;
    if (s.next[stream] >= static_cast<int>(ops.size())) {
      s.waits_on[stream] = -1;
      return;
    }
    const int op = ops[s.next[stream]];
    const int blocking = blocking_sequence(s, stream, op);
    if (blocking >= 0) {
      s.waits_on[stream] = static_cast<std::int8_t>(blocking);
      return;
    }
    s.waits_on[stream] = static_cast<std::int8_t>(stream);
    s.busy[stream] = true;
    ++s.next[stream];
    s.deps_known[stream] = 0;
    apply_memory(s, rank, now, p, op, false);
    if (p.comm[op] != CommKind::none) {
      if (is_collective(p.comm[op])) ++s.collectives_in_flight;
      s.actions.push_back(Action{now, rank, s.action_seq++, op});
      return;
    }
    const TimeNs gap = now - s.compute_idle_since;
    if (gap > 0) (pipeline_wait ? s.bubble_ns : s.exposed_ns) += gap;
    // A kernel that starts while a collective's kernel holds SMs runs on the SMs left to it.
    const double speed = s.speed / (s.collectives_in_flight > 0 ? comm_slowdown_ : 1.0);
    const TimeNs nominal = times_[s.stage].duration[op];
    const TimeNs d = speed == 1 ? nominal : static_cast<TimeNs>(std::llround(static_cast<double>(nominal) / speed));
    (times_[s.stage].memory_bound[op] ? s.memory_ns : s.compute_ns) += d;
    schedule(s, op, now, now + d);
  }

  void finish(RankState& s, int rank, const LocalEvent& ev) {
    const StageProgram& p = program_.stages[s.stage];
    const int op = ev.op;
    apply_memory(s, rank, ev.time, p, op, true);
    ++s.events;
    const CommKind comm = p.comm[op];
    if (comm == CommKind::recv) {
      const SeqPos w = deps_[s.stage].where[op];
      int& received = s.recv_done[w.seq - kNumStreams];
      if (w.pos != received) throw std::logic_error("engine: a receive finished out of its peer's send order");
      ++received;
    }
    if (p.gemm_m[op] > 0) (p.phase[op] == Phase::recompute ? s.recompute_flops : s.model_flops) += p.flops[op];
    if (s.traced) {
      const std::int8_t category = comm != CommKind::none ? 2 : times_[s.stage].memory_bound[op] ? 1 : 0;
      s.event_records.push_back(EventRecord{rank, static_cast<std::int8_t>(p.stream[op]), category,
                                            static_cast<std::int8_t>(p.phase[op]), static_cast<std::int16_t>(p.kind[op]),
                                            p.layer[op], p.micro_batch[op], ev.start, ev.time, p.flops[op], p.bytes[op]});
    }
    s.last_end = std::max(s.last_end, ev.time);
    if (comm != CommKind::recv) s.busy[static_cast<int>(p.stream[op])] = false;
    if (is_collective(comm)) --s.collectives_in_flight;
    if (comm == CommKind::none) s.compute_idle_since = ev.time;
    const bool pipeline = p.kind[op] == OpKind::pp_recv || p.kind[op] == OpKind::pp_all_gather;
    // Communication first: a collective posted at the same instant as a kernel is launched
    // before it (frameworks issue the asynchronous collective, then the overlapping GEMM).
    // Only the streams waiting for this op's sequence can start now.
    const int sequence = deps_[s.stage].where[op].seq;
    for (int st = 1; st <= kNumStreams; ++st)
      if (s.waits_on[st % kNumStreams] == sequence) try_start(s, rank, st % kNumStreams, ev.time, pipeline);
  }

  // ---- Merge phase: sequential, in (time, rank, sequence) order. ----

  void merge_window() {
    actions_.clear();
    for (int r : active_) {
      RankState& s = ranks_[r];
      actions_.insert(actions_.end(), s.actions.begin(), s.actions.end());
      s.actions.clear();
    }
    std::sort(actions_.begin(), actions_.end(), [](const Action& a, const Action& b) {
      return a.time != b.time ? a.time < b.time : a.rank != b.rank ? a.rank < b.rank : a.seq < b.seq;
    });
    for (const Action& a : actions_) {
      run_network(a.time);
      apply(a);
    }
    run_network(window_end_ - 1);
    for (int r : active_) push_head(r);
    if (sink_) write_records();
  }

  // Network events up to and including `limit`; the network's own events come before rank
  // events at the same time.
  void run_network(TimeNs limit) {
    for (TimeNs t = network_next(); t <= limit; t = network_next()) network_event(t);
  }

  void write_records() {
    keys_.clear();
    for (int r : active_)
      for (std::size_t i = 0; i < ranks_[r].event_records.size(); ++i)
        keys_.push_back(RecordKey{ranks_[r].event_records[i].end_ns, r, static_cast<std::uint32_t>(i)});
    std::sort(keys_.begin(), keys_.end());
    for (const RecordKey& k : keys_) sink_->event(ranks_[k.rank].event_records[k.index]);
    keys_.clear();
    for (int r : active_)
      for (std::size_t i = 0; i < ranks_[r].memory_records.size(); ++i)
        keys_.push_back(RecordKey{ranks_[r].memory_records[i].time_ns, r, static_cast<std::uint32_t>(i)});
    std::sort(keys_.begin(), keys_.end());
    for (const RecordKey& k : keys_) sink_->memory(ranks_[k.rank].memory_records[k.index]);
    for (int r : active_) {
      ranks_[r].event_records.clear();
      ranks_[r].memory_records.clear();
    }
  }

  void apply(const Action& a) {
    const StageProgram& p = program_.stages[ranks_[a.rank].stage];
    if (p.comm[a.op] != CommKind::send) return post_collective(a.rank, a.op, a.time);
    const int dst = peer(a.rank, p.group[a.op]);
    const SendPath& send = send_path(a.rank, p.group[a.op] == Group::pp_next, dst);
    hops_.assign(1, HopFlow{a.rank, dst, p.bytes[a.op] / CommModel::send_wire_factor(send.path), 0, send.route});
    const TimeNs tail = comm_.send_tail(send.path);
    start_transfer(a.time, std::span<const TimeNs>(&tail, 1), CommSlot{a.rank, a.op, p.group[a.op], p.stream[a.op]});
  }

  // A rank's route to its next or previous pipeline stage and its parameters, looked up once.
  struct SendPath {
    const RouteInfo* route = nullptr;
    PathParams path;
  };
  const SendPath& send_path(int rank, bool to_next, int dst) {
    SendPath& send = send_paths_[2 * rank + (to_next ? 1 : 0)];
    if (!send.route) {
      send.route = &comm_.router().route(rank, dst);
      send.path = comm_.path(rank, dst);
    }
    return send;
  }

  // Ranks of this rank's TP, DP, embedding, EP or expert-DP group in ring order; the first is the
  // group's leader. The embedding group joins the first and last pipeline stages (tied
  // embeddings); the EP group is the block of ep consecutive DP ranks holding this rank, the
  // expert-DP group the DP ranks at this rank's position in every block. Built once per group,
  // on first use.
  const std::vector<int>& members(int rank, Group g) {
    RankCoords c = plan_.coords(rank);
    int& coord = g == Group::tp ? c.tp : g == Group::embedding ? c.pp : c.dp;
    const int base = g == Group::ep ? c.dp / plan_.ep * plan_.ep : g == Group::expert_dp ? c.dp % plan_.ep : 0;
    const int stride = g == Group::expert_dp ? plan_.ep : 1;
    const int size = g == Group::tp ? plan_.tp : g == Group::ep ? plan_.ep : g == Group::expert_dp ? plan_.expert_dp()
                                                                                                  : plan_.dp;
    coord = base;
    std::vector<int>& out = state(g).members[plan_.rank_of(c)];
    if (out.empty()) {
      if (g == Group::embedding) {
        out.push_back(plan_.rank_of(c));
        coord = plan_.pp - 1;
        out.push_back(plan_.rank_of(c));
      } else {
        for (int i = 0; i < size; ++i) {
          coord = base + i * stride;
          out.push_back(plan_.rank_of(c));
        }
      }
    }
    return out;
  }

  struct GroupState {
    std::vector<Rendezvous> rendezvous;      // indexed by group leader rank
    std::vector<RingSet> rings;              // rings of the group, computed on first use
    std::vector<std::vector<int>> members;
  };
  GroupState& state(Group g) {
    return groups_[g == Group::tp ? 0 : g == Group::dp ? 1 : g == Group::embedding ? 2 : g == Group::ep ? 3 : 4];
  }

  // The neighbouring stage; with interleaving the last stage feeds the first (next chunk).
  int peer(int rank, Group g) const {
    RankCoords c = plan_.coords(rank);
    c.pp = (c.pp + (g == Group::pp_next ? 1 : plan_.pp - 1)) % plan_.pp;
    return plan_.rank_of(c);
  }

  void start_transfer(TimeNs now, std::span<const TimeNs> phase_tails, CommSlot slot) {
    int tag;
    if (free_slots_.empty()) {
      tag = static_cast<int>(slots_.size());
      slots_.push_back(slot);
    } else {
      tag = free_slots_.back();
      free_slots_.pop_back();
      slots_[tag] = slot;
    }
    net_now_ = std::max(net_now_, now);
    transfers_.start(now, hops_, phase_tails, tag);
  }

  void post_collective(int rank, int op, TimeNs now) {
    const StageProgram& p = program_.stages[ranks_[rank].stage];
    const Group g = p.group[op];
    const std::vector<int>& group = members(rank, g);
    const int leader = group.front();
    Rendezvous& rv = state(g).rendezvous[leader];
    ++rv.arrived;
    rv.latest = std::max(rv.latest, now);
    if (rv.arrived < static_cast<int>(group.size())) return;
    RingSet& rings = state(g).rings[leader];
    if (rings.rings.empty()) rings = comm_.rings(group);
    const CollectiveCost cost = comm_.cost(p.comm[op], p.bytes[op], rings);
    lower_collective(p.comm[op], p.bytes[op], rings, cost, hops_);
    const TimeNs latest = rv.latest;
    rv = Rendezvous{};
    start_transfer(latest, cost.tails(), CommSlot{leader, op, g, p.stream[op]});
  }

  // A rank event caused by the network; it must lie beyond the current window (lookahead).
  void schedule_remote(int rank, int op, TimeNs start, TimeNs end) {
    if (end < window_end_)
      throw std::logic_error("engine: a transfer ended within the lookahead window; its latency tail is below "
                             "kLookaheadNs");
    schedule(ranks_[rank], op, start, end);
    push_head(rank);
  }

  // Flows finished: complete the sends (and deliver their receives) and the collectives whose
  // last flow ended.
  void network_event(TimeNs now) {
    net_now_ = std::max(net_now_, now);
    finished_.clear();
    transfers_.collect(net_now_, finished_);
    for (const FinishedTransfer& f : finished_) {
      const CommSlot slot = slots_[f.tag];
      free_slots_.push_back(f.tag);
      if (slot.group != Group::pp_next && slot.group != Group::pp_prev) {
        // Members may run different stage programs (the embedding group): each completes the op
        // it posted, the one before the cursor of the collective's stream.
        const int st = static_cast<int>(slot.stream);
        for (int member : members(slot.rank, slot.group)) {
          const RankState& m = ranks_[member];
          schedule_remote(member, program_.stages[m.stage].stream_ops[st][m.next[st] - 1], f.start_ns, f.end_ns);
        }
        continue;
      }
      schedule_remote(slot.rank, slot.op, f.start_ns, f.end_ns);
      const int dst = peer(slot.rank, slot.group);
      RankState& d = ranks_[dst];
      const StageProgram& dp = program_.stages[d.stage];
      const bool from_prev = slot.group == Group::pp_next;
      const auto& list = from_prev ? dp.recv_from_prev : dp.recv_from_next;
      int& index = from_prev ? d.recv_prev : d.recv_next;
      assert(index < static_cast<int>(list.size()));
      schedule_remote(dst, list[index++], f.start_ns, f.end_ns);
    }
  }

  EngineResult result() const {
    return summarize_step(ranks_, program_, graph_, gpu_, peak_flops_, transfers_);
  }

  struct RecordKey {
    TimeNs time;
    int rank;
    std::uint32_t index;
    bool operator<(const RecordKey& o) const {
      return time != o.time ? time < o.time : rank != o.rank ? rank < o.rank : index < o.index;
    }
  };

  const Program& program_;
  const ParallelPlan& plan_;
  const ClusterGraph& graph_;
  const GpuSpec& gpu_;
  const CommModel& comm_;
  TraceSink* sink_;
  double peak_flops_;
  double comm_slowdown_;  // compute slowdown while a collective's kernel is resident
  int threads_;
  std::vector<RankState> ranks_;
  std::vector<StageTimes> times_;
  std::vector<StageDeps> deps_;
  GroupState groups_[5];  // TP, DP, embedding, EP, expert DP
  Transfers transfers_;
  std::vector<SendPath> send_paths_;  // per rank: to the previous stage, to the next
  std::vector<CommSlot> slots_;  // what each transfer completes, indexed by its tag
  std::vector<int> free_slots_;
  std::vector<HopFlow> hops_;    // scratch for the flows of one transfer
  std::vector<FinishedTransfer> finished_;
  TimeNs net_now_ = 0;           // the network's clock
  TimeNs window_end_ = 0;        // the current window is [earliest event, window_end_)
  RankHeads heads_;              // head times of the ranks not in the current window
  std::vector<int> active_;      // ranks with events in the current window, ascending
  std::vector<Action> actions_;
  std::vector<RecordKey> keys_;
};

}  // namespace

Engine::Engine(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, Precision precision,
               std::optional<Protocol> protocol, std::optional<Algorithm> algorithm)
    : program_(program), graph_(graph), gpu_(gpu), router_(graph), comm_(graph, router_, protocol, algorithm),
      compute_(gpu, precision, program.plan.attention) {}

EngineResult Engine::run(TraceSink* sink, TraceDetail detail, const EngineOptions& options) {
  if (!options.gpu_speed.empty() && static_cast<int>(options.gpu_speed.size()) != program_.plan.num_ranks())
    throw std::invalid_argument("EngineOptions::gpu_speed: one factor per rank");
  return Simulation(program_, graph_, gpu_, comm_, compute_, sink, detail, options).run();
}

}  // namespace dtsim

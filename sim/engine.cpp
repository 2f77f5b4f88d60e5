// The discrete-event loop: ranks, streams, rendezvous of collectives, delivery of sends, memory
// accounting and the per-rank time breakdown of the compute stream.
#include "sim/engine.hpp"

#include "sim/transfers.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <queue>

namespace dtsim {
namespace {

// A small POD; ordered by (time, rank, sequence) so the order never depends on anything else.
struct Event {
  TimeNs time;
  std::int32_t rank;
  std::int32_t op;
  std::uint64_t seq;
  TimeNs start;
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (rank != o.rank) return rank > o.rank;
    return seq > o.seq;
  }
};

struct RankState {
  int stage = 0;
  std::vector<std::uint8_t> done;
  std::array<int, kNumStreams> next{};
  std::array<bool, kNumStreams> busy{};
  int recv_prev = 0, recv_next = 0;  // receives delivered so far, per peer direction
  std::array<double, kNumMemCategories> mem{};
  double peak = 0;
  TimeNs compute_idle_since = 0, last_end = 0;
  TimeNs compute_ns = 0, memory_ns = 0, exposed_ns = 0, bubble_ns = 0;
  bool traced = false;
};

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

constexpr std::int32_t kNetwork = -1;  // Event::rank of network events (flow completions)

struct StageTimes {
  std::vector<TimeNs> duration;
  std::vector<std::uint8_t> memory_bound;
};

class Simulation {
 public:
  Simulation(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, const CommModel& comm,
             const ComputeModel& compute, TraceSink* sink, TraceDetail detail)
      : program_(program), plan_(program.plan), graph_(graph), gpu_(gpu), comm_(comm), sink_(sink),
        peak_flops_(compute.peak_flops()), transfers_(graph, comm.router()) {
    const int n = plan_.num_ranks();
    ranks_.resize(n);
    for (GroupState& g : groups_) {
      g.rendezvous.resize(n);
      g.rings.resize(n);
      g.members.resize(n);
    }
    for (const StageProgram& stage : program.stages) {
      StageTimes t;
      for (int i = 0; i < stage.size(); ++i) {
        if (stage.comm[i] != CommKind::none) {
          t.duration.push_back(0);
          t.memory_bound.push_back(0);
          continue;
        }
        const OpTiming timing = compute.time(stage, i);
        t.duration.push_back(timing.duration_ns);
        t.memory_bound.push_back(timing.memory_bound);
      }
      times_.push_back(std::move(t));
    }
    for (int r = 0; r < n; ++r) {
      RankState& s = ranks_[r];
      const RankCoords c = plan_.coords(r);
      s.stage = c.pp;
      s.done.assign(program.stages[s.stage].size(), 0);
      s.traced = sink_ && (detail == TraceDetail::all || (detail == TraceDetail::stages && c.tp == 0 && c.dp == 0));
    }
  }

  EngineResult run() {
    for (int r = 0; r < plan_.num_ranks(); ++r) {
      const StageProgram& p = program_.stages[ranks_[r].stage];
      for (int c = 0; c < kNumMemCategories; ++c) allocate(r, 0, static_cast<MemCategory>(c), p.static_bytes[c]);
      for (int s = 0; s < kNumStreams; ++s) try_start(r, s, 0, false);
    }
    while (!queue_.empty()) {
      const Event ev = queue_.top();
      queue_.pop();
      if (ev.rank == kNetwork) network_event(ev.time);
      else finish(ev);
    }
    return result();
  }

 private:
  void schedule(int rank, int op, TimeNs start, TimeNs end) { queue_.push(Event{end, rank, op, seq_++, start}); }

  void allocate(int rank, TimeNs time, MemCategory c, double bytes) {
    if (bytes == 0) return;
    RankState& s = ranks_[rank];
    s.mem[static_cast<int>(c)] += bytes;
    double total = 0;
    for (double b : s.mem) total += b;
    s.peak = std::max(s.peak, total);
    if (total > gpu_.memory_bytes && oom_rank_ < 0) {
      oom_rank_ = rank;
      oom_time_ = time;
    }
    if (s.traced)
      sink_->memory(MemoryRecord{rank, time, s.mem[0], s.mem[1], s.mem[2], s.mem[3], s.mem[4]});
  }

  void apply_memory(int rank, TimeNs time, const StageProgram& p, int op, bool at_end) {
    for (int i = p.mem_begin[op]; i < p.mem_begin[op + 1]; ++i)
      if (p.mem_changes[i].at_end == at_end) allocate(rank, time, p.mem_changes[i].category, p.mem_changes[i].bytes);
  }

  bool deps_done(const RankState& s, const StageProgram& p, int op) const {
    for (int i = p.dep_begin[op]; i < p.dep_begin[op + 1]; ++i)
      if (!s.done[p.deps[i]]) return false;
    return true;
  }

  // Ranks of this rank's TP, DP or embedding group in ring order; the first is the group's
  // leader. The embedding group joins the first and last pipeline stages (tied embeddings).
  // Built once per group, on first use.
  const std::vector<int>& members(int rank, Group g) {
    RankCoords c = plan_.coords(rank);
    int& coord = g == Group::tp ? c.tp : g == Group::dp ? c.dp : c.pp;
    coord = 0;
    std::vector<int>& out = state(g).members[plan_.rank_of(c)];
    if (out.empty()) {
      if (g == Group::embedding) {
        out.push_back(plan_.rank_of(c));
        coord = plan_.pp - 1;
        out.push_back(plan_.rank_of(c));
      } else {
        for (int i = 0; i < (g == Group::tp ? plan_.tp : plan_.dp); ++i) {
          coord = i;
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
  GroupState& state(Group g) { return groups_[g == Group::tp ? 0 : g == Group::dp ? 1 : 2]; }

  // The neighbouring stage; with interleaving the last stage feeds the first (next chunk).
  int peer(int rank, Group g) const {
    RankCoords c = plan_.coords(rank);
    c.pp = (c.pp + (g == Group::pp_next ? 1 : plan_.pp - 1)) % plan_.pp;
    return plan_.rank_of(c);
  }

  // Starts a transfer and makes sure a network event is queued for its network's next change.
  void start_transfer(TimeNs now, TimeNs tail_ns, CommSlot slot) {
    int tag;
    if (free_slots_.empty()) {
      tag = static_cast<int>(slots_.size());
      slots_.push_back(slot);
    } else {
      tag = free_slots_.back();
      free_slots_.pop_back();
      slots_[tag] = slot;
    }
    transfers_.start(now, hops_, tail_ns, tag);
    wake_network(now);
  }

  void wake_network(TimeNs now) {
    const TimeNs next = std::max(transfers_.next_event(), now);
    if (next == Transfers::kNever || next >= network_wakeup_) return;
    network_wakeup_ = next;
    queue_.push(Event{next, kNetwork, -1, seq_++, 0});
  }

  // Flows finished: complete the sends and collectives whose last flow ended.
  void network_event(TimeNs now) {
    if (now == network_wakeup_) network_wakeup_ = Transfers::kNever;
    finished_.clear();
    transfers_.collect(now, finished_);
    for (const FinishedTransfer& f : finished_) {
      const CommSlot slot = slots_[f.tag];
      free_slots_.push_back(f.tag);
      if (slot.group == Group::tp || slot.group == Group::dp || slot.group == Group::embedding) {
        // Members may run different stage programs (the embedding group): each completes the op
        // it posted, the one before the cursor of the collective's stream.
        const int st = static_cast<int>(slot.stream);
        for (int member : members(slot.rank, slot.group)) {
          const RankState& m = ranks_[member];
          schedule(member, program_.stages[m.stage].stream_ops[st][m.next[st] - 1], f.start_ns, f.end_ns);
        }
      } else {
        schedule(slot.rank, slot.op, f.start_ns, f.end_ns);
      }
    }
    wake_network(now);
  }

  // pipeline_wait: the op that just ended brought a pipeline message (a receive, or the TP
  // all-gather of a scattered one), so a compute gap it ends is a bubble.
  void try_start(int rank, int stream, TimeNs now, bool pipeline_wait) {
    RankState& s = ranks_[rank];
    const StageProgram& p = program_.stages[s.stage];
    const auto& ops = p.stream_ops[stream];
    if (s.busy[stream] || s.next[stream] >= static_cast<int>(ops.size())) return;
    const int op = ops[s.next[stream]];
    if (!deps_done(s, p, op)) return;
    s.busy[stream] = true;
    ++s.next[stream];
    apply_memory(rank, now, p, op, false);
    const CommKind comm = p.comm[op];
    if (comm == CommKind::none) {
      const TimeNs gap = now - s.compute_idle_since;
      if (gap > 0) (pipeline_wait ? s.bubble_ns : s.exposed_ns) += gap;
      const TimeNs d = times_[s.stage].duration[op];
      (times_[s.stage].memory_bound[op] ? s.memory_ns : s.compute_ns) += d;
      schedule(rank, op, now, now + d);
    } else if (comm == CommKind::send) {
      const int dst = peer(rank, p.group[op]);
      const PathParams path = comm_.path(rank, dst);
      hops_.assign(1, HopFlow{rank, dst, p.bytes[op] / CommModel::send_wire_factor(path)});
      start_transfer(now, comm_.send_tail(path), CommSlot{rank, op, p.group[op], p.stream[op]});
    } else {
      post_collective(rank, op, now);
    }
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
    const TimeNs tail = cost.tail_ns;
    const TimeNs latest = rv.latest;
    rv = Rendezvous{};
    start_transfer(latest, tail, CommSlot{leader, op, g, p.stream[op]});
  }

  void deliver(int rank, int op, TimeNs start, TimeNs now) {
    const StageProgram& p = program_.stages[ranks_[rank].stage];
    const int dst = peer(rank, p.group[op]);
    RankState& d = ranks_[dst];
    const StageProgram& dp = program_.stages[d.stage];
    const bool from_prev = p.group[op] == Group::pp_next;
    const auto& list = from_prev ? dp.recv_from_prev : dp.recv_from_next;
    int& index = from_prev ? d.recv_prev : d.recv_next;
    assert(index < static_cast<int>(list.size()));
    schedule(dst, list[index++], start, now);
  }

  void finish(const Event& ev) {
    RankState& s = ranks_[ev.rank];
    const StageProgram& p = program_.stages[s.stage];
    const int op = ev.op;
    apply_memory(ev.rank, ev.time, p, op, true);
    s.done[op] = 1;
    ++events_;
    const CommKind comm = p.comm[op];
    if (p.gemm_m[op] > 0) (p.phase[op] == Phase::recompute ? recompute_flops_ : model_flops_) += p.flops[op];
    if (s.traced) {
      const std::int8_t category = comm != CommKind::none ? 2 : times_[s.stage].memory_bound[op] ? 1 : 0;
      sink_->event(EventRecord{ev.rank, static_cast<std::int8_t>(p.stream[op]), category,
                               static_cast<std::int8_t>(p.phase[op]), static_cast<std::int16_t>(p.kind[op]),
                               p.layer[op], p.micro_batch[op], ev.start, ev.time, p.flops[op], p.bytes[op]});
    }
    s.last_end = std::max(s.last_end, ev.time);
    if (comm != CommKind::recv) s.busy[static_cast<int>(p.stream[op])] = false;
    if (comm == CommKind::none) s.compute_idle_since = ev.time;
    if (comm == CommKind::send) deliver(ev.rank, op, ev.start, ev.time);
    const bool pipeline = p.kind[op] == OpKind::pp_recv || p.kind[op] == OpKind::pp_all_gather;
    for (int st = 0; st < kNumStreams; ++st) try_start(ev.rank, st, ev.time, pipeline);
  }

  EngineResult result() {
    EngineResult out;
    TimeNs step = 0;
    for (const RankState& s : ranks_) step = std::max(step, s.last_end);
    const int n = plan_.num_ranks();
    const double step_s = ns_to_seconds(std::max<TimeNs>(step, 1));
    Summary& sum = out.summary;
    sum.num_gpus = n;
    sum.events = events_;
    sum.step_time_s = ns_to_seconds(step);
    sum.tokens_per_s = static_cast<double>(plan_.global_batch) * program_.model.seq_len / step_s;
    sum.model_tflops_per_gpu = model_flops_ / (step_s * n) / kTFLOP;
    sum.hw_tflops_per_gpu = (model_flops_ + recompute_flops_) / (step_s * n) / kTFLOP;
    sum.mfu = sum.model_tflops_per_gpu * kTFLOP / peak_flops_;
    double total_ns = 0;
    for (int r = 0; r < n; ++r) {
      const RankState& s = ranks_[r];
      const RankCoords c = plan_.coords(r);
      RankRecord row;
      row.rank = r;
      row.node = graph_.node_of_gpu(r);
      row.dp = c.dp;
      row.tp = c.tp;
      row.pp = c.pp;
      row.peak_memory_bytes = s.peak;
      row.compute_s = ns_to_seconds(s.compute_ns);
      row.memory_bound_s = ns_to_seconds(s.memory_ns);
      row.exposed_comm_s = ns_to_seconds(s.exposed_ns);
      row.bubble_s = ns_to_seconds(s.bubble_ns);
      row.idle_s = ns_to_seconds(step - s.compute_ns - s.memory_ns - s.exposed_ns - s.bubble_ns);
      out.ranks.push_back(row);
      sum.compute += s.compute_ns;
      sum.memory_bound += s.memory_ns;
      sum.exposed_comm += s.exposed_ns;
      sum.bubble += s.bubble_ns;
      total_ns += static_cast<double>(step);
      if (s.peak > sum.peak_memory_gib * kGiB) {
        sum.peak_memory_gib = s.peak / kGiB;
        sum.peak_memory_rank = r;
      }
    }
    for (double* f : {&sum.compute, &sum.memory_bound, &sum.exposed_comm, &sum.bubble}) *f /= std::max(total_ns, 1.0);
    sum.idle = std::max(0.0, 1.0 - sum.compute - sum.memory_bound - sum.exposed_comm - sum.bubble);
    sum.oom = oom_rank_ >= 0;
    sum.oom_rank = oom_rank_;
    sum.oom_time_s = ns_to_seconds(oom_time_);
    sum.oom_needed_gib = sum.oom ? ranks_[oom_rank_].peak / kGiB : 0;  // the rank's whole need
    sum.oom_capacity_gib = gpu_.memory_bytes / kGiB;
    for (int id = 0; id < graph_.num_links(); ++id) {
      const Link& l = graph_.link(id);
      out.links.push_back(LinkRecord{id, graph_.device(graph_.link_source(id)).name,
                                     graph_.device(graph_.link_target(id)).name, std::string(link_kind_name(l.kind)),
                                     l.bytes_per_s, l.latency_ns, transfers_.link_bytes(id),
                                     transfers_.link_busy_seconds(id)});
    }
    return out;
  }

  const Program& program_;
  const ParallelPlan& plan_;
  const ClusterGraph& graph_;
  const GpuSpec& gpu_;
  const CommModel& comm_;
  TraceSink* sink_;
  double peak_flops_;
  std::vector<RankState> ranks_;
  std::vector<StageTimes> times_;
  GroupState groups_[3];  // TP, DP, embedding
  Transfers transfers_;
  std::vector<CommSlot> slots_;  // what each transfer completes, indexed by its tag
  std::vector<int> free_slots_;
  std::vector<HopFlow> hops_;    // scratch for the flows of one transfer
  std::vector<FinishedTransfer> finished_;
  TimeNs network_wakeup_ = Transfers::kNever;  // earliest queued network event
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  std::int64_t events_ = 0;
  double model_flops_ = 0, recompute_flops_ = 0;
  int oom_rank_ = -1;
  TimeNs oom_time_ = 0;
};

}  // namespace

Engine::Engine(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, Precision precision,
               std::optional<Protocol> protocol, std::optional<Algorithm> algorithm)
    : program_(program), graph_(graph), gpu_(gpu), router_(graph), comm_(graph, router_, protocol, algorithm),
      compute_(gpu, precision) {}

EngineResult Engine::run(TraceSink* sink, TraceDetail detail) {
  return Simulation(program_, graph_, gpu_, comm_, compute_, sink, detail).run();
}

}  // namespace dtsim

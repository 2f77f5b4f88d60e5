// The discrete-event loop in conservative windows: rank-local handling (op completions, starts,
// memory, the compute stream's time breakdown) in parallel, one task per node domain (its ranks,
// then its network) or per few ranks outside domains; then the sequential merge of cross-rank
// actions (rendezvous of collectives, sends) with the global network's events, and of the trace
// records, in (time, rank, sequence) order. See engine.hpp for why this is exact.
#include "sim/engine/engine.hpp"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cassert>
#include <functional>
#include <optional>
#include <stdexcept>

#include "sim/engine/crew.hpp"
#include "sim/engine/domains.hpp"
#include "sim/engine/fold.hpp"
#include "sim/engine/groups.hpp"
#include "sim/engine/lookahead.hpp"
#include "sim/engine/ops.hpp"
#include "sim/engine/rank.hpp"
#include "sim/engine/rank_heads.hpp"
#include "sim/engine/shards.hpp"
#include "sim/engine/state.hpp"
#include "sim/engine/units.hpp"
#include "sim/engine/result.hpp"
#include "sim/network/transfers.hpp"

namespace dtsim {
namespace {


// A group's collective lowered: its kind, size, cost and flows.
struct Lowered {
  CommKind kind = CommKind::none;
  double bytes = -1, forward_bytes = 0;
  CollectiveCost cost;
  std::vector<HopFlow> hops;
};

class Simulation {
 public:
  Simulation(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, const CommModel& comm,
             const ComputeModel& compute, TraceSink* sink, TraceDetail detail, const EngineOptions& options)
      : program_(program), plan_(program.plan), graph_(graph), gpu_(gpu), comm_(comm), sink_(sink),
        peak_flops_(compute.peak_flops()),
        threads_(std::max(1, options.threads)), arena_(threads_),
        rank_events_(program, ops_, gpu.memory_bytes, compute.comm_overlap_slowdown(), compute.two_hop_overlap_slowdown(),
                     options.kernel_chains),
        groups_(program.plan, comm), global_(Transfers(graph, comm.router())),
        parallel_from_ranks_(options.parallel_from_ranks),
        shards_per_thread_(program.plan.num_ranks() >= parallel_from_ranks_ ? kShardsPerThread : 1),
        crew_(threads_, threads_ * shards_per_thread_) {
    const int n = plan_.num_ranks();
    if (options.tp_symmetric && plan_.tp > 1 && plan_.ep == 1 && options.gpu_speed.empty())
      fold_ = TpFold(plan_, options.fold_tp && !(sink_ && detail == TraceDetail::all));
    ranks_.resize(n);
    stage_of_.resize(n);
    recvs_delivered_.assign(2 * static_cast<std::size_t>(n), 0);
    if (fold_.on()) launches_ = CopyLaunches(n, kNumCollectiveGroups);
    for (auto& per_leader : lowered_) per_leader.resize(n);
    send_paths_.resize(2 * static_cast<std::size_t>(n));
    for (const StageProgram& stage : program.stages) ops_.emplace_back(stage, compute);
    for (int r = 0; r < n; ++r) {
      RankState& s = ranks_[r];
      const RankCoords c = plan_.coords(r);
      s.stage = stage_of_[r] = c.pp;
      s.traced = sink_ && (detail == TraceDetail::all || (detail == TraceDetail::stages && c.tp == 0 && c.dp == 0 && c.cp == 0));
      if (!options.gpu_speed.empty()) s.speed = options.gpu_speed.at(r);
      if (!fold_.shadow(r)) s.push(LocalEvent{0, 0, -1, 0});
    }
    lookahead_ = std::max<TimeNs>(1, prepare_transfers());
    if (options.node_domains) {
      domains_ = node_domains(program, graph, comm.router(), groups_);
    } else {
      domains_.domain_of_rank.assign(n, -1);
      domains_.domain_of_link.assign(graph.num_links(), -1);
      for (auto& in_node : domains_.group_in_node) in_node.assign(n, 0);
    }
    for (std::size_t d = 0; d < domains_.links.size(); ++d) {
      nodes_.emplace_back(Transfers(graph, comm.router(), domains_.links[d]));
      if (domains_.lone[d] && options.lone_domains) nodes_.back().transfers.set_lone();
    }
    std::vector<char> owned(graph.num_links(), 0);
    for (int l = 0; l < graph.num_links(); ++l) owned[l] = domains_.domain_of_link[l] >= 0;
    global_.transfers.forbid(std::move(owned));
    shard_of_ = shard_of_ranks(domains_.domain_of_rank, static_cast<int>(nodes_.size()), threads_, plan_.pp,
                               shards_per_thread_);
    std::vector<std::vector<int>> ranks_of(threads_ * shards_per_thread_), domains_of(ranks_of.size());
    local_of_rank_.resize(n);
    local_of_domain_.assign(nodes_.size(), -1);
    for (int r = 0; r < n; ++r) {
      local_of_rank_[r] = static_cast<int>(ranks_of[shard_of_[r]].size());
      ranks_of[shard_of_[r]].push_back(r);
      const int d = domains_.domain_of_rank[r];
      if (d >= 0 && local_of_domain_[d] < 0) {
        local_of_domain_[d] = static_cast<int>(domains_of[shard_of_[r]].size());
        domains_of[shard_of_[r]].push_back(d);
      }
    }
    for (std::size_t k = 0; k < ranks_of.size(); ++k)
      shards_.emplace_back(std::move(ranks_of[k]), std::move(domains_of[k]), static_cast<int>(nodes_.size()));
    for (int r = 0; r < n; ++r) {
      if (fold_.shadow(r)) continue;
      shards_[shard_of_[r]].heads.set(local_of_rank_[r], 0);
      ranks_next_ = 0;
    }
  }

  // The step's lookahead (lookahead.hpp). The rings and send paths it costs are the
  // step's own (route searches are independent: the router searches in parallel and caches under
  // a lock), so with threads they are found on all of them before the step rather than one by one
  // as the step first needs them. Routes do not depend on the order they are found in.
  TimeNs prepare_transfers() {
    const StepTransfers transfers(program_);
    std::vector<TimeNs> least(plan_.num_ranks(), Transfers::kNever);
    for_each_index(least.size(), true, 16, [&](std::size_t i) {
      const int r = static_cast<int>(i);
      least[i] = transfers.least_tail(r, stage_of_, groups_, comm_, [&](bool to_next) {
        const int dst = groups_.peer(r, to_next ? Group::pp_next : Group::pp_prev);
        return comm_.send_tail(send_path(r, to_next, dst).path);
      });
    });
    const TimeNs step_least = *std::min_element(least.begin(), least.end());
    // Every transfer's latency tail holds a launch base: the lookahead of a step with no transfers.
    return step_least == Transfers::kNever ? comm_.nccl().least_base_ns() : step_least;
  }

  EngineResult run() {
    crew_.run(
        arena_, [](void* self, int shard) -> std::int64_t { return static_cast<Simulation*>(self)->run_shard(shard); }, this,
        [this] { run_windows(); });
    for (int r = 0; r < plan_.num_ranks(); ++r) {
      if (!fold_.shadow(r)) continue;
      ranks_[r] = ranks_[fold_.copy(r, 0)];
      ranks_[r].events = 0;  // the summary counts the events simulated
    }
    check_finished();
    return result();
  }

 private:
  void run_windows() {
    const bool parallel = plan_.num_ranks() >= parallel_from_ranks_;
    while (true) {
      const TimeNs t = std::min({network_next(global_), ranks_next_, deliveries_next_});
      if (t == Transfers::kNever) break;
      window_end_ = t + lookahead_;
      ranks_next_ = crew_.run_window(parallel);
      merge_window();
    }
  }

  // fn(i) for i in [0, n): on the arena's threads in chunks of `grain` when `parallel`, else in
  // order on this thread. Each i touches its own state only.
  template <class F>
  void for_each_index(std::size_t n, bool parallel, std::size_t grain, F&& fn) {
    if (threads_ == 1 || !parallel) {
      for (std::size_t i = 0; i < n; ++i) fn(i);
      return;
    }
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, grain), [&](const auto& range) {
        for (std::size_t i = range.begin(); i != range.end(); ++i) fn(i);
      });
    });
  }

  // At 16K ranks the ranks' states do not fit in cache and a window visits each active rank
  // once: fetch the state of the i-th rank in unit order ahead of its turn (first the state,
  // then its queue). No effect on results.
  void prefetch(const WindowUnits& units, std::size_t i, bool deep) const {
    if (i >= units.ranks()) return;
    const RankState& s = ranks_[units.rank(i)];
    if (!deep) {
      const char* base = reinterpret_cast<const char*>(&s);
      for (std::size_t line = 0; line < sizeof(RankState); line += 64) __builtin_prefetch(base + line);
      return;
    }
    __builtin_prefetch(s.queue.data());
  }

  // Sets the rank's head time to its earliest pending event (a rank with none keeps no head).
  void push_head(Shard& sh, int rank) {
    const RankState& s = ranks_[rank];
    if (!s.queue.empty()) sh.heads.set(local_of_rank_[rank], s.queue.front().time);
  }
  static TimeNs network_next(const Domain& d) {
    const TimeNs next = d.transfers.next_event();
    return next == Transfers::kNever ? next : std::max(next, d.now);
  }

  // ---- A shard's window, on its crew thread: its active ranks and node domains as tasks
  // ("units"): a node domain's active ranks and then the domain's network, each in (time, rank,
  // sequence) order (they touch only that node's ranks and network), or a few active ranks
  // outside node domains; then their next events. ----

  // Returns the shard's earliest event after the window.
  TimeNs run_shard(int shard) {
    Shard& sh = shards_[shard];
    // The global network's deliveries from the last merge, in the order they came.
    for (const auto& [rank, ev] : sh.deliveries) {
      deliver(rank, ev);
      push_head(sh, rank);
    }
    sh.deliveries.clear();
    sh.take_before(window_end_);
    sh.units.form(sh.active, domains_.domain_of_rank, sh.active_domains);
    for (std::size_t i = 0; i < sh.units.size(); ++i) run_unit(sh, sh.units[i]);
    gather_posts(sh.posts);
    for (int r : sh.active) push_head(sh, r);
    return std::min(sh.heads.min_time(), sh.domain_heads.min_time());
  }

  void run_unit(Shard& sh, const WindowUnits::Unit& u) {
    for (std::size_t k = u.begin; k < u.end; ++k) {
      prefetch(sh.units, k + 8, false);
      prefetch(sh.units, k + 4, true);
      const int r = sh.units.rank(k);
      rank_events_.run(ranks_[r], r, window_end_);
    }
    // The global network's collectives' posts are gathered per group in the shard (the merge
    // adds them to their groups' rendezvous).
    for (std::size_t k = u.begin; k < u.end; ++k) {
      RankState& s = ranks_[sh.units.rank(k)];
      for (const Action& a : s.actions) {
        const int d = domain_of(a);
        assert(d < 0 || d == u.domain);
        const StageProgram& p = program_.stages[s.stage];
        if (d >= 0) nodes_[d].actions.push_back(a);
        else if (p.comm[a.op] == CommKind::send) sh.actions.push_back(a);
        else sh.posts.push_back(groups_.post(p.group[a.op], a));
      }
      s.actions.clear();
    }
    if (u.domain < 0) return;
    Domain& dom = nodes_[u.domain];
    run_domain(dom);
    for (int r : dom.touched) push_head(sh, r);
    dom.touched.clear();
    const TimeNs next = network_next(dom);
    sh.domain_heads.set(local_of_domain_[u.domain], next == Transfers::kNever ? RankHeads::kNone : next);
  }

  // The domain that carries an action's transfer: its node's when the transfer stays in it.
  int domain_of(const Action& a) const {
    const int d = domains_.domain_of_rank[a.rank];
    if (d < 0) return -1;
    const StageProgram& p = program_.stages[stage_of_[a.rank]];
    const Group g = p.group[a.op];
    if (p.comm[a.op] == CommKind::send) return domains_.domain_of_rank[groups_.peer(a.rank, g)] == d ? d : -1;
    return domains_.group_in_node[collective_group_index(g)][a.rank] ? d : -1;
  }

  void run_domain(Domain& d) {
    std::sort(d.actions.begin(), d.actions.end(), action_before);
    for (const Action& a : d.actions) {
      run_network(d, a.time);
      apply(d, a);
    }
    d.actions.clear();
    run_network(d, window_end_ - 1);
  }

  // ---- Merge phase: sequential, in (time, rank, sequence) order. ----

  void merge_window() {
    deliveries_next_ = Transfers::kNever;
    actions_.clear();
    for (Shard& sh : shards_) {
      actions_.insert(actions_.end(), sh.actions.begin(), sh.actions.end());
      sh.actions.clear();
      Action last;
      for (const Posts& p : sh.posts)
        if (arrive(p, last)) actions_.push_back(last);
      sh.posts.clear();
    }
    std::sort(actions_.begin(), actions_.end(), action_before);
    for (const Action& a : actions_) {
      run_network(global_, a.time);
      apply(global_, a);
    }
    run_network(global_, window_end_ - 1);
    if (sink_) write_records();
  }

  // Network events up to and including `limit`; the network's own events come before rank
  // events at the same time.
  void run_network(Domain& d, TimeNs limit) {
    for (TimeNs t = network_next(d); t <= limit; t = network_next(d)) network_event(d, t);
  }

  void write_records() {
    active_.clear();
    for (const Shard& sh : shards_) active_.insert(active_.end(), sh.active.begin(), sh.active.end());
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

  // A node domain's action (a post or a send), or the global network's (a send, or the latest
  // post of a collective whose rendezvous the window's posts completed).
  void apply(Domain& d, const Action& a) {
    const StageProgram& p = program_.stages[stage_of_[a.rank]];
    if (p.comm[a.op] != CommKind::send) {
      Action last;
      if (&d == &global_) launch_collective(d, a);
      else if (arrive(groups_.post(p.group[a.op], a), last)) launch_collective(d, last);
      return;
    }
    const int dst = groups_.peer(a.rank, p.group[a.op]);
    const bool to_next = p.group[a.op] == Group::pp_next;
    // The representative's send carries its TP copies'.
    if (fold_.on() && launches_.copy(launches_.send(fold_.copy(a.rank, 0), to_next), fold_.representative(a.rank), a.op, a.time))
      return;
    const SendPath& send = send_path(a.rank, to_next, dst);
    const double bytes = p.bytes[a.op] / CommModel::send_wire_factor(send.path);
    if (fold_.on()) {
      for_each_copy(d, [&](int j, std::vector<HopFlow>& hops) {
        const int src = fold_.copy(a.rank, j), to = fold_.copy(dst, j);
        hops.assign(1, HopFlow{src, to, bytes, 0, send_path(src, to_next, to).route});
      });
    } else {
      d.hops.assign(1, HopFlow{a.rank, dst, bytes, 0, send.route});
    }
    const TimeNs tail = comm_.send_tail(send.path);
    start_transfer(d, a.time, d.hops, std::span<const TimeNs>(&tail, 1), CommSlot{a.rank, a.op, p.group[a.op], p.stream[a.op]});
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

  // d.hops from fn(j, hops) filling the hops of each TP copy j (fold.hpp).
  template <class F>
  void for_each_copy(Domain& d, F&& fn) {
    d.copy_hops.resize(fold_.tp());
    for (int j = 0; j < fold_.tp(); ++j) fn(j, d.copy_hops[j]);
    merge_copies(d.copy_hops, d.hops);
  }

  static void start_transfer(Domain& d, TimeNs now, const std::vector<HopFlow>& hops, std::span<const TimeNs> phase_tails,
                             CommSlot slot) {
    int tag;
    if (d.free_slots.empty()) {
      tag = static_cast<int>(d.slots.size());
      d.slots.push_back(slot);
    } else {
      tag = d.free_slots.back();
      d.free_slots.pop_back();
      d.slots[tag] = slot;
    }
    d.now = std::max(d.now, now);
    d.transfers.start(now, hops, phase_tails, tag);
  }

  // RankGroups::arrive; folded, a TP group has only its representative (fold.hpp).
  bool arrive(const Posts& posts, Action& last) {
    return groups_.arrive(posts, fold_.folds_ranks() && posts.group == Group::tp ? 1 : groups_.size(posts.group), last);
  }

  // Starts the collective whose rendezvous `last` (the latest post) completed.
  void launch_collective(Domain& d, const Action& last) {
    const StageProgram& p = program_.stages[stage_of_[last.rank]];
    const Group g = p.group[last.op];
    const int leader = groups_.leader(last.rank, g);
    // The representative group's collective carries its TP copies'.
    if (fold_.on() && g != Group::tp &&
        launches_.copy(launches_.collective(collective_group_index(g), fold_.copy(leader, 0)), fold_.representative(leader),
                       last.op, last.time))
      return;
    const Lowered& low = lowered(d, last.rank, leader, last.op);
    start_transfer(d, last.time, low.hops, low.cost.tails(), CommSlot{leader, last.op, g, p.stream[last.op]});
  }

  // The cost and flows of rank's collective `op` on its group led by `leader`. A group's
  // collectives repeat (the same kinds and sizes every layer), so the last few are kept per group.
  const Lowered& lowered(Domain& d, int rank, int leader, int op) {
    const StageProgram& p = program_.stages[stage_of_[rank]];
    const Group g = p.group[op];
    std::vector<Lowered>& kept = lowered_[collective_group_index(g)][leader];
    for (const Lowered& l : kept)
      if (l.kind == p.comm[op] && l.bytes == p.bytes[op] && l.forward_bytes == p.forward_bytes[op]) return l;
    if (kept.size() == kLoweredPerGroup) kept.erase(kept.begin());  // the oldest
    Lowered& low = kept.emplace_back();
    low.kind = p.comm[op];
    low.bytes = p.bytes[op];
    low.forward_bytes = p.forward_bytes[op];
    const RingSet& rings = groups_.rings(rank, g);
    low.cost = comm_.cost(p.comm[op], p.bytes[op], rings, low.forward_bytes);
    if (fold_.on() && g != Group::tp) {  // the TP peers' groups run it on the image rings
      for_each_copy(d, [&](int j, std::vector<HopFlow>& hops) {
        lower_collective(p.comm[op], p.bytes[op], groups_.rings(fold_.copy(rank, j), g), low.cost, hops,
                         low.forward_bytes);
      });
      low.hops = d.hops;
    } else {
      lower_collective(p.comm[op], p.bytes[op], rings, low.cost, low.hops, low.forward_bytes);
    }
    // The kept hops carry their routes: each start of the collective's flows skips the look-up.
    for (HopFlow& hop : low.hops)
      if (!hop.route && hop.src_gpu != hop.dst_gpu) hop.route = &comm_.router().route(hop.src_gpu, hop.dst_gpu);
    return low;
  }

  // A rank event caused by the network; it must lie beyond the current window (lookahead). A
  // node domain's ranks get their heads after the domains' phase.
  // The global network's go to the rank's shard (its own thread schedules them when it next
  // runs the shard, so the merge writes no rank's state); op < 0 is -1 - stream: the op before
  // the stream's cursor, found when the delivery is scheduled.
  void schedule_remote(Domain& d, int rank, int op, TimeNs start, TimeNs end) {
    if (end < window_end_)
      throw std::logic_error("engine: a transfer ended within the lookahead window; its latency tail is below "
                             "the step's least (prepare_transfers)");
    if (&d == &global_) {
      Shard& sh = shards_[shard_of_[rank]];
      sh.deliveries.emplace_back(rank, LocalEvent{end, 0, op, start});
      deliveries_next_ = std::min(deliveries_next_, end);
      return;
    }
    deliver(rank, LocalEvent{end, 0, op, start});
    d.touched.push_back(rank);
  }

  void deliver(int rank, const LocalEvent& ev) {
    RankState& s = ranks_[rank];
    int op = ev.op;
    if (op < 0) {
      const int st = -1 - op;
      op = program_.stages[s.stage].stream_ops[st][s.next[st] - 1];
    }
    s.schedule(op, ev.start, ev.time, false);
  }

  // Flows finished: complete the sends (and deliver their receives) and the collectives whose
  // last flow ended.
  void network_event(Domain& d, TimeNs now) {
    d.now = std::max(d.now, now);
    d.finished.clear();
    d.transfers.collect(d.now, d.finished);
    for (const FinishedTransfer& f : d.finished) {
      const CommSlot slot = d.slots[f.tag];
      d.free_slots.push_back(f.tag);
      // A folded transfer completes for each TP copy (fold.hpp).
      const int copies = fold_.on() && slot.group != Group::tp ? fold_.copies_completed() : 1;
      for (int j = 0; j < copies; ++j) complete(d, slot, copies > 1 ? fold_.copy(slot.rank, j) : slot.rank, f);
    }
  }

  // The transfer of `slot` ended for `rank` (the slot's, or a TP copy of it): a send completes
  // its op and delivers its receive; a collective completes at every member of rank's group.
  void complete(Domain& d, const CommSlot& slot, int rank, const FinishedTransfer& f) {
    if (slot.group != Group::pp_next && slot.group != Group::pp_prev) {
      // Members may run different stage programs (the embedding group): each completes the op
      // it posted, the one before the cursor of the collective's stream.
      const int st = static_cast<int>(slot.stream);
      for (int member : groups_.members(rank, slot.group)) {
        if (!fold_.shadow(member)) schedule_remote(d, member, -1 - st, f.start_ns, f.end_ns);
      }
      return;
    }
    schedule_remote(d, rank, slot.op, f.start_ns, f.end_ns);
    const int dst = groups_.peer(rank, slot.group);
    const StageProgram& dp = program_.stages[stage_of_[dst]];
    const bool from_prev = slot.group == Group::pp_next;
    const auto& list = from_prev ? dp.recv_from_prev : dp.recv_from_next;
    int& index = recvs_delivered_[2 * static_cast<std::size_t>(dst) + (from_prev ? 0 : 1)];
    assert(index < static_cast<int>(list.size()));
    schedule_remote(d, dst, list[index++], f.start_ns, f.end_ns);
  }

  // With no event left every stream of every rank has run all its ops, unless the program's
  // passes wait on each other (a schedule that cannot run): then the step would be a part of one.
  void check_finished() const {
    for (int r = 0; r < plan_.num_ranks(); ++r) {
      const StageProgram& p = program_.stages[stage_of_[r]];
      for (int st = 0; st < kNumStreams; ++st) {
        const int ops = static_cast<int>(p.stream_ops[st].size());
        if (ranks_[r].next[st] < ops)
          throw std::logic_error(fmt::format(
              "engine: the step stopped with rank {}'s {} stream at op {} of {}: its ops wait on each other across "
              "ranks (a pipeline schedule that cannot run)", r, stream_name(static_cast<Stream>(st)), ranks_[r].next[st], ops));
      }
    }
  }

  EngineResult result() const {
    std::vector<LinkUse> links(graph_.num_links());
    for (int l = 0; l < graph_.num_links(); ++l) {
      const int d = domains_.domain_of_link[l];
      const Transfers& t = d < 0 ? global_.transfers : nodes_[d].transfers;
      links[l] = LinkUse{t.link_bytes(l), t.link_busy_seconds(l)};
    }
    return summarize_step(ranks_, program_, graph_, gpu_, peak_flops_, links);
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
  int threads_;
  tbb::task_arena arena_;
  std::vector<RankState> ranks_;
  std::vector<int> stage_of_;                   // per rank (read by the merge instead of its state)
  std::vector<int> recvs_delivered_;            // per rank: receives delivered from the previous stage, the next
  std::vector<StageOps> ops_;  // per stage
  RankEvents rank_events_;
  RankGroups groups_;
  TpFold fold_;                   // off unless EngineOptions::tp_symmetric applies
  CopyLaunches launches_;         // with fold_ on
  static constexpr std::size_t kLoweredPerGroup = 4;
  std::array<std::vector<std::vector<Lowered>>, kNumCollectiveGroups> lowered_;  // per group index, by leader rank
  Domain global_;                 // the network of everything no node domain owns
  std::vector<Domain> nodes_;     // node domains
  NodeDomains domains_;
  std::vector<SendPath> send_paths_;  // per rank: to the previous stage, to the next
  TimeNs lookahead_ = 0;  // prepare_transfers()
  TimeNs window_end_ = 0;        // the current window is [earliest event, window_end_)
  TimeNs ranks_next_ = Transfers::kNever;       // the ranks' and node domains' earliest event after the window
  TimeNs deliveries_next_ = Transfers::kNever;  // the earliest delivery of the last merge
  // Steps of fewer ranks run every window on the leader alone (the shards in turn): their
  // windows hold too few events to pay for handing them out (BLOOM, 384 ranks, ~30 events a
  // window: 0.63 s on 1 thread, 1.04 s on 2 with its windows handed out; Llama 3 405B at 1K
  // GPUs 0.42 against 0.55 s). Choosing per window from the previous window's size was worse at
  // 4K and 16K GPUs (1.60 against 1.49 s, 6.2 against 5.6 s on 2 threads): a window on the
  // leader moves the other shards' states to its core and the next parallel window moves them
  // back.
  int parallel_from_ranks_;
  // Shards per thread where windows are handed out: what a thread done with its own window's
  // shards can take from another's (crew.hpp). Each costs a scan of the rank head blocks
  // per window, so steps run on the leader alone keep one per thread.
  static constexpr int kShardsPerThread = 4;
  int shards_per_thread_;
  std::vector<Shard> shards_;    // shards_per_thread_ per thread, in the crew's task order
  std::vector<int> shard_of_;    // per rank: its shard
  std::vector<int> local_of_rank_;    // per rank: its index in its shard's ranks
  std::vector<int> local_of_domain_;  // per node domain: its index in its shard's domains
  WindowCrew crew_;
  std::vector<int> active_;      // scratch of write_records(): the window's active ranks
  std::vector<Action> actions_;
  std::vector<RecordKey> keys_;
};

}  // namespace

Engine::Engine(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, Precision precision,
               std::optional<Protocol> protocol, std::optional<Algorithm> algorithm, const NcclProfile& nccl,
               TimeNs launch_ns)
    : program_(program), graph_(graph), gpu_(gpu), router_(graph), comm_(graph, router_, protocol, algorithm, nccl),
      compute_(gpu, precision, program.plan.attention, program.plan.recipe, launch_ns) {}

EngineResult Engine::run(TraceSink* sink, TraceDetail detail, const EngineOptions& options) {
  if (!options.gpu_speed.empty() && static_cast<int>(options.gpu_speed.size()) != program_.plan.num_ranks())
    throw std::invalid_argument("EngineOptions::gpu_speed: one factor per rank");
  if (options.fold_tp && !options.tp_symmetric)
    throw std::invalid_argument("EngineOptions::fold_tp: needs tp_symmetric");
  return Simulation(program_, graph_, gpu_, comm_, compute_, sink, detail, options).run();
}

}  // namespace dtsim

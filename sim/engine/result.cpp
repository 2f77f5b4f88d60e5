// The step's summary, per-rank rows and link table from the engine's final rank states: sums
// in rank order, so they do not depend on the thread count.
#include "sim/engine/result.hpp"

#include <algorithm>

namespace dtsim {

EngineResult summarize_step(const std::vector<RankState>& ranks, const Program& program, const ClusterGraph& graph,
                            const GpuSpec& gpu, double peak_flops, const std::vector<LinkUse>& links) {
  const ParallelPlan& plan = program.plan;
  EngineResult out;
  TimeNs step = 0;
  for (const RankState& s : ranks) step = std::max(step, s.last_end);
  const int n = plan.num_ranks();
  const double step_s = ns_to_seconds(std::max<TimeNs>(step, 1));
  Summary& sum = out.summary;
  sum.num_gpus = n;
  double model_flops = 0, recompute_flops = 0;
  int oom_rank = -1;
  TimeNs oom_time = 0;
  for (int r = 0; r < n; ++r) {  // in rank order, so the sums do not depend on threads
    const RankState& s = ranks[r];
    sum.events += s.events;
    model_flops += s.model_flops;
    recompute_flops += s.recompute_flops;
    if (s.oom_time >= 0 && (oom_rank < 0 || s.oom_time < oom_time)) {
      oom_rank = r;
      oom_time = s.oom_time;
    }
  }
  sum.step_time_s = ns_to_seconds(step);
  sum.tokens_per_s = static_cast<double>(plan.global_batch) * program.model.seq_len / step_s;
  sum.model_tflops_per_gpu = model_flops / (step_s * n) / kTFLOP;
  sum.hw_tflops_per_gpu = (model_flops + recompute_flops) / (step_s * n) / kTFLOP;
  sum.mfu = sum.model_tflops_per_gpu * kTFLOP / peak_flops;
  double total_ns = 0;
  out.ranks.reserve(n);
  for (int r = 0; r < n; ++r) {
    const RankState& s = ranks[r];
    const RankCoords c = plan.coords(r);
    RankRecord row;
    row.rank = r;
    row.node = graph.node_of_gpu(r);
    row.dp = c.dp;
    row.tp = c.tp;
    row.pp = c.pp;
    row.ep = c.dp % plan.ep;
    row.cp = c.cp;
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
  sum.oom = oom_rank >= 0;
  sum.oom_rank = oom_rank;
  sum.oom_time_s = ns_to_seconds(oom_time);
  sum.oom_needed_gib = sum.oom ? ranks[oom_rank].peak / kGiB : 0;  // the rank's whole need
  sum.oom_capacity_gib = gpu.memory_bytes / kGiB;
  static_assert(std::tuple_size_v<decltype(sum.oom_peak_by_category_gib)> == kNumMemCategories);
  if (sum.oom) {
    sum.oom_category = ranks[oom_rank].oom_category;
    for (int c = 0; c < kNumMemCategories; ++c) sum.oom_peak_by_category_gib[c] = ranks[oom_rank].at_peak[c] / kGiB;
  }
  out.links.reserve(graph.num_links());
  for (int id = 0; id < graph.num_links(); ++id) {
    const Link& l = graph.link(id);
    out.links.push_back(LinkRecord{id, graph.device(graph.link_source(id)).name,
                                   graph.device(graph.link_target(id)).name, std::string(link_kind_name(l.kind)),
                                   l.bytes_per_s, l.latency_ns, links[id].bytes, links[id].busy_s});
  }
  return out;
}

}  // namespace dtsim

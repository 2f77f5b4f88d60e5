// Pipeline schedules. 1F1B: pp - stage - 1 warm-up forwards, then one forward and one backward in
// turn, then the remaining backwards (Narayanan et al. 2021, Fig. 4). Interleaved: the same with
// model chunks, as Megatron-Core's forward_backward_pipelining_with_interleaving runs it
// (schedules.py get_schedule_table, get_pp_rank_microbatches): micro-batches in groups of N
// (parallel.microbatch_group, default pp), each group through chunk 0, then chunk 1, ..., the
// last group taking the remainder; (pp - stage - 1) x 2 + (chunks - 1) x N warm-up forwards; each
// backward pass takes the forward table's entry with its chunk mirrored.
#include "workloads/pipeline_schedule.hpp"

#include <algorithm>

namespace dtsim {

std::vector<PipelinePass> pipeline_order(const ParallelPlan& plan, int stage) {
  const int m = plan.micro_batches(), v = plan.virtual_stages, p = plan.pp;
  const int total = m * v;
  int warmup = 0;
  if (plan.schedule == Schedule::gpipe) warmup = total;
  else if (plan.schedule == Schedule::one_f_one_b) warmup = std::min(p - stage - 1, m);
  else warmup = std::min((p - stage - 1) * 2 + (v - 1) * plan.microbatch_group_or_pp(), total);

  // The forward table: (micro-batch, chunk) of the k-th forward pass.
  std::vector<PipelinePass> table;
  table.reserve(total);
  const int group = v == 1 ? m : plan.microbatch_group_or_pp();
  for (int first = 0; first < m; first += group) {
    const int end = first + group >= m ? m : first + group;  // the last group takes the remainder
    for (int chunk = 0; chunk < v; ++chunk)
      for (int mb = first; mb < end; ++mb) table.push_back(PipelinePass{true, mb, chunk});
  }
  auto pass = [&](int k, bool forward) {
    PipelinePass out = table[k];
    out.forward = forward;
    if (!forward) out.chunk = v - 1 - out.chunk;
    return out;
  };
  std::vector<PipelinePass> order;
  order.reserve(2 * total);
  for (int k = 0; k < warmup; ++k) order.push_back(pass(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(pass(warmup + k, true));
    order.push_back(pass(k, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(pass(k, false));
  return order;
}

}  // namespace dtsim

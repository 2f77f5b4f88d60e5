// Pipeline schedules. 1F1B: pp - stage - 1 warm-up forwards, then one forward and one backward in
// turn, then the remaining backwards (Narayanan et al. 2021, Fig. 4). Interleaved: the same with
// model chunks, micro-batches taken in groups of pp and chunks in turn, as Megatron-LM's
// forward_backward_pipelining_with_interleaving does.
#include "workloads/pipeline_schedule.hpp"

#include <algorithm>

namespace dtsim {

std::vector<PipelinePass> pipeline_order(const ParallelPlan& plan, int stage) {
  const int m = plan.micro_batches(), v = plan.virtual_stages, p = plan.pp;
  const int total = m * v;
  int warmup = 0;
  if (plan.schedule == Schedule::gpipe) warmup = total;
  else if (plan.schedule == Schedule::one_f_one_b) warmup = std::min(p - stage - 1, m);
  else warmup = m == p ? total : std::min((p - stage - 1) * 2 + (v - 1) * p, total);

  // The k-th forward (backward) pass: micro-batch and chunk.
  auto pass = [&](int k, bool forward) {
    PipelinePass out;
    out.forward = forward;
    if (v == 1) {
      out.micro_batch = k;
      return out;
    }
    const int in_group = k % (p * v);
    out.micro_batch = (k / (p * v)) * p + in_group % p;
    const int chunk = in_group / p;
    out.chunk = forward ? chunk : v - 1 - chunk;
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

// Pipeline schedules. 1F1B: pp - stage - 1 warm-up forwards, then one forward and one backward in
// turn, then the remaining backwards (Narayanan et al. 2021, Fig. 4). Interleaved: the same with
// model chunks, as Megatron-Core's forward_backward_pipelining_with_interleaving runs it
// (schedules.py get_schedule_table, get_pp_rank_microbatches): micro-batches in groups of N
// (parallel.microbatch_group, default pp), each group through chunk 0, then chunk 1, ..., the
// last group taking the remainder; (pp - stage - 1) x 2 + (chunks - 1) x N warm-up forwards; each
// backward pass takes the forward table's entry with its chunk mirrored. With
// parallel.moe_a2a_overlap, one more warm-up forward and every steady-state forward overlapped
// with the backward after it. DualPipe and DualPipeV: the steps of deepseek-ai/DualPipe's
// DualPipe.step and DualPipeV.step, below. ZB-H1: below.
#include "workloads/pipeline_schedule.hpp"

#include <algorithm>
#include <array>

namespace dtsim {
namespace {

// DualPipe on rank `stage` of pp (DeepSeek-V3 report Sec. 3.2.1; deepseek-ai/DualPipe,
// dualpipe.py). Micro-batches [0, m/2) run through chunk 0 (stages 0 -> pp-1), [m/2, m) through
// chunk 1 (pp-1 -> 0). The schedule speaks of each rank's near and far phase: phase 0 is chunk 0
// on the first half of the ranks and chunk 1 on the second. With r = min(stage, pp-1-stage) and
// H = pp/2: 2(H-r-1) forwards of phase 0; r+1 pairs F0 F1; H-r-1 rounds B1 F1; m/2-pp+r+1
// rounds of F0&B1 then F1&B0 overlapped (the middle ranks run their first F0 and B1 apart);
// H-r-1 rounds B1, F1&B0; r+1 pairs B1 B0; then the H-r-1 backwards of phase 0 left. The
// weight-gradient passes that DualPipe defers to fill bubbles (zero bubble) run inside their
// backward passes here.
// A pass list of two chunks, numbering each chunk's forward and backward passes in issue order
// from its first micro-batch; FB marks a forward pass that runs beside the backward pass after it.
class TwoChunkOrder {
 public:
  explicit TwoChunkOrder(std::array<int, 2> first_micro_batch) : first_(first_micro_batch) {}
  void F(int chunk) { pass(true, chunk, false); }
  void B(int chunk) { pass(false, chunk, false); }
  void FB(int f_chunk, int b_chunk) {
    pass(true, f_chunk, true);
    pass(false, b_chunk, false);
  }
  std::vector<PipelinePass> take() { return std::move(order_); }

 private:
  void pass(bool forward, int chunk, bool overlapped) {
    int& issued = (forward ? forwards_ : backwards_)[static_cast<std::size_t>(chunk)];
    order_.push_back(PipelinePass{forward, first_[static_cast<std::size_t>(chunk)] + issued++, chunk, overlapped});
  }
  std::array<int, 2> first_, forwards_{}, backwards_{};
  std::vector<PipelinePass> order_;
};

std::vector<PipelinePass> dualpipe_order(const ParallelPlan& plan, int stage) {
  const int pp = plan.pp, half = pp / 2, r = std::min(stage, pp - 1 - stage), h = plan.micro_batches() / 2;
  const int flip = stage >= half ? 1 : 0;  // phase 0 is chunk 0 on the first half of the ranks, chunk 1 on the second
  const bool middle = stage == half - 1 || stage == half;
  TwoChunkOrder o({0, h});
  const auto F = [&](int phase) { o.F(phase ^ flip); };
  const auto B = [&](int phase) { o.B(phase ^ flip); };
  const auto FB = [&](int f_phase, int b_phase) { o.FB(f_phase ^ flip, b_phase ^ flip); };
  for (int i = 0; i < 2 * (half - r - 1); ++i) F(0);
  for (int i = 0; i <= r; ++i) F(0), F(1);
  for (int i = 0; i < half - r - 1; ++i) B(1), F(1);
  for (int i = 0; i < h - pp + r + 1; ++i) {
    if (i == 0 && middle) F(0), B(1);
    else FB(0, 1);
    FB(1, 0);
  }
  for (int i = 0; i < half - r - 1; ++i) B(1), FB(1, 0);
  for (int i = 0; i <= r; ++i) B(1), B(0);
  for (int i = 0; i < half - r - 1; ++i) B(0);
  return o.take();
}

// DualPipeV on rank `stage` of pp (deepseek-ai/DualPipe, dualpipev.py DualPipeV.step): every
// micro-batch runs through chunk 0 (ranks 0 -> pp-1), turns, and runs back through chunk 1
// (pp-1 -> 0). With r = stage: 2(pp-r-1) forwards of chunk 0; r+1 pairs F0 F1; pp-r-1 rounds
// B1 F1; m-2pp+r+1 rounds of F0&B1 then F1&B0 overlapped (the last rank runs its first F0 and B1
// apart); pp-r-1 rounds B1, F1&B0; r+1 pairs B1 B0; then the pp-r-1 backwards of chunk 0 left.
// The deferred weight-gradient passes run inside their backward passes, as for DualPipe.
std::vector<PipelinePass> dualpipev_order(const ParallelPlan& plan, int stage) {
  const int pp = plan.pp, r = stage, m = plan.micro_batches();
  TwoChunkOrder o({0, 0});
  for (int i = 0; i < 2 * (pp - r - 1); ++i) o.F(0);
  for (int i = 0; i <= r; ++i) o.F(0), o.F(1);
  for (int i = 0; i < pp - r - 1; ++i) o.B(1), o.F(1);
  for (int i = 0; i < m - 2 * pp + r + 1; ++i) {
    if (i == 0 && stage == pp - 1) o.F(0), o.B(1);
    else o.FB(0, 1);
    o.FB(1, 0);
  }
  for (int i = 0; i < pp - r - 1; ++i) o.B(1), o.FB(1, 0);
  for (int i = 0; i <= r; ++i) o.B(1), o.B(0);
  for (int i = 0; i < pp - r - 1; ++i) o.B(0);
  return o.take();
}

// ZB-H1 on stage i of p (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", Sec. 3.1, Fig. 3):
// in step x = 0, 1, ... the stage runs F(x), then B(x - (p - 1 - i)), then W(x - (p - 1)), each
// where its micro-batch exists. B keeps 1F1B's offsets (p - 1 - i warm-up forwards, so stage 0
// holds at most p micro-batches' activations); W trails B by i steps, so the stages past the first
// fill the warm-up and cool-down waits with the weight gradients of earlier micro-batches: the
// step idles (p - 1)(F + B - W) per stage where 1F1B idles (p - 1)(F + B + W).
std::vector<PipelinePass> zbh1_order(const ParallelPlan& plan, int stage) {
  const int p = plan.pp, m = plan.micro_batches();
  std::vector<PipelinePass> order;
  order.reserve(3 * static_cast<std::size_t>(m));
  for (int x = 0; x < m + p - 1; ++x) {
    if (x < m) order.push_back(PipelinePass{true, x});
    if (const int b = x - (p - 1 - stage); b >= 0 && b < m) order.push_back(PipelinePass{false, b});
    if (const int w = x - (p - 1); w >= 0 && w < m) order.push_back(PipelinePass{.forward = false, .micro_batch = w, .weight = true});
  }
  return order;
}

}  // namespace

std::vector<PipelinePass> pipeline_order(const ParallelPlan& plan, int stage) {
  if (plan.schedule == Schedule::dualpipe) return dualpipe_order(plan, stage);
  if (plan.schedule == Schedule::dualpipev) return dualpipev_order(plan, stage);
  if (plan.schedule == Schedule::zbh1) return zbh1_order(plan, stage);
  const int m = plan.micro_batches(), v = plan.virtual_stages, p = plan.pp;
  const int total = m * v;
  int warmup = 0;
  if (plan.schedule == Schedule::gpipe) warmup = total;
  else if (plan.schedule == Schedule::one_f_one_b) warmup = std::min(p - stage - 1, m);
  else warmup = std::min((p - stage - 1) * 2 + (v - 1) * plan.microbatch_group_or_pp(), total);
  // Megatron-Core's EP-overlapped 1F1B (--overlap-moe-expert-parallel-comm; schedules.py runs one
  // extra warm-up forward so that the forward and the backward pass of every 1F1B step belong to
  // different micro-batches): each steady-state forward runs beside the backward after it.
  const bool overlap = plan.moe_a2a_overlap && plan.schedule != Schedule::gpipe;
  if (overlap) warmup = std::min(warmup + 1, total);

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
    order.back().overlapped = overlap;
    order.push_back(pass(k, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(pass(k, false));
  return order;
}

}  // namespace dtsim

// How evenly a pipeline's stages are loaded, from the simulated ranks' records, and a
// parallel.stage_layers split that evens them: the summary names the slowest stage and, when
// the stages differ by more than 10 %, prints the split to try.
#pragma once
#include <vector>

#include "sim/trace/records.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// A slowest stage more than this fraction above the median stage gets a balancing split suggested.
constexpr double kStageImbalanceToReport = 0.10;

struct StageBalance {
  std::vector<double> busy_s;  // per stage: the most compute + memory-bound seconds of its ranks
  int slowest = 0;
  double spread = 0;           // slowest / median stage - 1 (the slowest stage paces the pipeline)
  // Layers per stage that shorten the slowest stage (empty when it is within
  // kStageImbalanceToReport of the median, with one stage, with an interleaved schedule, or when
  // no split gains 2 %). Each stage's busy time is taken as a layer's time (the middle stages'
  // median) times its layers, plus what that leaves unexplained on the first and last stages
  // (embedding, head); the split has the least largest estimate.
  std::vector<int> balanced;
};

StageBalance stage_balance(const ParallelPlan& plan, const std::vector<RankRecord>& ranks);

}  // namespace dtsim

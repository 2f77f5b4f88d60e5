// The order in which one pipeline stage runs the forward and backward passes of its
// micro-batches (and model chunks): GPipe, 1F1B, Megatron-Core's interleaved 1F1B, DeepSeek's
// DualPipe and the zero-bubble ZB-H1.
#pragma once
#include <vector>

#include "workloads/parallel_plan.hpp"

namespace dtsim {

struct PipelinePass {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk of the stage (0 unless interleaved or DualPipe)
  // This forward pass and the backward pass after it run side by side, each one's communication
  // beside the other's computation (DualPipe; Megatron-Core's EP-overlapped 1F1B).
  bool overlapped = false;
  // A weight-gradient pass (forward false): the weight GEMMs of a backward pass that ran as its
  // input-gradient pass only (ZB-H1).
  bool weight = false;
};

// Every pass of `stage` in execution order: micro_batches() x virtual_stages forward passes and as
// many backward passes (and, under ZB-H1, as many weight-gradient passes). plan must have passed
// validate_plan.
std::vector<PipelinePass> pipeline_order(const ParallelPlan& plan, int stage);

}  // namespace dtsim

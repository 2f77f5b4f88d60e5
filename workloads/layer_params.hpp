// The parameters of one transformer layer as one rank holds them before the TP split: the part
// every DP replica holds (attention, norms, dense MLP, router, shared experts), reduced over DP,
// and the routed experts of the rank's EP shard (experts / ep of them), reduced over the
// expert-DP group (the dp / ep ranks that hold the same experts).
#pragma once
#include "workloads/model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

struct LayerParams {
  double replicated = 0;  // held by every DP replica
  double experts = 0;     // this EP rank's routed experts
};

// From model.layers on: multi-token-prediction module layer - model.layers.
LayerParams layer_params(const ModelShape& model, const ParallelPlan& plan, int layer);
// Summed over the stage's layers [first, first + count).
LayerParams layers_params(const ModelShape& model, const ParallelPlan& plan, int first, int count);

}  // namespace dtsim

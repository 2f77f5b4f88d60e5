// The parallel sizes a scenario leaves unset (parallel.tp, pp or dp = auto), chosen before the run:
// the first layout, by fewest model-parallel GPUs, that the plan's checks accept and whose memory
// (workloads/memory_fit, the simulated step's own plan) fits the GPU.
#pragma once
#include <string>

#include "topologies/gpu_catalog.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// A size left to choose.
constexpr int kAutoSize = 0;

// Fills the plan's sizes that are kAutoSize for `num_gpus` GPUs of `gpu` in nodes of
// `gpus_per_node`: tp from 1, 2, 4, ... up to the node, then pp from 1 up, smallest tp x pp first
// (then larger tp), dp the GPUs left. Returns what it chose, as the summary says it ("" when the
// plan had nothing to choose); a layout that does not fit is kept when none fits, and said so.
// Throws InputError when no layout passes the plan's checks.
std::string choose_layout(ParallelPlan& plan, const ModelShape& model, const GpuSpec& gpu, int num_gpus,
                          int gpus_per_node);

}  // namespace dtsim

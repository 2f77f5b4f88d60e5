// Builds the EngineResult of a finished step from the engine's rank states (internal to the
// engine: see state.hpp).
#pragma once
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/engine/state.hpp"

namespace dtsim {

// What a link carried over the step: bytes, and seconds with at least one flow.
struct LinkUse {
  double bytes = 0, busy_s = 0;
};

EngineResult summarize_step(const std::vector<RankState>& ranks, const Program& program, const ClusterGraph& graph,
                            const GpuSpec& gpu, double peak_flops, const std::vector<LinkUse>& links);

}  // namespace dtsim

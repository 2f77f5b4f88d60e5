// Builds the EngineResult of a finished step from the engine's rank states (internal to the
// engine: see engine_state.hpp).
#pragma once
#include <vector>

#include "sim/engine.hpp"
#include "sim/engine_state.hpp"
#include "sim/transfers.hpp"

namespace dtsim {

EngineResult summarize_step(const std::vector<RankState>& ranks, const Program& program, const ClusterGraph& graph,
                            const GpuSpec& gpu, double peak_flops, const Transfers& transfers);

}  // namespace dtsim

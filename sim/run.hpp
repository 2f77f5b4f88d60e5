// One simulated training step from a scenario: builds (or reads) the cluster, builds the
// program, runs the engine and writes the trace. This is what `dtsim run` does.
#pragma once
#include <string>

#include "sim/engine.hpp"
#include "sim/scenario.hpp"
#include "topologies/cluster_graph.hpp"

namespace dtsim {

// Builds the scenario's cluster from its builder keys or its topology file; checks that it is
// connected. Throws InputError.
ClusterGraph make_cluster(const Scenario& scenario);

// Validates the layout against the cluster, simulates one step and, when trace_path is set,
// writes the HDF5 trace there (atomically). `threads`: engine threads (the result is the same for
// any count). Throws InputError on bad input.
EngineResult run_scenario(Scenario& scenario, const std::string& trace_path, int threads = 1);

}  // namespace dtsim

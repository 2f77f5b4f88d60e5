// One simulated training step from a scenario: builds (or reads) the cluster, builds the
// program, runs the engine and writes the trace. This is what `dtsim run` does.
#pragma once
#include <string>

#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario.hpp"
#include "topologies/cluster_graph.hpp"

namespace dtsim {

// Builds the scenario's cluster from its builder keys or its topology file; checks that it is
// connected. Throws InputError.
ClusterGraph make_cluster(const Scenario& scenario);

// The trace's /topology rows: every device of the graph.
std::vector<DeviceRecord> device_records(const ClusterGraph& graph);

// Whether permuting the TP ranks of every TP group alike (the same permutation in each) maps the
// scenario's cluster onto itself, so the engine may fold them (EngineOptions::tp_symmetric): a
// built cluster of NVSwitch nodes or NVL72 racks (every GPU on its domain's switch), TP innermost
// in the rank order with whole groups inside nodes, the NICs wired so that the permutation
// permutes them too (tp divides the NICs per node or they divide tp), every node's NICs on one
// leaf (fat tree), single paths (no explicit spines), and no slow GPU or degraded link.
bool tp_fold_exact(const Scenario& scenario);

// Validates the layout against the cluster, simulates one step and, when trace_path is set,
// writes the HDF5 trace there (atomically). `threads`: engine threads (the result is the same for
// any count). Each transfer leaving a TP group carries its TP copies' where tp_fold_exact says
// that is exact; `fold_tp`: there, run only one rank per TP group. Before any work, refuses a
// simulation whose memory estimate is above `max_memory_bytes` (0: half the machine's memory;
// memory_budget.hpp). Throws InputError on bad input.
EngineResult run_scenario(Scenario& scenario, const std::string& trace_path, int threads = 1, bool fold_tp = false,
                          double max_memory_bytes = 0);

// Refuses (InputError) a trace path that would overwrite the scenario file itself, or, when the
// path was named only inside the scenario file (`named_on_command_line` false), an existing file
// that is not an HDF5 file (a trace of an earlier run may be replaced; notes.txt may not).
void check_trace_target(const std::string& trace_path, const std::string& scenario_path, bool named_on_command_line);

}  // namespace dtsim

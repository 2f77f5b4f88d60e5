// What one simulation will hold in memory, estimated from the scenario before any work starts,
// and the budget it must fit (dtsim run --max-memory): a run larger than the machine is refused
// with its estimate instead of swapping or being killed. The estimate is linear in the GPUs
// (cluster graph, routes, per-rank engine state) and in the program's ops; its coefficients are
// peak resident sizes measured on shipped scenarios (docs/hardening.md).
#pragma once
#include "sim/scenario/scenario.hpp"

namespace dtsim {

// Fixed cost (the binary, HDF5, TBB, catalogs), per simulated GPU, per program op.
constexpr double kFootprintBaseBytes = 16.0 * 1024 * 1024;
constexpr double kFootprintBytesPerGpu = 7.0 * 1024;
constexpr double kFootprintBytesPerOp = 100;

// Bytes the simulation of `scenario` on `gpus` GPUs will hold at its peak.
double estimated_run_bytes(const Scenario& scenario, double gpus);

// Half the machine's physical memory: the default budget of one simulation.
double default_memory_budget_bytes();

// Throws InputError naming the estimate, the budget and what to change when the estimate is
// above `budget_bytes` (0: the default budget).
void check_memory_budget(const Scenario& scenario, double gpus, double budget_bytes);

}  // namespace dtsim

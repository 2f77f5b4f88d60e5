// Joins the tables of the shards of one sweep (`dtsim merge`) into the table of the whole sweep.
#pragma once
#include <string>
#include <vector>

#include "sim/sweep/table.hpp"

namespace dtsim {

// Reads every part and returns one table with all points in order (shard "1/1"). Throws
// InputError naming the files when parts come from different sweeps (scenario, axes or their
// values differ), when a point is in two parts, or when points of the sweep are in no part.
SweepTable merge_sweep_tables(const std::vector<std::string>& paths);

}  // namespace dtsim

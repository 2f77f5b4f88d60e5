// `dtsim sweep` and `dtsim merge` once their options are parsed: runs this process's points
// (all, or one shard; across MPI ranks in -DDTSIM_MPI=ON builds started by mpirun), shows the
// progress, keeps the journal of finished points (sim/sweep_journal) so that --resume can skip
// them, and writes the sweep table.
#pragma once
#include <string>
#include <vector>

#include "sim/sweep/axes.hpp"
#include "sim/sweep/runner.hpp"

namespace dtsim {

struct SweepRequest {
  SweepPlan plan;
  SweepShard shard;
  int jobs = 0;            // threads; 0 = all cores
  std::string output;      // HDF5 table, "" = none
  std::string csv;         // CSV table, "" = none; with neither, the CSV goes to stdout
  bool quiet = false;      // no progress
  bool resume = false;     // skip the points of the journal OUTPUT.progress (or CSV.progress)
};

// The progress journal of a sweep writing `output` (else `csv`): FILE.progress; "" for neither.
std::string sweep_journal_path(const std::string& output, const std::string& csv);

// Returns the exit status; throws InputError on bad input (nothing is written then).
int run_sweep(const SweepRequest& request);

// Joins the shard files `parts` into `output` (and `csv` when set).
int run_merge(const std::string& output, const std::string& csv, const std::vector<std::string>& parts);

}  // namespace dtsim

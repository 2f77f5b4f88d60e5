// The sweep table: one row per point (README "Sweep format"), written as the /sweep dataset of
// an HDF5 file (format "dtsim-sweep") and as CSV with the same columns, and read back for
// `dtsim merge`. Both files are written to temporaries created exclusively next to them
// (sim/base/safe_write.hpp) and renamed when both are complete; reading checks every attribute and
// the table's shape and columns first (sim/trace/hdf5_read.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/sweep/runner.hpp"

namespace dtsim {

struct SweepTable {
  std::string scenario;            // root attribute: the resolved base scenario
  std::string definition;          // /sweep attribute: the axes and their values, as a [sweep] section
  std::vector<std::string> axes;   // axis keys, in order (/sweep attribute `axes`)
  std::int64_t total_points = 0;   // points of the whole sweep (/sweep attribute `total_points`)
  std::string shard = "1/1";       // root attribute: which slice the rows are ("1/1": all)
  std::vector<PointResult> rows;   // in increasing point order
};

// The `definition` text of a sweep: "mode = product|zip" then one "key = values" line per axis.
std::string sweep_definition(const SweepSpec& spec);

// Writes the table to `h5_path` and/or `csv_path` (either may be ""); neither file appears
// unless both are complete. Throws InputError naming the file.
void save_sweep_table(const SweepTable& table, const std::string& h5_path, const std::string& csv_path);

// The CSV text of the table: a header line, then one line per row.
std::string sweep_csv(const SweepTable& table);

// Reads a file written by save_sweep_table; throws InputError naming the file when it is not a
// dtsim sweep or has a format_version this build does not read.
SweepTable read_sweep_table(const std::string& path);

}  // namespace dtsim

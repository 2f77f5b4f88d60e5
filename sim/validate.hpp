// `dtsim validate`: reads published training runs in the column format of
// shared/validation/runs.csv, builds each row as a scenario, simulates it and compares the
// predicted iteration time with the measured one. Rows that cannot be built are kept, with the
// reason.
#pragma once
#include <string>
#include <vector>

namespace dtsim {

struct ValidationRow {
  std::string id, source;
  bool built = false;
  std::string skip_reason;   // why the row was not simulated
  std::string caveat;        // what the simulation differs in (e.g. no interleaving), may be empty
  double measured_s = 0, predicted_s = 0, error_pct = 0;
};

// Throws InputError for an unreadable file or a missing column. `sources` filters by
// source_id (empty: every row).
std::vector<ValidationRow> validate_runs(const std::string& csv_path, const std::vector<std::string>& sources);

}  // namespace dtsim

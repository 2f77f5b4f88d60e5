// `dtsim validate`: reads published training runs in the column format of
// shared/validation/runs.csv, builds each row as a scenario, simulates it and compares the
// predicted iteration time with the measured one. Rows that cannot be built are kept, with the
// reason.
#pragma once
#include <istream>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace dtsim {

struct ValidationRow {
  std::string id, source;
  bool built = false;
  std::string skip_reason;   // why the row was not simulated
  std::string caveat;        // what the simulation differs in (e.g. no interleaving), may be empty
  double measured_s = 0, predicted_s = 0, error_pct = 0;
};

// A row of the runs CSV and the scenario overrides (--section.key=value) that build it; no
// overrides when the row cannot be built (row.skip_reason says why).
struct ValidationCase {
  ValidationRow row;
  std::vector<std::string> overrides;
};

// Reads the runs CSV text from `in` (`name` stands for the file in messages): checks the columns
// and turns each row (of `sources`; empty: all) into a case. Throws InputError for an empty file
// or a missing column; a row with a malformed value is a case with its skip reason.
std::vector<ValidationCase> read_validation_cases(std::istream& in, const std::string& name,
                                                  const std::vector<std::string>& sources);

// The scenario of a case with overrides, checked as load_scenario does; throws InputError.
Scenario validation_scenario(const ValidationCase& c, const std::string& name);

// Throws InputError for an unreadable file or a missing column. `sources` filters by
// source_id (empty: every row).
std::vector<ValidationRow> validate_runs(const std::string& csv_path, const std::vector<std::string>& sources);

}  // namespace dtsim

// `dtsim validate`: reads published training runs in the column format of
// shared/validation/runs.csv, builds each row as a scenario (the framework column mapped to a
// framework profile, the model column to an architecture family, empty columns filled and listed
// as assumptions), simulates it and compares the predicted step time with the measured one (or
// with the one its published throughput implies). Rows that cannot be built are kept, with the
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
  std::string framework;     // the framework profile the row runs with (training.framework)
  std::string framework_rule;            // why that profile: what the framework column says
  std::vector<std::string> assumptions;  // empty columns filled from the profile, the model family or the GPU
  // The published quantity compared: iter_time_s, or, without one, tokens_per_s_per_gpu or
  // tflops_per_gpu (with the row's flops_counting rule), turned into the step time it implies.
  std::string compared_on;
  double measured_s = 0, predicted_s = 0, error_pct = 0;  // step times; error = (predicted - measured) / measured
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

// The scenario file of one row (run_id `id`) of the runs CSV: a comment header with the measured
// step time, what it was compared on, the framework profile and the assumptions, then every key =
// value as the row runs, so `dtsim run` on it predicts what `dtsim validate` does. Throws
// InputError naming the file and the run ids for an unknown id, or the reason the row cannot be built.
std::string validation_row_scenario(const std::string& csv_path, const std::string& id);

// Throws InputError for an unreadable file or a missing column. `sources` filters by
// source_id (empty: every row).
std::vector<ValidationRow> validate_runs(const std::string& csv_path, const std::vector<std::string>& sources);

// The rows as a table (one line per row: measured, predicted, error, profile; skipped rows with
// their reason; the assumptions under their row) or as one JSON object with the median and
// largest |error|.
std::string validation_report(const std::vector<ValidationRow>& rows, bool json);

}  // namespace dtsim

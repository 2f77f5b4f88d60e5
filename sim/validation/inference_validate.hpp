// `dtsim validate` on an inference CSV (the columns of tests/validation/inference_runs.csv): each
// row that dtsim can run becomes a `dtsim serve` scenario (inference_row.hpp), is simulated and
// compared on the metric it measured; the others are kept with the reason. The report gives each
// row and the median |error| per source and over all rows.
#pragma once
#include <istream>
#include <string>
#include <vector>

namespace dtsim {

struct InferenceValidationRow {
  std::string id, source, metric;
  bool built = false;
  std::string skip_reason;               // why the row was not simulated
  std::vector<std::string> assumptions;  // what the row does not say and was chosen
  std::vector<std::string> overrides;    // the serve scenario (--section.key=value)
  double measured = 0, predicted = 0, error_pct = 0;  // error = (predicted - measured) / measured
};

// True when the CSV header names the inference columns (a `metric` and a `weight_format` column):
// `dtsim validate` then compares serving rows instead of training runs.
bool is_inference_csv(const std::string& csv_path);

// Reads the CSV text from `in` (`name` in messages) into rows, each with its scenario or its skip
// reason; `sources` keeps rows of those source ids (empty: all). Throws InputError for an empty
// file or a missing column.
std::vector<InferenceValidationRow> read_inference_rows(std::istream& in, const std::string& name,
                                                        const std::vector<std::string>& sources);

// Reads and simulates the rows of the file; throws InputError for an unreadable file.
std::vector<InferenceValidationRow> validate_inference_runs(const std::string& csv_path,
                                                            const std::vector<std::string>& sources);

// The median |error| of the built rows among `rows` of `source` (empty: all), 0 when none.
double median_abs_error(const std::vector<InferenceValidationRow>& rows, const std::string& source = "");

// One line per row (id, metric, measured, dtsim, error; skipped rows with their reason; the
// assumptions under their row), then the median |error| per source and overall; or one JSON object.
std::string inference_validation_report(const std::vector<InferenceValidationRow>& rows, bool json);

}  // namespace dtsim

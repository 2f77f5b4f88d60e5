// One published run (a row of shared/validation/runs.csv) as a scenario: the framework column
// mapped to a framework profile, the model column to a catalog mixture-of-experts model
// (moe_row.hpp) or else an architecture family (MLP kind, positions, biases, embeddings), empty
// columns filled from the profile, the family or the GPU and listed as assumptions, and the
// published quantity to compare (iteration time, or the step time a published throughput implies).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace dtsim {

using CsvRow = std::map<std::string, std::string>;

struct RowScenario {
  std::vector<std::string> overrides;    // --section.key=value
  std::string framework, framework_rule;
  std::vector<std::string> assumptions;
  std::string compared_on;               // iter_time_s | tokens_per_s_per_gpu | tflops_per_gpu
  double measured_s = 0;                 // the step time measured or implied
};

// The reason a row cannot be simulated, or "" when it can.
std::string row_unsupported(const CsvRow& row);

// The scenario of a row that row_unsupported accepts; throws InputError naming the column and
// value for a malformed one.
RowScenario row_scenario(const CsvRow& row);

}  // namespace dtsim

// `dtsim serve --sweep`: one inference simulation per point of the sweep's axes (any scenario
// keys, the [inference] ones included), printed as a table or one JSON object.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "sim/sweep/axes.hpp"

namespace dtsim {

struct ServeSweep {
  std::string scenario_path;
  std::vector<std::pair<std::string, std::string>> fixed;  // --section.key=value of the command line
  SweepSpec spec;
  int threads = 1;
  bool json = false;
};

// Runs every point in order; a point whose scenario is refused gets a row with the reason.
// Returns the text to print.
std::string run_serve_sweep(const ServeSweep& sweep);

}  // namespace dtsim

// Helpers shared by the scenario tests: scenario keys given as command-line overrides, parsed as
// `dtsim run` parses them, and a shipped scenario loaded with them.
#pragma once
#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace dtsim::test {

inline boost::program_options::variables_map overrides(const std::vector<std::string>& args = {}) {
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(scenario_options()).run(), vm);
  return vm;
}

// scenarios/FILE (the defaults for an empty name) with `args` over it.
inline Scenario load_shipped(const std::string& file, const std::vector<std::string>& args = {}) {
  return load_scenario(file.empty() ? "" : std::string(DTSIM_SOURCE_DIR) + "/scenarios/" + file, overrides(args));
}

}  // namespace dtsim::test

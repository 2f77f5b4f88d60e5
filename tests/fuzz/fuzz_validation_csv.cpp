// libFuzzer target: any bytes as a validation runs CSV (the columns of shared/validation/runs.csv);
// every row that can be built becomes a scenario, loaded and checked against its GPU count. An
// InputError is the expected answer to bad input; anything else (another exception, a crash, a
// sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "sim/base/error.hpp"
#include "sim/validation/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    for (const dtsim::ValidationCase& c : dtsim::read_validation_cases(in, "fuzz.csv", {})) {
      if (c.overrides.empty()) continue;
      try {
        dtsim::Scenario sc = dtsim::validation_scenario(c, "fuzz.csv");
        dtsim::validate_scenario(sc, sc.cluster.nodes * sc.cluster.gpus_per_node);
      } catch (const dtsim::InputError&) {
      }
    }
  } catch (const dtsim::InputError&) {
  }
  return 0;
}

// libFuzzer target: any bytes as a scenario file (with a [sweep] section allowed), loaded, checked
// against its GPU count, and its cluster built when it is small. An InputError is the expected
// answer to bad input; anything else (another exception, a crash, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/base/error.hpp"
#include "sim/scenario/scenario.hpp"
#include "topologies/builders.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    dtsim::Scenario sc = dtsim::load_scenario_text(text, "fuzz.ini", {}, dtsim::SweepSection::accept);
    const int gpus = sc.cluster.nodes * sc.cluster.gpus_per_node;  // <= the GPU limit once loaded
    dtsim::validate_scenario(sc, gpus);
    if (gpus <= 64) dtsim::build_cluster(sc.cluster);
  } catch (const dtsim::InputError&) {
  }
  return 0;
}

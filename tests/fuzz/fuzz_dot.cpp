// libFuzzer target: any bytes as a GraphViz DOT machine description, read into a ClusterGraph and,
// when small, checked for connectivity by the router. An InputError is the expected answer to bad
// input; anything else (another exception, a crash, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/base/error.hpp"
#include "topologies/dot_io.hpp"
#include "topologies/routing.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const dtsim::ClusterGraph graph = dtsim::read_dot_text(text, "fuzz.dot");
    if (boost::num_vertices(graph.graph()) <= 256) dtsim::Router(graph).check_connected();
  } catch (const dtsim::InputError&) {
  }
  return 0;
}

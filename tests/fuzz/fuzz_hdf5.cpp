// libFuzzer target: any bytes as an HDF5 file, read as a dtsim trace (then exported to Chrome JSON
// in memory) and as a sweep table. Seeds are real files (tests/fuzz/corpus/hdf5: a tiny trace and
// a tiny sweep table), so byte mutations reach the attribute, dataset and heap checks of
// sim/trace/hdf5_read.hpp. An InputError is the expected answer to bad input; anything else (a
// crash inside HDF5, another exception, a sanitizer report) is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/base/error.hpp"
#include "sim/sweep/table.hpp"
#include "sim/trace/chrome_export.hpp"
#include "sim/trace/hdf5_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/dtsim_fuzz_hdf5_" + std::to_string(::getpid()) + ".h5";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  try {
    const dtsim::TraceContents trace = dtsim::read_trace(path);
    std::ostringstream json;
    dtsim::write_chrome_trace(trace, path, json);
  } catch (const dtsim::InputError&) {
  }
  try {
    dtsim::read_sweep_table(path);
  } catch (const dtsim::InputError&) {
  }
  return 0;
}

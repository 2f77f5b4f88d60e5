// read_trace: loads a whole dtsim HDF5 trace (written by Hdf5TraceSink) back into records; used
// by tests and by the CLI's trace inspection.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "sim/trace/records.hpp"

namespace dtsim {

struct TraceContents {
  std::map<std::string, std::string> string_attrs;  // root string attributes (format, scenario, ...)
  int format_version = 0;
  std::vector<EventRecord> events;
  std::vector<MemoryRecord> memory;
  std::vector<RankRecord> ranks;
  std::vector<DeviceRecord> devices;
  std::vector<LinkRecord> links;
  Summary summary;
};

// Throws InputError naming `path` when the file cannot be read, is not a dtsim trace, or has a
// format_version this build does not read.
TraceContents read_trace(const std::string& path);

}  // namespace dtsim

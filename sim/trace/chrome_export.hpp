// Chrome trace-event JSON export of a dtsim trace (`dtsim export TRACE.h5 --chrome OUT.json`), for
// Perfetto (ui.perfetto.dev) and chrome://tracing. Layout of the JSON object:
//   - one process per traced rank (pid = rank + 1 in 64 bits, named "rank R (stage P, node N)", sorted by
//     rank), one thread per stream it used (tid = stream index + 1, named by the stream);
//   - one complete event ("ph":"X") per /events row: name = op, cat = category (compute, memory,
//     communication), cname = the category's colour, ts/dur in microseconds (exact to the ns),
//     args = phase, layer, micro_batch, flops, bytes;
//   - one counter event ("ph":"C", name "memory GiB") per /memory row with the GiB in use per
//     category (weights, gradients, optimizer, activations, buffers);
//   - metadata events ("ph":"M") for the names and sort order above;
//   - "otherData": format, dtsim version, step time and source trace.
#pragma once
#include <cstddef>
#include <ostream>
#include <string>

#include "sim/trace/hdf5_reader.hpp"

namespace dtsim {

struct ChromeExportCounts {
  std::size_t op_events = 0;        // "X", one per /events row
  std::size_t counter_events = 0;   // "C", one per /memory row
  std::size_t metadata_events = 0;  // "M"
};

// Writes `trace` as one Chrome trace JSON object to `out`, streaming in blocks. `source` names the
// trace in otherData and in errors (an event whose codes are out of range throws InputError).
ChromeExportCounts write_chrome_trace(const TraceContents& trace, const std::string& source, std::ostream& out);

// Reads `trace_path` and writes `json_path` (through a temporary created exclusively next to it,
// renamed when complete: sim/base/safe_write.hpp).
// Throws InputError naming the file when the trace cannot be read or the output cannot be written.
ChromeExportCounts export_chrome_trace(const std::string& trace_path, const std::string& json_path);

}  // namespace dtsim

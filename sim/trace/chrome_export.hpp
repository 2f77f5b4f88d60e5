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
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <utility>

#include "sim/trace/hdf5_reader.hpp"

namespace dtsim {

// What to export: some ranks only (empty: every traced rank), and events that overlap a window
// of the step (an event is kept whole when any part of it is inside; memory counters inside it).
struct ChromeExportFilter {
  std::set<int> ranks;
  TimeNs start_ns = 0;
  TimeNs end_ns = std::numeric_limits<TimeNs>::max();
};

// Parses --ranks "0,3,8-15" (rank numbers and inclusive ranges, at most 2^20 ranks) and --window
// "START:END" in seconds of the step (either side may be empty: "2.5:" or ":1"); throws
// InputError naming the option and what is valid.
std::set<int> parse_rank_list(const std::string& text);
std::pair<TimeNs, TimeNs> parse_time_window(const std::string& text);

struct ChromeExportCounts {
  std::size_t op_events = 0;        // "X", one per /events row
  std::size_t counter_events = 0;   // "C", one per /memory row
  std::size_t metadata_events = 0;  // "M"
};

// Writes `trace` as one Chrome trace JSON object to `out`, streaming in blocks. `source` names the
// trace in otherData and in errors (an event whose codes are out of range throws InputError).
ChromeExportCounts write_chrome_trace(const TraceContents& trace, const std::string& source, std::ostream& out,
                                      const ChromeExportFilter& filter = {});

// Reads `trace_path` and writes `json_path` (through a temporary created exclusively next to it,
// renamed when complete: sim/base/safe_write.hpp).
// Throws InputError naming the file when the trace cannot be read or the output cannot be written.
ChromeExportCounts export_chrome_trace(const std::string& trace_path, const std::string& json_path,
                                       const ChromeExportFilter& filter = {});

}  // namespace dtsim

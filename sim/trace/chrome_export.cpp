// write_chrome_trace / export_chrome_trace (see chrome_export.hpp): the JSON is produced with fmt
// into a buffer flushed to the stream every few MiB, so a large trace is never held as one string.
#include "sim/trace/chrome_export.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "sim/base/error.hpp"
#include "sim/base/units.hpp"
#include "workloads/program.hpp"

namespace dtsim {

namespace {

// The /events category codes (records.hpp) and the Chrome colour names (catapult's
// color_scheme) that draw them as the Python plots do: compute green, memory-bound orange,
// communication blue.
constexpr std::array<const char*, 3> kCategories = {"compute", "memory", "communication"};
constexpr std::array<const char*, 3> kColours = {"thread_state_running", "thread_state_iowait", "rail_load"};
constexpr int kNumPhases = static_cast<int>(Phase::optimizer) + 1;
constexpr std::size_t kFlushBytes = 4 << 20;

// A JSON string literal of `text`.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Nanoseconds as microseconds with three exact decimals (trace times are never negative).
struct Micros {
  TimeNs ns;
};

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}

  template <class... Args>
  void item(fmt::format_string<Args...> format, Args&&... args) {
    if (!first_) buffer_.push_back(',');
    first_ = false;
    buffer_.push_back('\n');
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<Args>(args)...);
    if (buffer_.size() > kFlushBytes) flush();
  }
  void raw(std::string_view text) { buffer_.append(text); }
  void flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

 private:
  std::ostream& out_;
  fmt::memory_buffer buffer_;
  bool first_ = true;
};

}  // namespace

}  // namespace dtsim

template <>
struct fmt::formatter<dtsim::Micros> : fmt::formatter<std::string_view> {
  auto format(dtsim::Micros t, format_context& ctx) const {
    return fmt::format_to(ctx.out(), "{}.{:03}", t.ns / 1000, t.ns % 1000);
  }
};

namespace dtsim {

ChromeExportCounts write_chrome_trace(const TraceContents& trace, const std::string& source, std::ostream& out) {
  ChromeExportCounts counts;
  std::map<int, const RankRecord*> ranks;
  for (const RankRecord& r : trace.ranks) ranks[r.rank] = &r;
  std::set<int> traced;
  std::set<std::pair<int, int>> threads;  // (rank, stream)
  for (const EventRecord& e : trace.events) {
    if (e.stream < 0 || e.stream >= kNumStreams || e.category < 0 || e.category >= 3 || e.op < 0 ||
        e.op >= kNumOpKinds || e.phase < 0 || e.phase >= kNumPhases || !ranks.count(e.rank) || e.end_ns < e.start_ns ||
        e.start_ns < 0) {
      throw InputError(fmt::format("trace file '{}': /events row of rank {} at {} ns has codes or times out of range "
                                   "(stream {}, category {}, op {}, phase {}, end {} ns)",
                                   source, e.rank, e.start_ns, e.stream, e.category, e.op, e.phase, e.end_ns));
    }
    traced.insert(e.rank);
    threads.insert({e.rank, e.stream});
  }
  for (const MemoryRecord& m : trace.memory) {
    if (!ranks.count(m.rank) || m.time_ns < 0)
      throw InputError(fmt::format("trace file '{}': /memory row of rank {} at {} ns is out of range", source, m.rank,
                                   m.time_ns));
    traced.insert(m.rank);
  }

  Writer w(out);
  w.raw("{\"displayTimeUnit\": \"ns\",\n");
  const auto version = trace.string_attrs.find("dtsim_version");
  w.raw(fmt::format("\"otherData\": {{\"format\": \"dtsim-trace\", \"format_version\": {}, \"dtsim_version\": {}, "
                    "\"step_time_s\": {}, \"source\": {}}},\n\"traceEvents\": [",
                    trace.format_version,
                    json_string(version != trace.string_attrs.end() ? version->second : std::string()),
                    trace.summary.step_time_s, json_string(source)));
  for (const int rank : traced) {
    const RankRecord& r = *ranks.at(rank);
    w.item(R"j({{"ph": "M", "name": "process_name", "pid": {}, "args": {{"name": "rank {} (stage {}, node {})"}}}})j",
           rank + 1, rank, r.pp, r.node);
    w.item(R"j({{"ph": "M", "name": "process_sort_index", "pid": {}, "args": {{"sort_index": {}}}}})j", rank + 1, rank);
    counts.metadata_events += 2;
  }
  for (const auto& [rank, stream] : threads) {
    w.item(R"j({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})j", rank + 1,
           stream + 1, stream_name(static_cast<Stream>(stream)));
    w.item(R"j({{"ph": "M", "name": "thread_sort_index", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})j",
           rank + 1, stream + 1, stream);
    counts.metadata_events += 2;
  }
  for (const EventRecord& e : trace.events) {
    w.item(R"j({{"ph": "X", "name": "{}", "cat": "{}", "cname": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )j"
           R"j("args": {{"phase": "{}", "layer": {}, "micro_batch": {}, "flops": {}, "bytes": {}}}}})j",
           op_kind_name(static_cast<OpKind>(e.op)), kCategories[e.category], kColours[e.category], e.rank + 1,
           e.stream + 1, Micros{e.start_ns}, Micros{e.end_ns - e.start_ns}, phase_name(static_cast<Phase>(e.phase)),
           e.layer, e.micro_batch, e.flops, e.bytes);
    ++counts.op_events;
  }
  for (const MemoryRecord& m : trace.memory) {
    w.item(R"j({{"ph": "C", "name": "memory GiB", "pid": {}, "ts": {}, "args": {{"weights": {:.6f}, )j"
           R"j("gradients": {:.6f}, "optimizer": {:.6f}, "activations": {:.6f}, "buffers": {:.6f}}}}})j",
           m.rank + 1, Micros{m.time_ns}, m.weights / kGiB, m.gradients / kGiB, m.optimizer / kGiB,
           m.activations / kGiB, m.buffers / kGiB);
    ++counts.counter_events;
  }
  w.raw("\n]}\n");
  w.flush();
  return counts;
}

ChromeExportCounts export_chrome_trace(const std::string& trace_path, const std::string& json_path) {
  const TraceContents trace = read_trace(trace_path);
  const std::string tmp = json_path + ".tmp";
  ChromeExportCounts counts;
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw InputError(fmt::format("--chrome {}: cannot write the file", json_path));
    try {
      counts = write_chrome_trace(trace, trace_path, out);
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw InputError(fmt::format("--chrome {}: write failed (disk full?)", json_path));
    }
  }
  if (std::rename(tmp.c_str(), json_path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(fmt::format("--chrome {}: cannot rename {} to it", json_path, tmp));
  }
  return counts;
}

}  // namespace dtsim

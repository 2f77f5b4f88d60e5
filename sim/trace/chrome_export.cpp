// write_chrome_trace / export_chrome_trace (see chrome_export.hpp): the JSON is produced with fmt
// into a buffer flushed to the stream every few MiB, so a large trace is never held as one string;
// strings and numbers go through sim/base/json.hpp (escaped, non-finite as null).
#include "sim/trace/chrome_export.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "sim/base/error.hpp"
#include "sim/base/json.hpp"
#include "sim/base/safe_write.hpp"
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

// The Chrome process id of a rank (rank + 1, in 64 bits: a rank may be INT_MAX).
std::int64_t pid(int rank) { return std::int64_t{rank} + 1; }

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
                    JsonNumber{trace.summary.step_time_s}, json_string(source)));
  for (const int rank : traced) {
    const RankRecord& r = *ranks.at(rank);
    w.item(R"j({{"ph": "M", "name": "process_name", "pid": {}, "args": {{"name": "rank {} (stage {}, node {})"}}}})j",
           pid(rank), rank, r.pp, r.node);
    w.item(R"j({{"ph": "M", "name": "process_sort_index", "pid": {}, "args": {{"sort_index": {}}}}})j", pid(rank), rank);
    counts.metadata_events += 2;
  }
  for (const auto& [rank, stream] : threads) {
    w.item(R"j({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})j", pid(rank),
           stream + 1, stream_name(static_cast<Stream>(stream)));
    w.item(R"j({{"ph": "M", "name": "thread_sort_index", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})j",
           pid(rank), stream + 1, stream);
    counts.metadata_events += 2;
  }
  for (const EventRecord& e : trace.events) {
    w.item(R"j({{"ph": "X", "name": "{}", "cat": "{}", "cname": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )j"
           R"j("args": {{"phase": "{}", "layer": {}, "micro_batch": {}, "flops": {}, "bytes": {}}}}})j",
           op_kind_name(static_cast<OpKind>(e.op)), kCategories[e.category], kColours[e.category], pid(e.rank),
           e.stream + 1, Micros{e.start_ns}, Micros{e.end_ns - e.start_ns}, phase_name(static_cast<Phase>(e.phase)),
           e.layer, e.micro_batch, JsonNumber{e.flops}, JsonNumber{e.bytes});
    ++counts.op_events;
  }
  for (const MemoryRecord& m : trace.memory) {
    w.item(R"j({{"ph": "C", "name": "memory GiB", "pid": {}, "ts": {}, "args": {{"weights": {:.6f}, )j"
           R"j("gradients": {:.6f}, "optimizer": {:.6f}, "activations": {:.6f}, "buffers": {:.6f}}}}})j",
           pid(m.rank), Micros{m.time_ns}, JsonNumber{m.weights / kGiB}, JsonNumber{m.gradients / kGiB},
           JsonNumber{m.optimizer / kGiB}, JsonNumber{m.activations / kGiB}, JsonNumber{m.buffers / kGiB});
    ++counts.counter_events;
  }
  w.raw("\n]}\n");
  w.flush();
  return counts;
}

ChromeExportCounts export_chrome_trace(const std::string& trace_path, const std::string& json_path) {
  const TraceContents trace = read_trace(trace_path);
  TempTextFile out(json_path, "--chrome " + json_path);
  const ChromeExportCounts counts = write_chrome_trace(trace, trace_path, out.stream());
  out.commit();
  return counts;
}

}  // namespace dtsim

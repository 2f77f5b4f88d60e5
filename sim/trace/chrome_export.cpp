// write_chrome_trace / export_chrome_trace (see chrome_export.hpp): the JSON is produced with fmt
// into a buffer flushed to the stream every few MiB, so a large trace is never held as one string;
// strings and numbers go through sim/base/json.hpp (escaped, non-finite as null).
#include "sim/trace/chrome_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "sim/base/error.hpp"
#include "sim/base/json.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/safe_write.hpp"
#include "sim/base/units.hpp"
#include "sim/trace/gzip_stream.hpp"
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

namespace {

// `item` read whole as a number, or nothing (empty, trailing characters, not finite).
std::optional<double> whole_number(const std::string& item) {
  std::size_t used = 0;
  try {
    const double value = std::stod(item, &used);
    if (used == item.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

std::set<int> parse_rank_list(const std::string& text) {
  std::set<int> ranks;
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("--ranks '{}': {}; give ranks and ranges, e.g. 0,3,8-15", text, why));
  };
  const auto rank = [&](const std::string& item) {
    const std::optional<double> value = whole_number(item);
    if (!value || *value != std::floor(*value) || *value < 0 || *value >= limits::kMaxGpus)
      throw bad(fmt::format("'{}' is not a rank from 0 to {}", item, limits::kMaxGpus - 1));
    return static_cast<int>(*value);
  };
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    if (item.empty()) throw bad("an empty item");
    const std::size_t dash = item.find('-', 1);
    const int first = rank(item.substr(0, dash)), last = dash == std::string::npos ? first : rank(item.substr(dash + 1));
    if (last < first) throw bad(fmt::format("the range '{}' goes down", item));
    if (ranks.size() + static_cast<std::size_t>(last - first) + 1 > static_cast<std::size_t>(limits::kMaxGpus))
      throw bad(fmt::format("more than {} ranks", limits::kMaxGpus));
    for (int r = first; r <= last; ++r) ranks.insert(r);
    at = comma + 1;
  }
  return ranks;
}

std::pair<TimeNs, TimeNs> parse_time_window(const std::string& text) {
  const std::size_t colon = text.find(':');
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("--window '{}': {}; give START:END in seconds of the step, e.g. 2.5:3 (either side "
                                  "may be left empty)", text, why));
  };
  if (colon == std::string::npos) throw bad("no ':'");
  const auto seconds = [&](const std::string& item, TimeNs otherwise) {
    if (item.empty()) return otherwise;
    const std::optional<double> value = whole_number(item);
    if (!value || *value < 0 || *value > 1e9) throw bad(fmt::format("'{}' is not a number of seconds from 0 to 1e9", item));
    return static_cast<TimeNs>(std::llround(*value * 1e9));
  };
  const TimeNs start = seconds(text.substr(0, colon), 0);
  const TimeNs end = seconds(text.substr(colon + 1), std::numeric_limits<TimeNs>::max());
  if (end <= start) throw bad("END must be after START");
  return {start, end};
}

ChromeExportCounts write_chrome_trace(const TraceContents& trace, const std::string& source, std::ostream& out,
                                      const ChromeExportFilter& filter) {
  ChromeExportCounts counts;
  const auto wanted = [&](int rank) { return filter.ranks.empty() || filter.ranks.count(rank) > 0; };
  const auto in_window = [&](TimeNs start, TimeNs end) { return end >= filter.start_ns && start <= filter.end_ns; };
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
    if (!wanted(e.rank) || !in_window(e.start_ns, e.end_ns)) continue;
    traced.insert(e.rank);
    threads.insert({e.rank, e.stream});
  }
  for (const MemoryRecord& m : trace.memory) {
    if (!ranks.count(m.rank) || m.time_ns < 0)
      throw InputError(fmt::format("trace file '{}': /memory row of rank {} at {} ns is out of range", source, m.rank,
                                   m.time_ns));
    if (wanted(m.rank) && in_window(m.time_ns, m.time_ns)) traced.insert(m.rank);
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
    if (!wanted(e.rank) || !in_window(e.start_ns, e.end_ns)) continue;
    w.item(R"j({{"ph": "X", "name": "{}", "cat": "{}", "cname": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )j"
           R"j("args": {{"phase": "{}", "layer": {}, "micro_batch": {}, "flops": {}, "bytes": {}}}}})j",
           op_kind_name(static_cast<OpKind>(e.op)), kCategories[e.category], kColours[e.category], pid(e.rank),
           e.stream + 1, Micros{e.start_ns}, Micros{e.end_ns - e.start_ns}, phase_name(static_cast<Phase>(e.phase)),
           e.layer, e.micro_batch, JsonNumber{e.flops}, JsonNumber{e.bytes});
    ++counts.op_events;
  }
  for (const MemoryRecord& m : trace.memory) {
    if (!wanted(m.rank) || !in_window(m.time_ns, m.time_ns)) continue;
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

ChromeExportCounts export_chrome_trace(const std::string& trace_path, const std::string& json_path,
                                       const ChromeExportFilter& filter) {
  const TraceContents trace = read_trace(trace_path);
  TempTextFile out(json_path, "--chrome " + json_path);
  // OUT.json.gz: the same JSON, gzip'd.
  if (json_path.size() > 3 && json_path.compare(json_path.size() - 3, 3, ".gz") == 0) {
    GzipStreambuf gzip(out.stream());
    std::ostream compressed(&gzip);
    const ChromeExportCounts counts = write_chrome_trace(trace, trace_path, compressed, filter);
    gzip.finish();
    out.commit();
    return counts;
  }
  const ChromeExportCounts counts = write_chrome_trace(trace, trace_path, out.stream(), filter);
  out.commit();
  return counts;
}

}  // namespace dtsim

// Hdf5TraceSink: writes a run's trace as one HDF5 file (layout: README "Trace format"). Event and
// memory rows are buffered and appended in blocks to chunked, compressed, extensible datasets;
// the file is built as a temporary created exclusively next to <path> (TempFile: <path>.tmp
// when that name fits) and renamed to <path> by finish(), so a visible trace is always complete. Also holds the layout pieces shared with the reader (hdf5_reader.hpp):
// the in-memory row types and the Summary attribute list (generic helpers: hdf5_util.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/base/safe_write.hpp"
#include "sim/trace/hdf5_util.hpp"
#include "sim/trace/sink.hpp"

namespace dtsim {

namespace trace_h5 {

inline constexpr const char* kFormat = "dtsim-trace";
inline constexpr int kFormatVersion = 2;

// Rows of the string tables as HDF5 sees them (variable-length strings are char pointers).
struct DeviceRow {
  const char* name;
  const char* kind;
  std::int32_t node, gpu_index;
};
struct LinkRow {
  std::int32_t id;
  const char* source;
  const char* target;
  const char* kind;
  double bandwidth_bytes_per_s;
  TimeNs latency_ns;
  double bytes, busy_s;
};

// In-memory compound types of the tables; files store the packed copies and HDF5 converts
// between the two by field name.
Handle event_type();
Handle memory_type();
Handle rank_type();
Handle device_type();
Handle link_type();

// Calls f(name, field) for every Summary field; the names are the /summary attribute names.
template <class S, class F>
void visit_summary(S& s, F&& f) {
  f("step_time_s", s.step_time_s);
  f("tokens_per_s", s.tokens_per_s);
  f("model_tflops_per_gpu", s.model_tflops_per_gpu);
  f("hw_tflops_per_gpu", s.hw_tflops_per_gpu);
  f("mfu", s.mfu);
  f("peak_memory_gib", s.peak_memory_gib);
  f("peak_memory_rank", s.peak_memory_rank);
  f("oom", s.oom);
  f("oom_rank", s.oom_rank);
  f("oom_time_s", s.oom_time_s);
  f("oom_needed_gib", s.oom_needed_gib);
  f("oom_capacity_gib", s.oom_capacity_gib);
  f("num_gpus", s.num_gpus);
  f("events", s.events);
  f("compute", s.compute);
  f("memory_bound", s.memory_bound);
  f("exposed_comm", s.exposed_comm);
  f("bubble", s.bubble);
  f("idle", s.idle);
}

}  // namespace trace_h5

class Hdf5TraceSink final : public TraceSink {
 public:
  explicit Hdf5TraceSink(std::string path);
  ~Hdf5TraceSink() override;  // without finish(): the temporary file is removed
  Hdf5TraceSink(const Hdf5TraceSink&) = delete;
  Hdf5TraceSink& operator=(const Hdf5TraceSink&) = delete;

  void begin(const RunInfo& info) override;
  void event(const EventRecord& record) override;
  void memory(const MemoryRecord& record) override;
  void ranks(const std::vector<RankRecord>& rows) override;
  void topology(const std::vector<DeviceRecord>& devices, const std::vector<LinkRecord>& links) override;
  void summary(const Summary& summary) override;
  void finish() override;
  void abort() override;

  static constexpr std::size_t kBlockRows = 65536;  // rows per append and per chunk

 private:
  void flush_events();
  void flush_memory();

  std::string path_;
  bool finished_ = false;
  std::optional<TempFile> temp_;  // from begin() until finish() or abort()
  // Declared before the datasets so that they are closed first.
  trace_h5::Handle file_;
  trace_h5::Handle event_type_, memory_type_, events_, memory_;
  std::vector<EventRecord> event_rows_;
  std::vector<MemoryRecord> memory_rows_;
  std::vector<RankRecord> ranks_;
  std::vector<DeviceRecord> devices_;
  std::vector<LinkRecord> links_;
  Summary summary_;
};

}  // namespace dtsim

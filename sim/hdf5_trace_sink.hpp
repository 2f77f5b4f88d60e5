// Hdf5TraceSink: writes a run's trace as one HDF5 file (layout: README "Trace format"). Event and
// memory rows are buffered and appended in blocks to chunked, compressed, extensible datasets;
// the file is built as <path>.tmp and renamed to <path> by finish(), so a visible trace is
// always complete. Also holds the layout pieces shared with the reader (hdf5_trace_reader.hpp):
// identifier ownership, error checking, the in-memory row types and the Summary attribute list.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/trace_sink.hpp"

namespace dtsim {

namespace trace_h5 {

inline constexpr const char* kFormat = "dtsim-trace";
inline constexpr int kFormatVersion = 2;

// Owns one HDF5 identifier and closes it with the matching H5?close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  // Closes the identifier (if any); returns the close status.
  herr_t reset() {
    herr_t status = 0;
    if (id_ >= 0) status = close_(id_);
    id_ = -1;
    return status;
  }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

// Throws InputError naming the trace `path`, the failed step `what` and HDF5's innermost error.
[[noreturn]] void fail(const std::string& path, const std::string& what);

// Returns `value` (an HDF5 identifier, status or count) unless it is negative, a failure.
template <class T>
T check(T value, const std::string& path, const std::string& what) {
  if (value < 0) fail(path, what);
  return value;
}

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
Handle string_type();  // variable-length UTF-8
Handle event_type();
Handle memory_type();
Handle rank_type();
Handle device_type();
Handle link_type();

// The HDF5 native type of a Summary field (bool is stored as uint8).
template <class T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else {
    static_assert(std::is_same_v<T, std::uint8_t>);
    return H5T_NATIVE_UINT8;
  }
}

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

  std::string path_, tmp_path_;
  bool created_ = false, finished_ = false;
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

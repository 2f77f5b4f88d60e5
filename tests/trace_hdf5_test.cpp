// Tests of the HDF5 trace: Hdf5TraceSink writes, read_trace reads back every field; the
// <path>.tmp / rename contract; abort and early destruction leave no file; errors name the path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "sim/base/error.hpp"
#include "sim/trace/hdf5_reader.hpp"
#include "sim/trace/hdf5_sink.hpp"

namespace fs = std::filesystem;
using namespace dtsim;

namespace {

// A fresh empty directory under the system temp directory, removed at scope exit.
struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / ("dtsim_trace_test_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

bool same(const EventRecord& a, const EventRecord& b) {
  return a.rank == b.rank && a.stream == b.stream && a.category == b.category && a.phase == b.phase &&
         a.op == b.op && a.layer == b.layer && a.micro_batch == b.micro_batch && a.start_ns == b.start_ns &&
         a.end_ns == b.end_ns && a.flops == b.flops && a.bytes == b.bytes;
}

bool same(const MemoryRecord& a, const MemoryRecord& b) {
  return a.rank == b.rank && a.time_ns == b.time_ns && a.weights == b.weights && a.gradients == b.gradients &&
         a.optimizer == b.optimizer && a.activations == b.activations && a.buffers == b.buffers;
}

bool same(const RankRecord& a, const RankRecord& b) {
  return a.rank == b.rank && a.node == b.node && a.dp == b.dp && a.tp == b.tp && a.pp == b.pp && a.ep == b.ep &&
         a.peak_memory_bytes == b.peak_memory_bytes && a.compute_s == b.compute_s &&
         a.memory_bound_s == b.memory_bound_s && a.exposed_comm_s == b.exposed_comm_s &&
         a.bubble_s == b.bubble_s && a.idle_s == b.idle_s;
}

bool same(const DeviceRecord& a, const DeviceRecord& b) {
  return a.name == b.name && a.kind == b.kind && a.node == b.node && a.gpu_index == b.gpu_index;
}

bool same(const LinkRecord& a, const LinkRecord& b) {
  return a.id == b.id && a.source == b.source && a.target == b.target && a.kind == b.kind &&
         a.bandwidth_bytes_per_s == b.bandwidth_bytes_per_s && a.latency_ns == b.latency_ns &&
         a.bytes == b.bytes && a.busy_s == b.busy_s;
}

// The message of the InputError that f() throws ("" when it throws none).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Index of the first row that differs (or the common size when all match); sizes are checked apart.
template <class Row>
std::size_t first_difference(const std::vector<Row>& a, const std::vector<Row>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (!same(a[i], b[i])) return i;
  }
  return n;
}

template <class Row>
void require_same(const std::vector<Row>& written, const std::vector<Row>& read) {
  REQUIRE(read.size() == written.size());
  REQUIRE(first_difference(written, read) == written.size());
}

}  // namespace

TEST_CASE("HDF5 trace round trip keeps every field", "[trace]") {
  TempDir tmp;
  const std::string path = tmp.file("run.h5");
  const RunInfo info{"model = llama-7b\ntp = 2\nnote = \"ünïcode\"\n", "0.1.0"};

  std::vector<EventRecord> events;
  const std::size_t num_events = 3 * Hdf5TraceSink::kBlockRows + 3392;  // 200000: several chunks
  for (std::size_t i = 0; i < num_events; ++i) {
    const auto n = static_cast<std::int64_t>(i);
    events.push_back({static_cast<std::int32_t>(i % 64), static_cast<std::int8_t>(i % 5),
                      static_cast<std::int8_t>(i % 3), static_cast<std::int8_t>(i % 4),
                      static_cast<std::int16_t>(i % 300), static_cast<std::int32_t>(i % 81) - 1,
                      static_cast<std::int32_t>(i % 17) - 1, n * 1000 + 5'000'000'000'000LL,
                      n * 1000 + 5'000'000'000'777LL, 1.5e12 + 0.25 * n, 3.0e9 / (1 + n)});
  }
  std::vector<MemoryRecord> memory;
  for (int i = 0; i < 70000; ++i) {
    memory.push_back({i % 8, 10LL * i, 1e9 + i, 2e9 + i, 3e9 + i, 0.5 * i, 1.0 / (i + 1)});
  }
  std::vector<RankRecord> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.push_back({r, r / 4, r % 2, r % 4, r / 2, 0, 1e10 + r, 0.1 * r, 0.2, 0.3, 0.4, 0.5 + r});
  }
  const std::vector<DeviceRecord> devices{
      {"node0/gpu0", "gpu", 0, 0}, {"node0/nvswitch", "switch", 0, -1}, {"spine-switch-with-a-name-longer-than-64-"
                                                                         "characters-to-check-nothing-truncates",
                                                                         "switch", -1, -1}};
  const std::vector<LinkRecord> links{{0, "node0/gpu0", "node0/nvswitch", "nvlink", 450e9, 700, 1.25e10, 0.0125},
                                      {1, "node0/nvswitch", "spine", "infiniband", 50e9, 2500, 0, 0}};
  Summary summary;
  summary.step_time_s = 12.5;
  summary.tokens_per_s = 32768.25;
  summary.model_tflops_per_gpu = 180.5;
  summary.hw_tflops_per_gpu = 240.75;
  summary.mfu = 0.4567;
  summary.peak_memory_gib = 71.5;
  summary.peak_memory_rank = 3;
  summary.oom = true;
  summary.oom_rank = 5;
  summary.oom_time_s = 1.75;
  summary.oom_needed_gib = 81.25;
  summary.oom_capacity_gib = 80;
  summary.num_gpus = 8;
  summary.events = 9'000'000'000LL;
  summary.compute = 0.5;
  summary.memory_bound = 0.2;
  summary.exposed_comm = 0.15;
  summary.bubble = 0.1;
  summary.idle = 0.05;

  {
    Hdf5TraceSink sink(path);
    sink.begin(info);
    REQUIRE(fs::exists(path + ".tmp"));
    for (const auto& e : events) sink.event(e);
    for (const auto& m : memory) sink.memory(m);
    sink.ranks(ranks);
    sink.topology(devices, links);
    sink.summary(summary);
    REQUIRE_FALSE(fs::exists(path));
    sink.finish();
  }
  REQUIRE(fs::exists(path));
  REQUIRE_FALSE(fs::exists(path + ".tmp"));

  const TraceContents trace = read_trace(path);
  CHECK(trace.format_version == trace_h5::kFormatVersion);
  CHECK(trace.string_attrs.at("format") == "dtsim-trace");
  CHECK(trace.string_attrs.at("dtsim_version") == "0.1.0");
  CHECK(trace.string_attrs.at("scenario") == info.scenario_text);
  CHECK(trace.string_attrs.at("time_unit") == "ns");
  require_same(events, trace.events);
  require_same(memory, trace.memory);
  require_same(ranks, trace.ranks);
  require_same(devices, trace.devices);
  require_same(links, trace.links);

  const Summary& s = trace.summary;
  CHECK(s.step_time_s == summary.step_time_s);
  CHECK(s.tokens_per_s == summary.tokens_per_s);
  CHECK(s.model_tflops_per_gpu == summary.model_tflops_per_gpu);
  CHECK(s.hw_tflops_per_gpu == summary.hw_tflops_per_gpu);
  CHECK(s.mfu == summary.mfu);
  CHECK(s.peak_memory_gib == summary.peak_memory_gib);
  CHECK(s.peak_memory_rank == summary.peak_memory_rank);
  CHECK(s.oom == summary.oom);
  CHECK(s.oom_rank == summary.oom_rank);
  CHECK(s.oom_time_s == summary.oom_time_s);
  CHECK(s.oom_needed_gib == summary.oom_needed_gib);
  CHECK(s.oom_capacity_gib == summary.oom_capacity_gib);
  CHECK(s.num_gpus == summary.num_gpus);
  CHECK(s.events == summary.events);
  CHECK(s.compute == summary.compute);
  CHECK(s.memory_bound == summary.memory_bound);
  CHECK(s.exposed_comm == summary.exposed_comm);
  CHECK(s.bubble == summary.bubble);
  CHECK(s.idle == summary.idle);
}

TEST_CASE("HDF5 trace with no rows still has every table", "[trace]") {
  TempDir tmp;
  const std::string path = tmp.file("empty.h5");
  Hdf5TraceSink sink(path);
  sink.begin(RunInfo{"", "0.1.0"});
  sink.finish();
  const TraceContents trace = read_trace(path);
  CHECK(trace.events.empty());
  CHECK(trace.memory.empty());
  CHECK(trace.ranks.empty());
  CHECK(trace.devices.empty());
  CHECK(trace.links.empty());
  CHECK(trace.string_attrs.at("scenario").empty());
  CHECK_FALSE(trace.summary.oom);
  CHECK(trace.summary.oom_rank == -1);
}

TEST_CASE("HDF5 trace abort and early destruction leave no file", "[trace]") {
  TempDir tmp;
  const std::string path = tmp.file("gone.h5");
  const EventRecord event{};
  SECTION("abort") {
    Hdf5TraceSink sink(path);
    sink.begin(RunInfo{"x = 1", "0.1.0"});
    for (std::size_t i = 0; i < Hdf5TraceSink::kBlockRows + 10; ++i) sink.event(event);
    sink.abort();
    CHECK_FALSE(fs::exists(path));
    CHECK_FALSE(fs::exists(path + ".tmp"));
  }
  SECTION("destroyed without finish") {
    {
      Hdf5TraceSink sink(path);
      sink.begin(RunInfo{"x = 1", "0.1.0"});
      sink.event(event);
      REQUIRE(fs::exists(path + ".tmp"));
    }
    CHECK_FALSE(fs::exists(path));
    CHECK_FALSE(fs::exists(path + ".tmp"));
  }
}

TEST_CASE("HDF5 trace errors name the path", "[trace]") {
  TempDir tmp;
  SECTION("writing into a missing directory") {
    const std::string path = tmp.file("no/such/dir/run.h5");
    Hdf5TraceSink sink(path);
    CHECK_THAT(input_error([&] { sink.begin(RunInfo{}); }), Catch::Matchers::Contains(path));
  }
  SECTION("reading a missing file") {
    const std::string path = tmp.file("missing.h5");
    CHECK_THAT(input_error([&] { read_trace(path); }), Catch::Matchers::Contains(path));
  }
  SECTION("reading a file that is not HDF5") {
    const std::string path = tmp.file("text.h5");
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("not hdf5\n", f);
    std::fclose(f);
    CHECK_THAT(input_error([&] { read_trace(path); }), Catch::Matchers::Contains(path));
  }
}

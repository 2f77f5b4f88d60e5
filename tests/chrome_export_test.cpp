// Tests of the Chrome trace-event export: on a hand-built trace, every op is one "X" event with its
// exact microsecond times, colour and thread, every memory row one "C" counter; `dtsim export` of a
// real run parses as JSON with the trace's event count and span; bad input exits 2 naming the file
// and leaves no output.
#include <catch2/catch.hpp>
#include <hdf5.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "sim/base/error.hpp"
#include "sim/trace/chrome_export.hpp"
#include "sim/trace/hdf5_reader.hpp"
#include "workloads/program.hpp"

namespace fs = std::filesystem;
namespace pt = boost::property_tree;
using namespace dtsim;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / ("dtsim_chrome_test_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

struct Outcome {
  int status;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Outcome run_dtsim(const TempDir& tmp, const std::string& args) {
  const std::string cmd = std::string(DTSIM_BINARY) + " " + args + " >" + tmp.file("stdout") + " 2>" + tmp.file("stderr");
  const int raw = std::system(cmd.c_str());
  return Outcome{WEXITSTATUS(raw), slurp(tmp.file("stdout")), slurp(tmp.file("stderr"))};
}

// What the parsed JSON holds: events by phase letter, and the span of the "X" events in µs.
struct Parsed {
  std::map<std::string, int> by_phase;
  double first_us = 1e300, last_us = -1e300;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::vector<pt::ptree> complete;
};

Parsed parse(std::istream& in) {
  pt::ptree root;
  pt::read_json(in, root);
  Parsed p;
  for (const auto& [key, event] : root.get_child("traceEvents")) {
    const std::string ph = event.get<std::string>("ph");
    ++p.by_phase[ph];
    if (ph == "X") {
      p.first_us = std::min(p.first_us, event.get<double>("ts"));
      p.last_us = std::max(p.last_us, event.get<double>("ts") + event.get<double>("dur"));
      p.complete.push_back(event);
    }
    if (ph == "M" && event.get<std::string>("name") == "thread_name")
      p.thread_names[{event.get<int>("pid"), event.get<int>("tid")}] = event.get<std::string>("args.name");
  }
  return p;
}

// Two ranks of a two-stage pipeline: rank 0 computes then all-reduces over TP, rank 1 runs a
// memory-bound kernel; rank 0 has two memory rows.
TraceContents small_trace() {
  TraceContents t;
  t.format_version = 2;
  t.string_attrs["dtsim_version"] = "test";
  t.ranks = {RankRecord{0, 0, 0, 0, 0, 0}, RankRecord{1, 0, 0, 0, 1, 0}};
  t.events = {EventRecord{0, 0, 0, 0, static_cast<std::int16_t>(OpKind::qkv_proj), 2, 0, 1000, 2500, 1e9, 2e6},
              EventRecord{0, 1, 2, 1, static_cast<std::int16_t>(OpKind::tp_all_reduce), 2, 0, 2000, 7001, 0, 4e6},
              EventRecord{1, 0, 1, 0, static_cast<std::int16_t>(OpKind::softmax), 7, 1, 500, 1500, 1e6, 8e6}};
  t.memory = {MemoryRecord{0, 0, 1073741824.0, 0, 0, 0, 0}, MemoryRecord{0, 1000, 1073741824.0, 0, 0, 536870912.0, 0}};
  t.summary.step_time_s = 7.001e-6;
  return t;
}

// An HDF5 file that says it is a dtsim trace of another format_version.
void write_wrong_version(const std::string& path) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t text = H5Tcopy(H5T_C_S1);
  H5Tset_size(text, 11);
  const hid_t format = H5Acreate2(file, "format", text, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(format, text, "dtsim-trace");
  const int one = 1;
  const hid_t version = H5Acreate2(file, "format_version", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(version, H5T_NATIVE_INT, &one);
  H5Aclose(version);
  H5Aclose(format);
  H5Tclose(text);
  H5Sclose(scalar);
  H5Fclose(file);
}

}  // namespace

TEST_CASE("Chrome export writes one complete event per op and one counter per memory row", "[export]") {
  const TraceContents t = small_trace();
  std::stringstream json;
  const ChromeExportCounts counts = write_chrome_trace(t, "small.h5", json);
  CHECK(counts.op_events == 3);
  CHECK(counts.counter_events == 2);
  // Two ranks (name + sort index each), three (rank, stream) threads (name + sort index each).
  CHECK(counts.metadata_events == 2 * 2 + 3 * 2);
  const Parsed p = parse(json);
  CHECK(p.by_phase.at("X") == 3);
  CHECK(p.by_phase.at("C") == 2);
  CHECK(p.by_phase.at("M") == 10);
  // Span: the earliest start (rank 1 at 500 ns) to the latest end (rank 0's all-reduce at 7001 ns).
  CHECK(p.first_us == Approx(0.5).margin(1e-9));
  CHECK(p.last_us == Approx(7.001).margin(1e-9));
  const pt::ptree& reduce = p.complete[1];
  CHECK(reduce.get<std::string>("name") == "tp_all_reduce");
  CHECK(reduce.get<std::string>("cat") == "communication");
  CHECK(reduce.get<std::string>("cname") == "rail_load");
  CHECK(reduce.get<std::string>("ts") == "2.000");
  CHECK(reduce.get<std::string>("dur") == "5.001");
  CHECK(reduce.get<std::string>("args.phase") == "backward");
  CHECK(p.thread_names.at({reduce.get<int>("pid"), reduce.get<int>("tid")}) == "tp");
  CHECK(p.complete[0].get<std::string>("cname") == "thread_state_running");
  CHECK(p.complete[2].get<std::string>("cat") == "memory");
  CHECK(p.complete[2].get<std::string>("name") == "softmax");
  CHECK(p.thread_names.at({2, 1}) == "compute");
}

TEST_CASE("Chrome export rejects an event with an unknown stream naming the file", "[export]") {
  TraceContents t = small_trace();
  t.events[1].stream = 9;
  std::stringstream json;
  try {
    write_chrome_trace(t, "broken.h5", json);
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("broken.h5") && Catch::Contains("stream 9"));
  }
}

TEST_CASE("dtsim export of a run parses with the trace's event count and span", "[export][cli]") {
  TempDir tmp;
  const std::string trace = tmp.file("tiny.h5"), json = tmp.file("tiny.json");
  REQUIRE(run_dtsim(tmp, "run " + std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini "
                             "--output.trace_detail=all --output " + trace).status == 0);
  const Outcome o = run_dtsim(tmp, "export " + trace + " --chrome " + json);
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK_FALSE(fs::exists(json + ".tmp"));
  const TraceContents t = read_trace(trace);
  std::ifstream in(json);
  const Parsed p = parse(in);
  CHECK(p.by_phase.at("X") == static_cast<int>(t.events.size()));
  CHECK(p.by_phase.at("C") == static_cast<int>(t.memory.size()));
  CHECK_THAT(o.out, Catch::Contains(std::to_string(t.events.size()) + " op events"));
  TimeNs first = t.events.front().start_ns, last = t.events.front().end_ns;
  for (const EventRecord& e : t.events) {
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
  }
  CHECK(p.first_us == Approx(first / 1e3).margin(1e-6));
  CHECK(p.last_us == Approx(last / 1e3).margin(1e-6));
  // The step ends with the last op of some rank; every rank is traced here.
  CHECK(last / 1e9 == Approx(t.summary.step_time_s).epsilon(1e-12));
}

TEST_CASE("dtsim export bad input exits 2 naming the file and writes nothing", "[export][cli]") {
  TempDir tmp;
  const std::string json = tmp.file("out.json");
  std::string args, needle;
  SECTION("missing trace") {
    args = "export " + tmp.file("missing.h5") + " --chrome " + json;
    needle = tmp.file("missing.h5");
  }
  SECTION("not a trace") {
    std::ofstream(tmp.file("text.h5")) << "not hdf5\n";
    args = "export " + tmp.file("text.h5") + " --chrome " + json;
    needle = tmp.file("text.h5");
  }
  SECTION("another format version") {
    write_wrong_version(tmp.file("old.h5"));
    args = "export " + tmp.file("old.h5") + " --chrome " + json;
    needle = "format_version 1 is not supported";
  }
  SECTION("no --chrome") {
    args = "export " + tmp.file("missing.h5");
    needle = "--chrome OUT.json is required";
  }
  SECTION("no trace") {
    args = "export --chrome " + json;
    needle = "give the trace file";
  }
  SECTION("unwritable output") {
    REQUIRE(run_dtsim(tmp, "run " + std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini --output " +
                               tmp.file("tiny.h5")).status == 0);
    const std::string bad = tmp.file("no/such/dir/out.json");
    args = "export " + tmp.file("tiny.h5") + " --chrome " + bad;
    needle = bad;
  }
  const Outcome o = run_dtsim(tmp, args);
  INFO(args << "\nstderr: " << o.err);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains(needle));
  CHECK_FALSE(fs::exists(json));
  CHECK_FALSE(fs::exists(json + ".tmp"));
}

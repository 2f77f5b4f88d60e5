// Hardening, second round (issue 34): crafted HDF5 files, planted symlinks at temporary names,
// names near the 255-byte limit, JSON escaping and non-finite numbers, hostile DOT files, claims
// CSV numbers, a folder as the sweep journal and a rank of INT_MAX. Each case runs the dtsim
// binary and checks exit status 2, the message, that no output file is left and that the file a
// planted link points to is untouched.
#include <hdf5.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "sim/base/error.hpp"
#include "sim/base/json.hpp"
#include "sim/base/safe_write.hpp"
#include "sim/trace/hdf5_sink.hpp"
#include "tests/cli_scratch.hpp"
#include "topologies/dot_io.hpp"

namespace fs = std::filesystem;
using dtsim::test::file;
using dtsim::test::Outcome;
using dtsim::test::run_dtsim;
using dtsim::test::slurp;

namespace {

const std::string kTiny = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini";
const std::string kTinySweep = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-sweep.ini";

// A real trace and a real sweep table, made once.
const std::string& real_trace() {
  static const std::string path = [] {
    const std::string p = file("real-trace.h5");
    REQUIRE(run_dtsim("run " + kTiny + " --output " + p).status == 0);
    return p;
  }();
  return path;
}
const std::string& real_sweep() {
  static const std::string path = [] {
    const std::string p = file("real-sweep.h5");
    REQUIRE(run_dtsim("sweep " + kTinySweep + " --quiet --output " + p).status == 0);
    return p;
  }();
  return path;
}

// A copy of `source` at `name`, edited with the HDF5 C API.
std::string crafted(const std::string& source, const std::string& name, const std::function<void(hid_t)>& edit) {
  const std::string path = file(name);
  fs::copy_file(source, path, fs::copy_options::overwrite_existing);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(f >= 0);
  edit(f);
  REQUIRE(H5Fclose(f) >= 0);
  return path;
}

// Replaces attribute `name` of object `at` of `f` by an array of `count` values of `type`.
void array_attr(hid_t f, const char* at, const char* name, hid_t type, hsize_t count) {
  const hid_t obj = H5Oopen(f, at, H5P_DEFAULT);
  REQUIRE(H5Adelete(obj, name) >= 0);
  const hid_t space = H5Screate_simple(1, &count, nullptr);
  const hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  if (H5Tis_variable_str(type) > 0) {
    std::vector<const char*> text(count, "dtsim-trace");
    H5Awrite(attr, type, text.data());
  } else {
    std::vector<char> zeros(count * H5Tget_size(type), 0);
    H5Awrite(attr, type, zeros.data());
  }
  H5Aclose(attr);
  H5Sclose(space);
  H5Oclose(obj);
}

herr_t copy_attr(hid_t from, const char* name, const H5A_info_t*, void* to) {
  const hid_t attr = H5Aopen(from, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(attr), space = H5Aget_space(attr);
  std::vector<char> value(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)) * H5Tget_size(type));
  H5Aread(attr, type, value.data());
  const hid_t copy = H5Acreate2(*static_cast<hid_t*>(to), name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(copy, type, value.data());
  H5Aclose(copy);
  if (H5Tis_variable_str(type) > 0) H5Dvlen_reclaim(type, space, H5P_DEFAULT, value.data());  // the strings read
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(attr);
  return 0;
}

// Replaces dataset `name` by an empty chunked one of the same row type and attributes, and 2^40 rows.
void huge_table(hid_t f, const char* name) {
  REQUIRE(H5Lmove(f, name, f, "old", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  const hid_t old = H5Dopen2(f, "old", H5P_DEFAULT);
  const hid_t type = H5Dget_type(old);
  const hsize_t rows = hsize_t{1} << 40, unlimited = H5S_UNLIMITED, chunk = 1024;
  const hid_t space = H5Screate_simple(1, &rows, &unlimited);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, &chunk);
  hid_t d = H5Dcreate2(f, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(d >= 0);
  H5Aiterate2(old, H5_INDEX_NAME, H5_ITER_INC, nullptr, copy_attr, &d);
  H5Dclose(d);
  H5Dclose(old);
  REQUIRE(H5Ldelete(f, "old", H5P_DEFAULT) >= 0);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Tclose(type);
}

hid_t vlen_string() {
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  return t;
}

// Checks a refused command: status 2, the message, and no file at `output`.
void refused(const Outcome& o, const std::string& message, const std::string& output) {
  INFO(o.err);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains(message));
  CHECK_FALSE(fs::exists(fs::symlink_status(output)));
}

// Plants `target`.tmp as a link to a victim file and returns the victim's path.
std::string plant_link(const std::string& target) {
  const std::string victim = target + ".victim";
  std::ofstream(victim) << "victim\n";
  fs::remove(target + ".tmp");
  fs::create_symlink(victim, target + ".tmp");
  return victim;
}

// The victim is untouched, and the output is a regular file (not a link).
void safe(const std::string& victim, const std::string& output) {
  CHECK(slurp(victim) == "victim\n");
  CHECK(fs::is_regular_file(fs::symlink_status(output)));
}

}  // namespace

TEST_CASE("crafted HDF5 attributes of the wrong shape or class are refused by export and merge", "[hardening][cli]") {
  const std::string json = file("crafted.json"), merged = file("crafted-merged.h5");
  const std::string int64 = crafted(real_trace(), "fv64.h5", [](hid_t f) {
    array_attr(f, "/", "format_version", H5T_NATIVE_INT32, 64);
  });
  refused(run_dtsim("export " + int64 + " --chrome " + json),
          "attribute 'format_version' of '/' holds 64 values: expected one", json);
  const std::string strings = crafted(real_trace(), "fmt64.h5", [](hid_t f) {
    const hid_t t = vlen_string();
    array_attr(f, "/", "format", t, 64);
    H5Tclose(t);
  });
  refused(run_dtsim("export " + strings + " --chrome " + json), "attribute 'format' of '/' holds 64 values", json);
  const std::string summary = crafted(real_trace(), "summary4096.h5", [](hid_t f) {
    array_attr(f, "/summary", "step_time_s", H5T_NATIVE_DOUBLE, 4096);
  });
  refused(run_dtsim("export " + summary + " --chrome " + json),
          "attribute 'step_time_s' of '/summary' holds 4096 values: expected one", json);
  const std::string version_text = crafted(real_sweep(), "sweep-fv-string.h5", [](hid_t f) {
    const hid_t t = vlen_string();
    array_attr(f, "/", "format_version", t, 1);
    H5Tclose(t);
  });
  refused(run_dtsim("merge " + merged + " " + version_text),
          "attribute 'format_version' of '/' is of class string: expected an integer", merged);
  const std::string total = crafted(real_sweep(), "total512.h5", [](hid_t f) {
    array_attr(f, "/sweep", "total_points", H5T_NATIVE_INT64, 512);
  });
  refused(run_dtsim("merge " + merged + " " + total),
          "attribute 'total_points' of '/sweep' holds 512 values: expected one", merged);
  const std::string sweep_strings = crafted(real_sweep(), "sweep-fmt64.h5", [](hid_t f) {
    const hid_t t = vlen_string();
    array_attr(f, "/", "format", t, 64);
    H5Tclose(t);
  });
  refused(run_dtsim("merge " + merged + " " + sweep_strings), "attribute 'format' of '/' holds 64 values", merged);
}

TEST_CASE("HDF5 tables declaring 2^40 rows are refused before any allocation", "[hardening][cli]") {
  const std::string json = file("huge.json"), merged = file("huge-merged.h5");
  const std::string events = crafted(real_trace(), "events40.h5", [](hid_t f) { huge_table(f, "events"); });
  refused(run_dtsim("export " + events + " --chrome " + json), "dataset '/events': has 1099511627776 rows: at most",
          json);
  const std::string sweep = crafted(real_sweep(), "sweep40.h5", [](hid_t f) { huge_table(f, "sweep"); });
  refused(run_dtsim("merge " + merged + " " + sweep), "dataset '/sweep': has 1099511627776 rows", merged);
  // Within the row limit but far more rows than the file stores: a crafted extent.
  const std::string sparse = crafted(real_trace(), "sparse.h5", [](hid_t f) {
    const hid_t d = H5Dopen2(f, "memory", H5P_DEFAULT);
    const hsize_t rows = hsize_t{1} << 30;
    REQUIRE(H5Dset_extent(d, &rows) >= 0);
    H5Dclose(d);
  });
  refused(run_dtsim("export " + sparse + " --chrome " + json), "dataset '/memory': declares 1073741824 rows", json);
}

TEST_CASE("a flipped bit in a trace's global heap is refused, not read past", "[hardening][cli]") {
  std::string bytes = slurp(real_trace());
  const std::size_t heap = bytes.find("GCOL");
  REQUIRE(heap != std::string::npos);
  bytes[heap + 16 + 8 + 3] ^= 0x10;  // the size of the collection's first object
  const std::string flipped = file("flipped.h5"), json = file("flipped.json");
  std::ofstream(flipped, std::ios::binary) << bytes;
  refused(run_dtsim("export " + flipped + " --chrome " + json), "damaged: the global heap at byte", json);
  const std::string merged = file("flipped-merged.h5");
  refused(run_dtsim("merge " + merged + " " + flipped), "damaged: the global heap", merged);
}

TEST_CASE("a planted link at OUT.tmp is never followed by any writer", "[hardening][cli]") {
  SECTION("run --output") {
    const std::string out = file("link-run.h5"), victim = plant_link(out);
    REQUIRE(run_dtsim("run " + kTiny + " --output " + out).status == 0);
    safe(victim, out);
    CHECK_FALSE(fs::exists(fs::symlink_status(out + ".tmp")));
  }
  SECTION("export --chrome") {
    const std::string out = file("link.json"), victim = plant_link(out);
    REQUIRE(run_dtsim("export " + real_trace() + " --chrome " + out).status == 0);
    safe(victim, out);
  }
  SECTION("sweep --output and --csv, and the journal") {
    const std::string out = file("link-sweep.h5"), csv = file("link-sweep.csv");
    const std::string victim = plant_link(out), csv_victim = plant_link(csv), journal_victim = plant_link(out + ".progress");
    REQUIRE(run_dtsim("sweep " + kTinySweep + " --quiet --output " + out + " --csv " + csv).status == 0);
    safe(victim, out);
    safe(csv_victim, csv);
    CHECK(slurp(journal_victim) == "victim\n");
  }
  SECTION("merge") {
    const std::string out = file("link-merged.h5"), victim = plant_link(out);
    REQUIRE(run_dtsim("merge " + out + " " + real_sweep()).status == 0);
    safe(victim, out);
  }
  SECTION("advise --output") {
    const std::string out = file("link-advise.h5"), victim = plant_link(out);
    const Outcome o = run_dtsim("advise --model gpt-1.7b --gpus A100-SXM4-80GB --max-gpus 8 --tokens 1e9 --output " + out);
    INFO(o.err);
    REQUIRE(o.status == 0);
    safe(victim, out);
  }
  SECTION("the DOT writer's path (write_file_safely)") {
    const std::string out = file("link.dot"), victim = plant_link(out);
    dtsim::write_file_safely(out, "--dot " + out, [](std::ostream& s) { s << "digraph G {}\n"; });
    safe(victim, out);
    CHECK(slurp(out) == "digraph G {}\n");
  }
  SECTION("a journal that is itself a link is refused on --resume, replaced otherwise") {
    const std::string out = file("link-journal.h5"), victim = out + ".victim";
    std::ofstream(victim) << "victim\n";
    fs::remove(out + ".progress");
    fs::create_symlink(victim, out + ".progress");
    refused(run_dtsim("sweep " + kTinySweep + " --quiet --output " + out + " --resume"),
            "progress file '" + out + ".progress': not a regular file (a symbolic link)", out);
    REQUIRE(run_dtsim("sweep " + kTinySweep + " --quiet --output " + out).status == 0);
    CHECK(slurp(victim) == "victim\n");
  }
}

TEST_CASE("an output name near the 255-byte limit is written through a short temporary", "[hardening][cli]") {
  const std::string name = std::string(252, 'r') + ".h5";  // 255 bytes: NAME.tmp would be 259
  fs::create_directories(file("long"));
  const std::string out = file("long/" + name);
  const Outcome o = run_dtsim("run " + kTiny + " --output " + out);
  INFO(o.err);
  CHECK(o.status == 0);
  CHECK(fs::is_regular_file(out));
  CHECK(std::distance(fs::directory_iterator(file("long")), fs::directory_iterator()) == 1);  // no temporary left
}

TEST_CASE("a folder named OUT.h5.progress is refused with --resume and without", "[hardening][cli]") {
  const std::string out = file("journal-folder.h5");
  fs::create_directories(out + ".progress");
  refused(run_dtsim("sweep " + kTinySweep + " --quiet --output " + out + " --resume"),
          "progress file '" + out + ".progress': not a regular file (a folder)", out);
  refused(run_dtsim("sweep " + kTinySweep + " --quiet --output " + out), out + ".progress", out);
  CHECK(fs::is_directory(out + ".progress"));
}

TEST_CASE("hostile DOT files are refused: node -1, no node, deep subgraphs, unquoted 1e30", "[hardening][cli]") {
  const std::string out = file("dot-run.h5");
  const std::string good = "digraph G {\n\"g0\" [\"node\"=0, kind=gpu];\n\"g1\" [\"node\"=0, kind=gpu];\n"
                           "\"g0\"->\"g1\" [bandwidth_GBps=300, kind=nvlink3, latency_ns=300];\n"
                           "\"g1\"->\"g0\" [bandwidth_GBps=300, kind=nvlink3, latency_ns=300];\n}\n";
  const auto dot = [&](const std::string& name, const std::string& text) {
    std::ofstream(file(name)) << text;
    return run_dtsim("run " + kTiny + " --parallel.tp=1 --parallel.pp=1 --parallel.dp=2 --cluster.topology_file=" +
                     file(name) + " --output " + out);
  };
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  refused(dot("neg.dot", edit("\"g1\" [\"node\"=0", "\"g1\" [\"node\"=-1")),
          "vertex 'g1' node = '-1': must be an integer from 0 to 1048576 for a GPU", out);
  refused(dot("missing.dot", edit("\"g1\" [\"node\"=0, ", "\"g1\" [")),
          "vertex 'g1': missing attribute \"node\"", out);
  refused(dot("bandwidth.dot", edit("bandwidth_GBps=300", "bandwidth_GBps=1e30")),
          "bandwidth_GBps = 1e30: must be between 0.001 and 1000000", out);
  refused(dot("latency.dot", edit("latency_ns=300", "latency_ns=1e300")), "latency_ns = 1e300: must be between 0 and",
          out);
  std::string deep = "digraph G {";
  for (int i = 0; i < 10000; ++i) deep += "subgraph {";
  deep += std::string(10000, '}') + "}";
  refused(dot("deep.dot", deep), "braces (subgraphs) nested more than 64 deep", out);
  REQUIRE(dot("exponent.dot", edit("bandwidth_GBps=300", "bandwidth_GBps=3e2")).status == 0);
}

TEST_CASE("a DOT machine whose GPUs have no node reads but is refused for simulation", "[hardening]") {
  const dtsim::ClusterGraph g = dtsim::read_dot_text(
      "digraph G { z [kind=gpu]; a [kind=gpu]; z -> a [kind=nvlink_bridge bandwidth_GBps=56.25]; }", "m.dot");
  CHECK_THROWS_WITH(dtsim::require_gpu_nodes(g, "m.dot"),
                    Catch::Contains("m.dot: vertex 'z': missing attribute \"node\""));
}

TEST_CASE("dtsim run refuses a DOT machine whose GPUs have no node, and topology --dot never follows a planted link",
          "[hardening][cli]") {
  const std::string dot = file("nodeless.dot"), scenario = file("nodeless.ini");
  std::ofstream(dot) << "digraph G { z [kind=gpu]; a [kind=gpu]; z -> a [kind=nvlink_bridge bandwidth_GBps=56.25]; "
                        "a -> z [kind=nvlink_bridge bandwidth_GBps=56.25]; }\n";
  std::ofstream(scenario) << "[model]\nname = gpt2-xl\n[cluster]\ntopology_file = " << dot << "\n";
  const Outcome run = run_dtsim("run " + scenario);
  CHECK(run.status == 2);
  CHECK_THAT(run.err, Catch::Contains(dot + ": vertex 'z': missing attribute \"node\""));
  const std::string out = file("planted.dot"), victim = plant_link(out);
  REQUIRE(run_dtsim("topology --dot " + out).status == 0);
  safe(victim, out);
}

TEST_CASE("claims CSV numbers out of range, negative or zero and unknown cards are refused", "[hardening][cli]") {
  const std::string header = "model,params_B,claimed_vram,claimed_gpu,notes,dtsim_model,mode,dtsim_gpu,"
                             "claimed_gpu_count,dtsim_note\n";
  const auto claims = [&](const std::string& name, const std::string& vram, const std::string& card) {
    std::ofstream(file(name)) << header << "Llama,8," << vram << ",A100,,llama3-8b,inference," << card << ",1,\n";
    return run_dtsim("fit --seed-table --claims " + file(name));
  };
  for (const std::string& huge : {std::string("1e999 GB"), std::string(400, '9') + " GB"}) {
    const Outcome o = claims("huge.csv", huge, "A100");
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains("row 2 claimed_vram = '" + huge + "': must be a number from 0.001 to"));
  }
  const Outcome negative = claims("negative.csv", "-5 GB", "A100");
  CHECK(negative.status == 2);
  CHECK_THAT(negative.err, Catch::Contains("claimed_vram = '-5 GB': must be a number from 0.001"));
  const Outcome zero = claims("zero.csv", "0 GB", "A100");
  CHECK(zero.status == 2);
  CHECK_THAT(zero.err, Catch::Contains("claimed_vram = '0 GB': must be a number from 0.001"));
  const Outcome card = claims("card.csv", "16 GB", "RTX 9090");
  CHECK(card.status == 2);
  CHECK_THAT(card.err, Catch::Contains("row 2 dtsim_gpu: unknown GPU 'RTX 9090' (did you mean"));
  CHECK(claims("fine.csv", "16 GB", "A100").status == 0);
}

TEST_CASE("validate --json escapes run_id and source_id", "[hardening][cli]") {
  std::ifstream in(std::string(DTSIM_SOURCE_DIR) + "/tests/validation/published_runs.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::size_t first_comma = row.find(','), second_comma = row.find(',', first_comma + 1);
  // run_id a"b\c<newline>d, source_id X"Y: quoted CSV fields.
  row = "\"a\"\"b\\c\nd\",\"X\"\"Y\"" + row.substr(second_comma);
  std::ofstream(file("escape.csv")) << header << "\n" << row << "\n";
  const Outcome o = run_dtsim("validate " + file("escape.csv") + " --json");
  INFO(o.err);
  CHECK(o.out.find("\"run_id\": \"a\\\"b\\\\c\\nd\"") != std::string::npos);
  CHECK(o.out.find("\"source_id\": \"X\\\"Y\"") != std::string::npos);
  CHECK(o.out.find('\n') == o.out.size() - 1);  // one line: the newline inside is escaped
}

TEST_CASE("the JSON writer escapes control characters and writes non-finite numbers as null", "[hardening]") {
  CHECK(dtsim::json_string("q\"b\\n\n\t\x01") == "\"q\\\"b\\\\n\\n\\u0009\\u0001\"");
  CHECK(fmt::format("{}", dtsim::JsonNumber{std::nan("")}) == "null");
  CHECK(fmt::format("{:.6f}", dtsim::JsonNumber{-HUGE_VAL}) == "null");
  CHECK(fmt::format("{}", dtsim::JsonNumber{1e-320}) == fmt::format("{}", 1e-320));
  CHECK(fmt::format("{:.6f}", dtsim::JsonNumber{0.5}) == "0.500000");
}

TEST_CASE("export of rank INT_MAX and NaN values writes pid 2147483648 and null", "[hardening][cli]") {
  const std::string trace = file("intmax.h5"), json = file("intmax.json");
  {
    dtsim::Hdf5TraceSink sink(trace);
    sink.begin(dtsim::RunInfo{"", "0.1.0"});
    sink.event(dtsim::EventRecord{INT_MAX, 0, 0, 0, 0, 0, 0, 0, 10, std::nan(""), HUGE_VAL});
    sink.ranks({dtsim::RankRecord{INT_MAX, 0, 0, 0, 0, 0}});
    dtsim::Summary summary;
    summary.step_time_s = std::nan("");
    sink.summary(summary);
    sink.finish();
  }
  const Outcome o = run_dtsim("export " + trace + " --chrome " + json);
  INFO(o.err);
  REQUIRE(o.status == 0);
  const std::string text = slurp(json);
  CHECK(text.find("\"pid\": 2147483648") != std::string::npos);
  CHECK(text.find("-2147483648") == std::string::npos);
  CHECK(text.find("\"flops\": null, \"bytes\": null") != std::string::npos);
  CHECK(text.find("\"step_time_s\": null") != std::string::npos);
  CHECK(text.find("nan") == std::string::npos);
  CHECK(text.find("inf") == std::string::npos);
}

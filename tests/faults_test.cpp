// Faults during `dtsim run` and `dtsim sweep`: a run or sweep killed (SIGINT, SIGKILL) leaves no
// file at the output path, a stale .tmp does not block the next run, a sweep interrupted and
// rerun with --resume skips its finished points and writes exactly the uninterrupted table, the
// journal of another sweep is refused, a full disk (a file-size limit: writes fail as on a full
// disk) and an unwritable output path give a clear message and no file.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "sim/sweep/table.hpp"
#include "tests/cli_scratch.hpp"

namespace fs = std::filesystem;
using namespace dtsim;
using namespace dtsim::test;

namespace {

std::size_t lines_of(const std::string& path) {
  const std::string text = slurp(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Starts dtsim ARGS, waits until `ready()` holds (polling), sends `signal` and reaps it. Returns
// whether it was still running then (it died of the signal).
template <class Ready>
bool interrupt(const std::string& args, int signal, Ready ready) {
  const std::string cmd = std::string("exec ") + DTSIM_BINARY + " " + args + " >" + file("bg-out") + " 2>" + file("bg-err");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (!ready()) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;  // ended before it was interrupted
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, signal);
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == signal;
}

// Eight points of about a third of a second each (1024 micro-batches at micro-batch 1).
const std::string kSlowSweep = std::string("sweep ") + DTSIM_SOURCE_DIR +
                               "/scenarios/tests/tiny-pipeline.ini --training.global_batch=2048 "
                               "--sweep training.micro_batch=1,2,4,8 --sweep parallel.zero_stage=0,1 --jobs 1 --quiet";

void check_resume_after(int signal) {
  const Outcome ref = run_dtsim(kSlowSweep + " --output " + file("ref.h5") + " --csv " + file("ref.csv"));
  REQUIRE(ref.status == 0);
  const std::string out = file("cut.h5"), csv = file("cut.csv"), journal = out + ".progress";
  for (const std::string& p : {out, csv, journal}) fs::remove(p);
  // Interrupted once the journal holds its header and at least one finished point.
  REQUIRE(interrupt(kSlowSweep + " --output " + out + " --csv " + csv, signal, [&] { return lines_of(journal) >= 2; }));
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(csv));
  REQUIRE(fs::exists(journal));
  const Outcome resumed = run_dtsim(kSlowSweep + " --output " + out + " --csv " + csv + " --resume");
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_FALSE(fs::exists(journal));
  CHECK(slurp(csv) == slurp(file("ref.csv")));
  CHECK(sweep_csv(read_sweep_table(out)) == slurp(file("ref.csv")));
}

}  // namespace

TEST_CASE("a sweep killed midway and resumed gives the uninterrupted table", "[faults][sweep]") {
  check_resume_after(SIGKILL);
}

TEST_CASE("a sweep stopped by Ctrl-C and resumed gives the uninterrupted table", "[faults][sweep]") {
  check_resume_after(SIGINT);
}

TEST_CASE("resume says how many points it skips and refuses the journal of another sweep", "[faults][sweep]") {
  const std::string sweep = std::string("sweep ") + DTSIM_SOURCE_DIR + "/scenarios/tests/tiny-sweep.ini --jobs 1";
  const std::string out = file("other.h5");
  std::ofstream(out + ".progress") << "dtsim-sweep-progress 1\t0123456789abcdef\n";
  const Outcome o = run_dtsim(sweep + " --output " + out + " --resume");
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains(out + ".progress' is not the progress of this sweep"));
  CHECK_FALSE(fs::exists(out));
  // Without --resume the stale journal is replaced and the sweep runs whole.
  REQUIRE(run_dtsim(sweep + " --output " + out).status == 0);
  CHECK_FALSE(fs::exists(out + ".progress"));
  CHECK(read_sweep_table(out).rows.size() == 6);
  const Outcome none = run_dtsim(sweep + " --resume");
  CHECK(none.status == 2);
  CHECK_THAT(none.err, Catch::Contains("--resume needs --output or --csv"));
  // A journal killed before its header was complete holds nothing: the sweep runs whole.
  std::ofstream(out + ".progress") << "dtsim-sweep-pro";
  const Outcome fresh = run_dtsim(sweep + " --output " + out + " --resume");
  CHECK(fresh.status == 0);
  CHECK_THAT(fresh.err, Catch::Contains("0 of 6 points already done"));
}

TEST_CASE("a run interrupted while writing its trace leaves no trace and a stale tmp does not block the next",
          "[faults][cli]") {
  const std::string trace = file("bloom.h5");
  for (int signal : {SIGINT, SIGKILL}) {
    INFO("signal " << signal);
    // The default scenario (BLOOM-176B, 384 GPUs) writes its trace for a few seconds.
    REQUIRE(interrupt("run --output " + trace, signal, [&] { return fs::exists(trace + ".tmp"); }));
    CHECK_FALSE(fs::exists(trace));
  }
  const Outcome o = run_dtsim(std::string("run ") + DTSIM_SOURCE_DIR + "/scenarios/tests/tiny-pipeline.ini --output " + trace);
  CHECK(o.status == 0);
  CHECK(fs::exists(trace));
  CHECK_FALSE(fs::exists(trace + ".tmp"));
}

TEST_CASE("a full disk while writing gives a clear error and no file", "[faults][cli]") {
  // A 32 KiB file-size limit with SIGXFSZ ignored: writes past it fail with EFBIG, as they fail
  // with ENOSPC on a full disk.
  const std::string limit = "ulimit -f 64; trap '' XFSZ;";  // 64 blocks of 512 bytes (POSIX sh)
  const std::string tiny = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini";
  const std::string trace = file("full.h5");
  const Outcome run = run_dtsim("run " + tiny + " --output " + trace, limit);
  CHECK(run.status == 2);
  CHECK_THAT(run.err, Catch::Contains("HDF5 file '" + trace + "'"));
  CHECK_THAT(run.err, Catch::Contains("File too large"));
  CHECK_FALSE(fs::exists(trace));
  CHECK_FALSE(fs::exists(trace + ".tmp"));
  const std::string sweep = std::string("sweep ") + DTSIM_SOURCE_DIR + "/scenarios/tests/tiny-sweep.ini --quiet";
  const std::string table = file("full-sweep.h5");
  const Outcome sw = run_dtsim(sweep + " --sweep parallel.dp=1:400:1 --output " + table, limit);
  CHECK(sw.status == 2);
  CHECK_THAT(sw.err, Catch::Contains(table));
  CHECK_THAT(sw.err, Catch::Contains("File too large"));
  CHECK_FALSE(fs::exists(table));
  CHECK_FALSE(fs::exists(table + ".tmp"));
  const std::string dot = file("full.dot");  // the default cluster: 384 GPUs, about 100 KB of DOT
  const Outcome topology = run_dtsim("topology --dot " + dot, limit);
  CHECK(topology.status == 2);
  CHECK_THAT(topology.err, Catch::Contains("--dot " + dot + ": write failed"));
  CHECK_FALSE(fs::exists(dot));
  CHECK_FALSE(fs::exists(dot + ".tmp"));
  REQUIRE(run_dtsim("run " + tiny + " --output " + trace).status == 0);
  const std::string json = file("full.json");
  const Outcome chrome = run_dtsim("export " + trace + " --chrome " + json, limit);
  CHECK(chrome.status == 2);
  CHECK_THAT(chrome.err, Catch::Contains(json));
  CHECK_FALSE(fs::exists(json));
  CHECK_FALSE(fs::exists(json + ".tmp"));
}

TEST_CASE("an unwritable output path gives a clear error before any work", "[faults][cli]") {
  const std::string tiny = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini";
  std::ofstream(file("plain")) << "a file, not a folder\n";
  const std::string inside_file = file("plain") + "/run.h5";
  const Outcome run = run_dtsim("run " + tiny + " --output " + inside_file);
  CHECK(run.status == 2);
  CHECK_THAT(run.err, Catch::Contains(inside_file));
  const Outcome sweep = run_dtsim(std::string("sweep ") + DTSIM_SOURCE_DIR + "/scenarios/tests/tiny-sweep.ini --csv " + inside_file);
  CHECK(sweep.status == 2);
  CHECK_THAT(sweep.err, Catch::Contains(inside_file));
  // An existing folder as the output: the rename fails and the temporary file is removed.
  fs::create_directories(file("folder"));
  const Outcome folder = run_dtsim("run " + tiny + " --output " + file("folder"));
  CHECK(folder.status == 2);
  CHECK_THAT(folder.err, Catch::Contains(file("folder")));
  CHECK_FALSE(fs::exists(file("folder") + ".tmp"));
}

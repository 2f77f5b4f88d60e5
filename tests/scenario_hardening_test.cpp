// Hostile scenario inputs (issue 34's cases 3, 4 and 6): degenerate speed and bandwidth factors,
// runaway sizes, thread counts, scenario paths that are not files, and a trace named inside a
// scenario that would overwrite a file that is not a trace. Each exits 2 with a message naming the
// key or file and what is valid, and leaves the files it names untouched.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/cli_scratch.hpp"

using namespace dtsim::test;

namespace {

const std::string kTiny = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini";

void refused(const std::string& args, const std::string& message) {
  const Outcome o = run_dtsim(args);
  INFO(args << "\n" << o.err);
  CHECK(o.status == 2);
  CHECK(o.err.find(message) != std::string::npos);
}

}  // namespace

TEST_CASE("degenerate speed and bandwidth factors are refused with the valid range", "[hardening][cli]") {
  refused("run " + kTiny + " --cluster.slow_gpus=0:1e-13", "factor '1e-13' must be a number from 0.001 to 1000");
  refused("run " + kTiny + " --cluster.degraded_links=node0.gpu0--node0.nvswitch:1e-16",
          "factor '1e-16' must be a number from 0.001 to 1000");
  refused("run " + kTiny + " --cluster.slow_gpus=0:1e9", "must be a number from 0.001 to 1000");
  CHECK(run_dtsim("run " + kTiny + " --cluster.slow_gpus=0:0.001 --json").status == 0);
}

TEST_CASE("a vocabulary smaller than the TP group is refused, in training and in serving", "[hardening][cli]") {
  // Each TP rank holds vocab / tp rows of the embedding and the LM head.
  refused("run " + kTiny + " --model.vocab=1", "parallel.tp = 2: model.vocab = 1 is smaller");
  refused("serve " + std::string(DTSIM_SOURCE_DIR) + "/scenarios/serve/deepseek-v3-fp8-8xh200-mtp.ini --model.vocab=7",
          "parallel.tp = 8: model.vocab = 7 is smaller");
  CHECK(run_dtsim("run " + kTiny + " --model.vocab=2 --json").status == 0);
}

TEST_CASE("runaway sizes and thread counts are refused before any work", "[hardening][cli]") {
  refused("run " + kTiny + " --model.layers=1111000 --parallel.pp=2", "above the limit of 20 million");
  refused("run " + kTiny + " --model.layers=500000", "million ops to simulate");
  refused("run " + kTiny + " --cluster.node_kind=pcie --cluster.gpus_per_pcie_switch=2147483647",
          "cluster.gpus_per_pcie_switch = 2147483647: must be <= 1048576");
  refused("run " + kTiny + " --threads 32769", "--threads 32769: must be from 1 to 1024");
}

TEST_CASE("a sweep range near the 64-bit limit and an advise search beyond the GPU limit stay bounded",
          "[hardening][cli]") {
  // START + STEP passes INT64_MAX: the range holds 3 values (each point then refused by the
  // scenario's own check), not an endless loop.
  const Outcome sweep = run_dtsim("sweep " + kTiny + " --quiet --sweep "
                                  "parallel.dp_bucket_mb=9223372036854775800:9223372036854775807:3 --csv " +
                                  file("huge-axis.csv"));
  INFO(sweep.err);
  CHECK(sweep.out.find("3 points") != std::string::npos);
  refused("sweep " + kTiny + " --sweep parallel.dp=-9223372036854775807:9223372036854775807:1",
          "more than 1000000 values");
  refused("advise --model gpt-1.7b --gpus A100 --max-gpus 2147483647", "--max-gpus = 2147483647: must be from 1 to 1048576");
  refused("advise --model gpt-1.7b --gpus A100 --max-gpus 10000000", "must be from 1 to 1048576");
}

TEST_CASE("a run above the memory budget is refused before any work, with its estimate", "[hardening][cli]") {
  // A million GPUs: about 7 GiB of cluster graph and engine state, refused at once under 4 GiB.
  refused("run " + kTiny + " --cluster.nodes=131072 --parallel.dp=262144 --training.global_batch=524288 "
          "--max-memory 4",
          "simulating 1048576 GPUs and about 0.00036 million ops needs about 7.02 GiB of memory, above the budget "
          "of 4 GiB (--max-memory)");
  refused("run " + kTiny + " --max-memory 0.001", "above the budget of 0.001 GiB (--max-memory)");
  refused("run " + kTiny + " --max-memory -1", "--max-memory -1: must be a number of GiB from 0 to 1000000");
  CHECK(run_dtsim("run " + kTiny + " --max-memory 1 --json").status == 0);
}

TEST_CASE("a scenario path that is not a regular file is refused, not read as the defaults", "[hardening][cli]") {
  refused("run " + scratch().string(), "not a regular file");
  refused("run /dev/zero", "/dev/zero: not a regular file");
  const std::string fifo = file("scenario.fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  refused("run " + fifo, "not a regular file");  // would block forever if it were opened
}

TEST_CASE("a trace named inside a scenario never overwrites a file that is not a trace", "[hardening][cli]") {
  const std::string notes = file("notes.txt"), scenario = file("writes-notes.ini");
  std::ofstream(notes) << "my notes\n";
  std::ofstream(scenario) << slurp(kTiny) << "\n[output]\ntrace = " << notes << "\n";
  refused("run " + scenario + " --json", "names an existing file that is not an HDF5 trace");
  CHECK(slurp(notes) == "my notes\n");
  // Said on the command line, it is the user's choice; a trace of an earlier run is replaced.
  REQUIRE(run_dtsim("run " + scenario + " --output " + notes + " --json").status == 0);
  CHECK(slurp(notes).substr(1, 3) == "HDF");
  CHECK(run_dtsim("run " + scenario + " --json").status == 0);
  // Never over the scenario itself.
  refused("run " + scenario + " --output " + scenario, "would overwrite the scenario file itself");
  CHECK(slurp(scenario).find("[output]") != std::string::npos);
}

TEST_CASE("every input file that is not a regular file is refused, never read until it ends", "[hardening][cli]") {
  const std::string fifo = file("input.fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  refused("validate " + fifo, "not a regular file; give the validation file");
  refused("validate /dev/zero", "/dev/zero: not a regular file");
  refused("fit --seed-table --claims " + fifo, "not a regular file; give the claims file");
  refused("run " + kTiny + " --cluster.topology_file=" + fifo, "not a regular file; give a topology (.dot) file");
}

TEST_CASE("outputs never replace a folder, FIFO or device, nor an input of the same command", "[hardening][cli]") {
  namespace fs = std::filesystem;
  const std::string fifo = file("output.fifo"), folder = file("a-folder"), tiny = file("tiny.ini");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_directories(folder);
  fs::copy_file(kTiny, tiny, fs::copy_options::overwrite_existing);
  refused("topology " + tiny + " --dot " + fifo, "exists and is not a regular file (a FIFO, device or socket)");
  CHECK(fs::is_fifo(fifo));
  refused("topology " + tiny + " --dot " + tiny, "is also an input of this command");
  CHECK(slurp(tiny) == slurp(kTiny));
  const std::string trace = file("t.h5");
  REQUIRE(run_dtsim("run " + tiny + " --output " + trace + " --json").status == 0);
  refused("export " + trace + " --chrome " + trace, "is also an input of this command");
  CHECK(slurp(trace).substr(1, 3) == "HDF");
  refused("export " + trace + " --chrome " + fifo, "not a regular file");
  refused("export " + trace + " --chrome ''", "the output path is empty");
  // Refused before any work: no table, journal or temporary left.
  refused("run " + tiny + " --output " + folder, "exists and is not a regular file (a folder)");
  const std::string sweep = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-sweep.ini", table = file("sw.h5");
  refused("sweep " + sweep + " --output " + table + " --csv " + folder + " --quiet", "(a folder)");
  refused("sweep " + sweep + " --output " + table + " --csv " + table + " --quiet", "the same file as the table");
  CHECK_FALSE(fs::exists(table));
  CHECK_FALSE(fs::exists(table + ".progress"));
  refused("merge " + trace + " " + trace + " " + trace, "is also an input of this command");
  refused("merge " + table + " " + trace + " --csv " + table, "the same file as the table");
}

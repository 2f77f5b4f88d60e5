// End-to-end tests of the dtsim binary: runs, JSON, traces, and every bad input exits 2 with a
// message naming the key or file and leaves no output file.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/hdf5_trace_reader.hpp"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int status;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_cli_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

Outcome run_dtsim(const std::string& args) {
  const fs::path dir = scratch();
  const std::string cmd = std::string(DTSIM_BINARY) + " " + args + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string();
  const int raw = std::system(cmd.c_str());
  return Outcome{WEXITSTATUS(raw), slurp(dir / "out"), slurp(dir / "err")};
}

std::string scenario(const std::string& name) { return std::string(DTSIM_SOURCE_DIR) + "/scenarios/" + name; }

std::string write_file(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p.string();
}

void expect_input_error(const std::string& args, const std::string& needle) {
  const fs::path trace = scratch() / "never.h5";
  fs::remove(trace);
  const Outcome o = run_dtsim(args + " --output " + trace.string());
  INFO(args << "\nstderr: " << o.err);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains(needle));
  CHECK_FALSE(fs::exists(trace));
  CHECK_FALSE(fs::exists(trace.string() + ".tmp"));
}

}  // namespace

TEST_CASE("dtsim run writes a trace and a JSON summary", "[cli]") {
  const fs::path trace = scratch() / "tiny.h5";
  const Outcome o = run_dtsim("run " + scenario("tests/tiny-pipeline.ini") + " --json --output " + trace.string());
  INFO(o.err);
  REQUIRE(o.status == 0);
  for (const char* key : {"step_time_s", "tokens_per_s", "model_tflops_per_gpu", "hw_tflops_per_gpu", "mfu",
                          "peak_memory_gib", "oom", "num_gpus", "events", "compute", "memory_bound",
                          "exposed_comm", "bubble", "idle", "most_loaded_link"})
    CHECK_THAT(o.out, Catch::Contains(std::string("\"") + key + "\":"));
  const dtsim::TraceContents t = dtsim::read_trace(trace.string());
  CHECK(t.summary.num_gpus == 8);
  CHECK(t.ranks.size() == 8);
  CHECK_FALSE(t.events.empty());
  CHECK(t.string_attrs.at("scenario").find("tp = 2") != std::string::npos);
}

TEST_CASE("command-line keys override the scenario file", "[cli]") {
  const Outcome a = run_dtsim("run " + scenario("tests/tiny-pipeline.ini") + " --json");
  const Outcome b = run_dtsim("run " + scenario("tests/tiny-pipeline.ini") + " --json --training.global_batch=32");
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  CHECK(a.out != b.out);
}

TEST_CASE("the workstation scenario that does not fit says so", "[cli]") {
  const Outcome o = run_dtsim("run " + scenario("gpt-neox-20b-2x3090.ini"));
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("OUT OF MEMORY"));
  const Outcome fits = run_dtsim("run " + scenario("gpt2-xl-2x3090.ini") + " --json");
  REQUIRE(fits.status == 0);
  CHECK_THAT(fits.out, Catch::Contains("\"oom\": false"));
}

TEST_CASE("bad input gets one clear message and status 2 and leaves no file", "[cli]") {
  const std::string tiny = scenario("tests/tiny-pipeline.ini");
  expect_input_error("run /no/such/file.ini", "/no/such/file.ini");
  expect_input_error("run " + write_file("unknown.ini", "[model]\nname = gpt-1.7b\nlayerz = 3\n"), "model.layerz");
  expect_input_error("run " + tiny + " --parallel.tp=two", "parallel.tp");
  expect_input_error("run " + tiny + " --parallel.dp=3", "number of GPUs");
  expect_input_error("run " + tiny + " --parallel.tp=3 --parallel.dp=1 --cluster.gpus_per_node=6", "model.heads");
  expect_input_error("run " + tiny + " --cluster.gpu=GTX-9090", "GTX-9090");
  expect_input_error("run " + tiny + " --training.recompute=sometimes", "training.recompute");
  expect_input_error("run " + tiny + " --training.global_batch=2000000000 --training.micro_batch=1", "micro-batches");
  const std::string dot = write_file("split.dot",
                                     "digraph g {\n a [kind=gpu, \"node\"=0];\n b [kind=gpu, \"node\"=0];\n"
                                     " c [kind=nvswitch, \"node\"=0];\n a -> c [kind=nvlink3, bandwidth_GBps=300, latency_ns=500];\n"
                                     " c -> a [kind=nvlink3, bandwidth_GBps=300, latency_ns=500];\n}\n");
  expect_input_error("run " + tiny + " --cluster.topology_file=" + dot + " --parallel.tp=1 --parallel.dp=1", "disconnected");
}

TEST_CASE("dtsim topology writes DOT that dtsim reads back", "[cli]") {
  const fs::path dot = scratch() / "node.dot";
  const Outcome w = run_dtsim("topology " + scenario("tests/tiny-pipeline.ini") + " --dot " + dot.string());
  INFO(w.err);
  REQUIRE(w.status == 0);
  const Outcome a = run_dtsim("run " + scenario("tests/tiny-pipeline.ini") + " --json");
  const Outcome b = run_dtsim("run " + scenario("tests/tiny-pipeline.ini") + " --json --cluster.topology_file=" + dot.string());
  INFO(b.err);
  REQUIRE(b.status == 0);
  CHECK(a.out == b.out);
}

TEST_CASE("help lists every key with its default", "[cli]") {
  const Outcome o = run_dtsim("run --help");
  CHECK(o.status == 0);
  for (const char* key : {"model.name", "training.global_batch", "parallel.tp", "cluster.nic_gbps", "output.trace_detail"})
    CHECK_THAT(o.out, Catch::Contains(key));
}

TEST_CASE("dtsim collective sweeps sizes like nccl-tests", "[cli][comm]") {
  const Outcome o = run_dtsim("collective --cluster.nodes=1 --sizes 1G:16G --json");
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("\"gpus\": 8"));
  // 5 sizes, 1 GiB to 16 GiB; 8 x A100 NVSwitch at 16 GiB: measured 234.9 GB/s bus bandwidth
  // (shared/validation/collectives.csv c0020).
  const std::size_t last = o.out.rfind("\"busbw_GBps\": ");
  REQUIRE(last != std::string::npos);
  const double busbw = std::stod(o.out.substr(last + 14));
  CHECK(busbw == Approx(234.9).epsilon(0.10));
  const Outcome bad = run_dtsim("collective --op all_to_none");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("--op") && Catch::Contains("all_reduce"));
  const Outcome sizes = run_dtsim("collective --sizes 16G:1K");
  CHECK(sizes.status == 2);
  CHECK_THAT(sizes.err, Catch::Contains("--sizes"));
}

TEST_CASE("dtsim validate builds rows as scenarios and lists the rest as skipped", "[cli]") {
  const std::string header =
      "run_id,source_id,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,global_batch_seqs,"
      "micro_batch,num_gpus,gpu_type,nic_gbps,nics_per_node,gpus_per_node,precision,tp,pp,cp,vpp_chunks,"
      "sequence_parallel,recompute,zero_or_sharding,iter_time_s\n";
  const std::string csv = write_file(
      "runs.csv", header +
                      "tiny,TEST,GPT tiny,4,1024,16,,,32000,512,16,2,8,\"A100-SXM4-80GB (a DGX, quoted)\",200,8,8,"
                      "bf16,2,2,1,1,no,full,none,0.01\n"
                      "sp,TEST,GPT tiny,4,1024,16,,,32000,512,16,2,8,A100-SXM4-80GB,200,8,8,bf16,2,2,1,1,yes,"
                      "selective,none,0.01\n"
                      "cp,TEST,GPT tiny,4,1024,16,,,32000,512,16,2,8,A100-SXM4-80GB,200,8,8,bf16,2,2,2,1,yes,"
                      "selective,none,0.01\n"
                      "other,ELSE,GPT tiny,4,1024,16,,,32000,512,16,2,8,A100-SXM4-80GB,200,8,8,bf16,2,2,1,1,no,"
                      "full,none,0.01\n");
  const Outcome o = run_dtsim("validate " + csv + " --source TEST --json");
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("\"run_id\": \"tiny\", \"source_id\": \"TEST\", \"built\": true"));
  CHECK_THAT(o.out, Catch::Contains("\"run_id\": \"sp\", \"source_id\": \"TEST\", \"built\": true"));
  CHECK_THAT(o.out, Catch::Contains("context parallelism is not modelled yet"));
  CHECK_THAT(o.out, !Catch::Contains("\"other\""));
  CHECK_THAT(o.out, Catch::Contains("\"median_abs_error_pct\":"));
  const Outcome missing = run_dtsim("validate " + write_file("bad.csv", "run_id,source_id\nx,y\n"));
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::Contains("missing column"));
}

TEST_CASE("bad heterogeneity and trace detail values name the key and what is valid", "[cli]") {
  expect_input_error("run --cluster.slow_gpus=99999:0.8", "cluster.slow_gpus: GPU 99999 does not exist");
  expect_input_error("run --cluster.slow_gpus=17:0", "must be a finite number > 0");
  expect_input_error("run --cluster.slow_gpus=17:nan", "must be a finite number > 0");
  expect_input_error("run --cluster.slow_gpus=17", "is not NAME:FACTOR");
  expect_input_error("run --cluster.slow_gpus=x:0.5", "'x' is not a GPU index");
  expect_input_error("run --cluster.degraded_links=node0.nic0:0.5", "is not DEVICE--DEVICE");
  expect_input_error("run --cluster.degraded_links=node0.nic0--nowhere:0.5", "no device 'nowhere'");
  expect_input_error("run --cluster.degraded_links=node0.gpu0--node1.gpu0:0.5", "no link between");
  expect_input_error("run --output.detail=most", "output.detail = 'most': valid values are summary, stages, full");
  expect_input_error("run --cluster.fabric=torus", "cluster.fabric = 'torus'");
  expect_input_error("run --threads=-1", "--threads -1");
}

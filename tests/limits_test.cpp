// Absurd input values are refused before any work starts, with a message naming the key and
// what is valid: GPU counts beyond the limit, zero, negative, NaN and infinite bandwidths and
// latencies, 0 layers, sizes whose products overflow 64-bit integers or whose step would not fit
// in simulated time (sim/base/limits.hpp); in scenario files, DOT files and validation CSVs.
#include <catch2/catch.hpp>

#include <boost/program_options/parsers.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/base/error.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/validation/validate.hpp"
#include "topologies/builders.hpp"
#include "topologies/dot_io.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

// The tiny-pipeline scenario (4-layer GPT on 8 A100, TP 2 x PP 2 x DP 2) with the space-separated
// command-line overrides `extra` (--section.key=value), loaded and checked against its own GPU
// count, and its cluster built.
void load_tiny(const std::string& extra) {
  const std::string text =
      "[model]\nname = custom\nlayers = 4\nhidden = 1024\nheads = 16\nvocab = 32000\nseq_len = 512\n"
      "[training]\nglobal_batch = 16\nmicro_batch = 2\n"
      "[parallel]\ntp = 2\npp = 2\ndp = 2\n"
      "[cluster]\nnodes = 1\ngpus_per_node = 8\n";
  std::vector<std::string> args;
  std::istringstream words(extra);
  for (std::string w; words >> w;) args.push_back(w);
  const auto vm = test::overrides(args);
  Scenario sc = load_scenario_text(text, "tiny.ini", vm);
  validate_scenario(sc, sc.cluster.nodes * sc.cluster.gpus_per_node);
  build_cluster(sc.cluster);
}

// The message of the InputError that `extra` causes (fails the test when none is thrown).
std::string refusal(const std::string& extra) {
  try {
    load_tiny(extra);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("no InputError for: " << extra);
  return "";
}

std::string dot_refusal(const std::string& text) {
  try {
    read_dot_text(text, "machine.dot");
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("no InputError for: " << text);
  return "";
}

}  // namespace

TEST_CASE("the tiny scenario text loads and passes its checks", "[limits]") { CHECK_NOTHROW(load_tiny("")); }

TEST_CASE("GPU counts beyond the limit are refused", "[limits]") {
  CHECK_THAT(refusal("--cluster.nodes=1000000000"), Catch::Contains("cluster.nodes = 1000000000: must be <= 1048576"));
  CHECK_THAT(refusal("--cluster.nodes=131072 --cluster.gpus_per_node=16"),
             Catch::Contains("131072 x 16 = 2097152 GPUs: at most 1048576"));
  CHECK_THAT(refusal("--parallel.tp=1048576 --parallel.pp=1048576 --parallel.dp=1048576"),
             Catch::Contains("at most 1048576 GPUs"));
  CHECK_THAT(refusal("--cluster.nodes=99999999999999999999999"), Catch::Contains("cluster.nodes"));
  CHECK_THAT(refusal("--cluster.nodes=-99999999999999999999999"), Catch::Contains("must be >= 1"));
  CHECK_THAT(refusal("--cluster.nodes=2 --cluster.gpus_per_node=4 --cluster.node_kind=pcie --cluster.nics_per_node=1048576"),
             Catch::Contains("cluster.nics_per_node"));
}

TEST_CASE("zero negative NaN and infinite bandwidths are refused", "[limits]") {
  for (const char* value : {"0", "-100", "nan", "NaN", "inf", "-inf", "1e-30", "1e300"}) {
    INFO(value);
    CHECK_THAT(refusal(std::string("--cluster.nic_gbps=") + value), Catch::Contains("cluster.nic_gbps"));
  }
  for (const char* value : {"-1", "nan", "inf", "1e-9", "1e9"}) {
    INFO(value);
    CHECK_THAT(refusal(std::string("--cluster.nvlink_GBps=") + value), Catch::Contains("cluster.nvlink_GBps"));
  }
  CHECK_THAT(refusal("--cluster.oversubscription=nan"), Catch::Contains("finite"));
  CHECK_THAT(refusal("--parallel.dp_bucket_mb=inf"), Catch::Contains("parallel.dp_bucket_mb"));
  ClusterConfig c;
  c.nic_gbps = 0;
  CHECK_THROWS_WITH(build_cluster(c), Catch::Contains("cluster.nic_gbps = 0"));
  c.nic_gbps = 100;
  c.nvlink_GBps = -5;
  CHECK_THROWS_WITH(build_cluster(c), Catch::Contains("cluster.nvlink_GBps"));
}

TEST_CASE("zero layers and zero sizes are refused", "[limits]") {
  CHECK_THAT(refusal("--model.layers=0"), Catch::Contains("model.layers = 0: must be >= 1"));
  CHECK_THAT(refusal("--model.hidden=0"), Catch::Contains("model.hidden"));
  CHECK_THAT(refusal("--training.micro_batch=-2"), Catch::Contains("training.micro_batch"));
}

TEST_CASE("sizes whose byte counts or step work overflow are refused", "[limits]") {
  // 2^31 - 1 tokens per sequence: the byte counts of one micro-batch leave int64.
  CHECK_THAT(refusal("--model.seq_len=2147483647"), Catch::Contains("too large to simulate"));
  // Fits per micro-batch (2 x 10^9 tokens) but the step is 4 x 10^12 tokens of work.
  CHECK_THAT(refusal("--model.seq_len=1000000 --training.global_batch=4000000 --training.micro_batch=2000"),
             Catch::Contains("FLOPs per GPU per step"));
  CHECK_THAT(refusal("--model.hidden=16777216 --model.heads=64"), Catch::Contains("parameters: at most"));
  CHECK_THAT(refusal("--model.hidden=2147483584 --model.heads=64"), Catch::Contains("must be <= 16777216"));
  // micro_batch x dp overflows int: checked in 64 bits.
  CHECK_THAT(refusal("--training.micro_batch=2147483647 --parallel.dp=2"), Catch::Contains("parallel.dp"));
}

TEST_CASE("DOT links with absurd bandwidth or latency and odd node numbers are refused", "[limits]") {
  const std::string head = "digraph G { a [kind=gpu]; b [kind=gpu]; a -> b [kind=pcie4 ";
  for (const char* bw : {"0", "-1", "nan", "inf", "1e-30", "1e30"}) {
    INFO(bw);
    CHECK_THAT(dot_refusal(head + "bandwidth_GBps=\"" + bw + "\"]; }"), Catch::Contains("bandwidth_GBps"));
  }
  for (const char* latency : {"-1", "nan", "inf", "1e300"}) {
    INFO(latency);
    CHECK_THAT(dot_refusal(head + "bandwidth_GBps=10 latency_ns=\"" + latency + "\"]; }"), Catch::Contains("latency_ns"));
  }
  for (const char* node : {"1e300", "-5", "2.5", "nan"}) {
    INFO(node);
    CHECK_THAT(dot_refusal(std::string("digraph G { a [kind=gpu \"node\"=\"") + node + "\"]; }"),
               Catch::Contains("node"));
  }
}

TEST_CASE("validation CSV rows with absurd numbers are skipped with the column named", "[limits]") {
  const std::string header =
      "run_id,source_id,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,global_batch_seqs,micro_batch,"
      "num_gpus,gpu_type,nic_gbps,nics_per_node,gpus_per_node,precision,tp,pp,cp,vpp_chunks,sequence_parallel,"
      "recompute,zero_or_sharding,iter_time_s\n";
  std::istringstream in(header +
                        "a,s,gpt,24,2048,16,,,51200,2048,512,1,99999999999,A100,200,8,8,fp16,1,1,1,,no,full,,1.5\n"
                        "b,s,gpt,24,2048,16,,,51200,2048,512,1,8,A100,200,8,8,fp16,1,1,1,,no,full,,nan\n"
                        "c,s,gpt,24,2048,16,,,51200,2048,512,1,8,A100,200,8,8,fp16,2,2,1,,no,full,,1.5\n");
  const std::vector<ValidationCase> cases = read_validation_cases(in, "runs.csv", {});
  REQUIRE(cases.size() == 3);
  CHECK_THAT(cases[0].row.skip_reason, Catch::Contains("column num_gpus"));
  CHECK_THAT(cases[1].row.skip_reason, Catch::Contains("column iter_time_s"));
  CHECK(cases[2].row.skip_reason.empty());
  CHECK(validation_scenario(cases[2], "runs.csv").plan.dp == 2);
}

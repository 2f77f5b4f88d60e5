// End-to-end tests of the dtsim binary: runs, JSON, traces, and every bad input exits 2 with a
// message naming the key or file and leaves no output file.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <regex>
#include <set>
#include <string>

#include <fmt/format.h>

#include "sim/base/nearest.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/trace/hdf5_reader.hpp"

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
  CHECK(o.status == 4);  // the summary is printed, and the status says the layout does not fit
  CHECK_THAT(o.out, Catch::Contains("OUT OF MEMORY"));
  // Which category: Adam's fp32 state of 20.6 B parameters over TP 2 is the largest, 114.86 GiB;
  // torchtitan's FSDP reduces in fp32, so the gradients are fp32 (4 B) beside the bf16 weights.
  CHECK_THAT(o.out, Catch::Contains("at its peak (GiB): weights 19.14, gradients 38.29, optimizer 114.86") &&
                        Catch::Contains("the largest is optimizer: try parallel.zero_stage >= 1"));
  const Outcome json = run_dtsim("run " + scenario("gpt-neox-20b-2x3090.ini") + " --json");
  CHECK_THAT(json.out, Catch::Contains("\"oom_category\": \"gradients\""));
  const Outcome fits = run_dtsim("run " + scenario("gpt2-xl-2x3090.ini") + " --json");
  REQUIRE(fits.status == 0);
  CHECK_THAT(fits.out, Catch::Contains("\"oom\": false") && Catch::Contains("\"oom_category\": null"));
}

TEST_CASE("the DeepSeek-R1 scenario runs end to end with expert parallelism across nodes", "[cli][moe]") {
  const Outcome o = run_dtsim("run " + scenario("deepseek-r1-256xh100.ini"));
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("TP 1 PP 8 DP 32 (EP 32)"));
  CHECK_THAT(o.out, Catch::Contains("256 routed (8 per token)"));
  CHECK_THAT(o.out, !Catch::Contains("OUT OF MEMORY"));
  // Without EP every GPU holds all 256 experts of its stage: far beyond 80 GB.
  const Outcome dense = run_dtsim("run " + scenario("deepseek-r1-256xh100.ini") + " --parallel.ep=1");
  CHECK(dense.status == 4);
  CHECK_THAT(dense.out, Catch::Contains("OUT OF MEMORY"));
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

TEST_CASE("dtsim collective --algo hierarchical over 4 nodes and cluster.spines", "[cli][comm][hierarchical]") {
  const Outcome o = run_dtsim(
      "collective --cluster.nodes=4 --cluster.nics_per_node=8 --cluster.nic_gbps=200 --cluster.spines=4 "
      "--algo hierarchical --sizes 1G");
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("(hierarchical) over 32 GPUs") && Catch::Contains("hierarchical     ll128        8"));
  const Outcome bad = run_dtsim("collective --algo butterfly");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("--algo") && Catch::Contains("hierarchical"));
  const Outcome clos = run_dtsim("collective --cluster.nodes=4 --cluster.fabric=clos3 --cluster.spines=2");
  CHECK(clos.status == 2);
  CHECK_THAT(clos.err, Catch::Contains("cluster.spines = 2") && Catch::Contains("fat_tree or rail"));
}

TEST_CASE("dtsim collective --nccl runs a release's protocols and NVLS: --algo nvls needs both", "[cli][comm][nvls]") {
  const Outcome h200 = run_dtsim("collective --cluster.gpu=H200 --cluster.nodes=1 --sizes 1G --nccl 2.27.7");
  INFO(h200.err);
  REQUIRE(h200.status == 0);
  CHECK_THAT(h200.out, Catch::Contains("NCCL 2.27.7 (profile 2.27: 2.27 - 2.30)") && Catch::Contains("nvls"));
  const Outcome old = run_dtsim("collective --cluster.gpu=H200 --cluster.nodes=1 --sizes 1G --json");
  REQUIRE(old.status == 0);
  CHECK_THAT(old.out, Catch::Contains("\"nccl\": \"2.10.3\"") && !Catch::Contains("nvls"));
  const Outcome bad = run_dtsim("collective --nccl 2.7");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("--nccl = '2.7'") && Catch::Contains("2.8 to 2.30"));
  const Outcome a100 = run_dtsim("collective --cluster.nodes=1 --algo nvls --nccl 2.27");
  CHECK(a100.status == 2);
  CHECK_THAT(a100.err, Catch::Contains("nvls") && Catch::Contains("NVLink 4"));
  const Outcome catalog = run_dtsim("catalog nccl");
  REQUIRE(catalog.status == 0);
  CHECK_THAT(catalog.out, Catch::Contains("2.17 (NCCL 2.17") && Catch::Contains("NVLS_NCHANNELS_SM100_NVL"));
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
  CHECK_THAT(o.out, Catch::Contains("\"run_id\": \"cp\", \"source_id\": \"TEST\", \"built\": true"));
  CHECK_THAT(o.out, !Catch::Contains("\"other\""));
  CHECK_THAT(o.out, Catch::Contains("\"median_abs_error_pct\":"));
  const Outcome missing = run_dtsim("validate " + write_file("bad.csv", "run_id,source_id\nx,y\n"));
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::Contains("missing column"));
}

TEST_CASE("dtsim validate --scenario prints a row's scenario, which dtsim run predicts the same step from", "[cli]") {
  const std::string header =
      "run_id,source_id,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,global_batch_seqs,"
      "micro_batch,num_gpus,gpu_type,nic_gbps,nics_per_node,gpus_per_node,precision,tp,pp,cp,vpp_chunks,"
      "sequence_parallel,recompute,zero_or_sharding,iter_time_s,framework\n";
  const std::string csv = write_file(
      "rows.csv", header + "nemo_tiny,TEST,Llama tiny,4,1024,16,8,2816,32000,512,16,2,8,H100-SXM5-80GB,,8,8,"
                           "bf16,2,2,1,1,yes,none,none,0.02,NeMo / Megatron-Core\n"
                           "no_layers,TEST,GPT tiny,,1024,16,,,32000,512,16,2,8,A100-SXM4-80GB,200,8,8,bf16,2,2,1,1,"
                           "no,full,none,0.01,\n");
  const Outcome json = run_dtsim("validate " + csv + " --json");
  REQUIRE(json.status == 0);
  const Outcome printed = run_dtsim("validate " + csv + " --scenario nemo_tiny");
  INFO(printed.err);
  REQUIRE(printed.status == 0);
  CHECK_THAT(printed.out, Catch::StartsWith("# " + csv + " row nemo_tiny (TEST)"));
  CHECK_THAT(printed.out, Catch::Contains("measured step 0.02 s (compared on iter_time_s); framework profile megatron-core"));
  CHECK_THAT(printed.out, Catch::Contains("\n# assumed: nic_gbps") && Catch::Contains("\nattention = cudnn\n"));
  const Outcome run = run_dtsim("run " + write_file("row.ini", printed.out) + " --json");
  INFO(run.err);
  REQUIRE(run.status == 0);
  const auto number_after = [](const std::string& text, const std::string& key) {
    const std::size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + key.size()));
  };
  CHECK(number_after(run.out, "\"step_time_s\": ") == Approx(number_after(json.out, "\"predicted_s\": ")).epsilon(1e-9));
  // An unknown id names the file and the nearest id; a row that cannot be built says why.
  const Outcome typo = run_dtsim("validate " + csv + " --scenario nemo_tine");
  CHECK(typo.status == 2);
  CHECK_THAT(typo.err, Catch::Contains("no run_id 'nemo_tine'") && Catch::Contains("did you mean 'nemo_tiny'"));
  const Outcome unbuilt = run_dtsim("validate " + csv + " --scenario no_layers");
  CHECK(unbuilt.status == 2);
  CHECK_THAT(unbuilt.err, Catch::Contains("row no_layers cannot be simulated"));
  const Outcome mixed = run_dtsim("validate " + csv + " --scenario nemo_tiny --json");
  CHECK(mixed.status == 2);
  CHECK_THAT(mixed.err, Catch::Contains("takes no --source or --json"));
  CHECK(mixed.out.empty());
}

TEST_CASE("dtsim catalog lists models gpus and links with sources", "[cli]") {
  const Outcome models = run_dtsim("catalog models");
  REQUIRE(models.status == 0);
  for (const char* name : {"deepseek-r1", "deepseek-r1-distill-qwen-32b", "llama3.1-405b", "opt-175b", "mt-nlg-530b",
                           "bloom-176b", "gpt2-xl", "config.json"})
    CHECK_THAT(models.out, Catch::Contains(name));
  const Outcome gpus = run_dtsim("catalog gpus");
  REQUIRE(gpus.status == 0);
  for (const char* part : {"RTX-4090", "GB200", "GB300", "B300", "H100-NVL-94GB", "GH200-96GB", "H800-SXM5-80GB", "H20",
                           "MI250X", "MI325X", "MI355X", "L4", "L40", "RTX-5090", "RTX-3060-12GB", "RTX-3070-8GB",
                           "RTX-3080-10GB"})
    CHECK_THAT(gpus.out, Catch::Contains(std::string("\n") + part + " "));
  // Each part's documents per group, and the documents themselves.
  CHECK_THAT(gpus.out, Catch::Contains("H100-NVL-94GB (also H100 NVL)\n  memory, bandwidth, links, power: nv-h100; "
                                       "rates: nv-h100, nv-mig-h100nvl"));
  CHECK_THAT(gpus.out, Catch::Contains("\n  nv-gb200-nvl72  NVIDIA GB200 NVL72 product page") &&
                           Catch::Contains("gpus.csv row"));
  const Outcome links = run_dtsim("catalog links");
  REQUIRE(links.status == 0);
  CHECK_THAT(links.out, Catch::Contains("nvlink3") && Catch::Contains("0.780") && Catch::Contains("PCIe Gen4 x16"));
  const Outcome bad = run_dtsim("catalog cars");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("models, gpus, links"));
}

TEST_CASE("dtsim fit prints the memory and the GPUs that hold it", "[cli]") {
  const Outcome o = run_dtsim("fit --model llama3-70b --precision int4 --context 8192 --json");
  INFO(o.err);
  REQUIRE(o.status == 0);
  for (const char* key : {"\"weights\"", "\"kv_cache\"", "\"activations\"", "\"overhead\"", "\"total_bytes\"",
                          "\"gpus_needed\"", "\"fits_on_one\"", "\"includes\""})
    CHECK_THAT(o.out, Catch::Contains(key));
  const Outcome text = run_dtsim("fit --model bloom-176b --mode training --recompute selective --zero 1 --dp 8");
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("optimizer") && Catch::Contains("ZeRO-1") && Catch::Contains("RTX-4090"));
  const Outcome moe = run_dtsim("fit --model deepseek-r1 --precision fp8");
  REQUIRE(moe.status == 0);
  CHECK_THAT(moe.out, Catch::Contains("MLA latent"));
}

TEST_CASE("dtsim fit --seed-table gives every claim a verdict", "[cli]") {
  const Outcome o = run_dtsim("fit --seed-table");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("DeepSeek R1") && Catch::Contains("matches") && Catch::Contains("underestimates"));
  // Each inference row's decode speed on the guide's cards and the cheapest set for 20 tokens/s.
  CHECK_THAT(o.out, Catch::Contains("speed: 33.5 tokens/s on 2 x RTX-3090 (int4, tp 2); for 20 tokens/s: ") &&
                        Catch::Contains("tokens/s on 16 x A100-SXM4-80GB (bf16, tp 8 x pp 2)"));
  const Outcome json = run_dtsim("fit --seed-table --speed 40 --price RTX-3090=800 --json");
  REQUIRE(json.status == 0);
  CHECK_THAT(json.out, Catch::Contains("\"target_tokens_per_s\": 40") &&
                           Catch::Contains("\"cheapest\": {\"gpu\": \"RTX-3090\", \"gpus\": 4, \"tp\": 4, \"pp\": 1, "
                                           "\"weights\": \"int4\""));
  const Outcome bad = run_dtsim("fit --seed-table --claims /nonexistent.csv");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("/nonexistent.csv"));
  for (const char* args : {"fit --seed-table --speed 0", "fit --seed-table --price RTX-3090", "fit --seed-table --price RTX-3090=x",
                           "fit --seed-table --price TPU=5"}) {
    const Outcome refused = run_dtsim(args);
    INFO(args << ": " << refused.err);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("--speed") || Catch::Contains("--price"));
  }
}

TEST_CASE("dtsim fit and advise reject bad input with status 2", "[cli]") {
  const struct {
    const char* args;
    const char* needle;
  } cases[] = {
      {"fit --model gpt-5", "valid names"},
      {"fit --model llama3-8b --precision int3", "int4"},
      {"fit --model llama3-8b --context 0", "--context"},
      {"fit --model llama3-8b --batch -2", "--batch"},
      {"fit --model llama3-8b --mode serving", "inference, training"},
      {"fit --model llama3-8b --mode training --precision int4", "mixed precision"},
      {"fit", "--model"},
      {"advise --model gpt-1.7b --gpus A100,Voodoo2", "Voodoo2"},
      {"advise --model gpt-1.7b --gpus A100 --price H100=2", "not one of --gpus"},
      {"advise --model gpt-1.7b --gpus A100 --price A100=cheap", "not a number"},
      {"run --model.name=deepseek-r1 --parallel.ep=3", "must divide parallel.dp = 8"},
      {"run --parallel.ep=2", "has no experts"},
  };
  for (const auto& c : cases) {
    const fs::path out = scratch() / "never-advise.h5";
    fs::remove(out);
    const bool advise = std::string(c.args).rfind("advise", 0) == 0;
    const Outcome o = run_dtsim(std::string(c.args) + (advise ? " --output " + out.string() : ""));
    INFO(c.args << "\nstderr: " << o.err);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains(c.needle));
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("dtsim advise ranks simulated layouts and writes the advise table", "[cli]") {
  const fs::path out = scratch() / "advise.h5";
  fs::remove(out);
  // Without prices the fastest (largest) layout wins: 16 GPUs on 2 nodes, so its variants
  // change the node kind and the NICs.
  const Outcome o = run_dtsim("advise --model gpt-1.7b --gpus A100,RTX4090 --max-gpus 16 --global-batch 32 --top 1 "
                              "--jobs 2 --json --output " + out.string());
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("\"rank\": 1, \"gpu\": \"A100-SXM4-80GB\", \"role\": \"layout\", \"num_gpus\": 16,") &&
                        Catch::Contains("\"ranked_by\": \"time to train\"") &&
                        Catch::Contains("\"role\": \"variant\"") && Catch::Contains("\"node_kind\": \"pcie\"") &&
                        Catch::Contains("\"nics_per_node\": 8, \"nic_gbps\": 400") && Catch::Contains("\"gpu\": \"RTX-4090\""));
  CHECK(fs::exists(out));
  CHECK_FALSE(fs::exists(out.string() + ".tmp"));
  // With a price for every GPU the ranking is by cost.
  const Outcome priced = run_dtsim("advise --model gpt-1.7b --gpus A100,RTX4090 --max-gpus 4 --global-batch 32 --top 0 "
                                   "--price A100=1.8 --price RTX4090=0.4 --json");
  REQUIRE(priced.status == 0);
  CHECK_THAT(priced.out, Catch::Contains("\"ranked_by\": \"cost\""));
  // The cheapest row is a 4090 layout, and its cost is its GPU-hours at the 4090's price.
  std::smatch first;
  const std::regex row("\"rank\": 1, \"gpu\": \"([^\"]+)\".*?\"gpu_hours\": ([0-9.e+]+), \"cost_usd\": ([0-9.e+]+)");
  REQUIRE(std::regex_search(priced.out, first, row));
  CHECK(first[1] == "RTX-4090");
  CHECK(std::stod(first[3]) == Approx(std::stod(first[2]) * 0.4).epsilon(1e-6));
}

// A number field of the first JSON object in `text` that has it.
double json_number(const std::string& text, const std::string& key) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex("\"" + key + "\": ([-0-9.e+]+)")));
  return std::stod(m[1]);
}

TEST_CASE("an advised layout is what dtsim run simulates for that layout", "[cli]") {
  // The best 4090 layout on 8 GPUs of one PCIe node, with its stage split, under advise's default
  // framework (run without a scenario file would take BLOOM's, megatron-deepspeed).
  const Outcome advised = run_dtsim("advise --model gpt-1.7b --gpus RTX4090 --max-gpus 8 --global-batch 32 --top 0 --json");
  INFO(advised.err);
  REQUIRE(advised.status == 0);
  std::smatch row;
  const std::regex first("\\{\"rank\": 1, .*?\\}");
  REQUIRE(std::regex_search(advised.out, row, first));
  const std::string r = row.str();
  std::smatch f;
  REQUIRE(std::regex_search(r, f, std::regex("\"nodes\": (\\d+), \"gpus_per_node\": (\\d+), \"tp\": (\\d+), \"pp\": (\\d+), "
                                             "\"dp\": (\\d+), \"ep\": 1, \"micro_batch\": (\\d+), \"recompute\": \"(\\w+)\", "
                                             "\"zero_stage\": (\\d+), \"stage_layers\": \"([\\w,]+)\", \"node_kind\": \"(\\w+)\"")));
  const Outcome run = run_dtsim(fmt::format(
      "run --model.name=gpt-1.7b --training.framework=megatron-core --cluster.gpu=RTX-4090 --training.global_batch=32 "
      "--cluster.nic_kind=infiniband "
      "--cluster.nics_per_node=4 --cluster.nic_gbps=200 --cluster.nodes={} --cluster.gpus_per_node={} --parallel.tp={} "
      "--parallel.pp={} --parallel.dp={} --training.micro_batch={} --training.recompute={} --parallel.zero_stage={} "
      "--parallel.stage_layers={} --cluster.node_kind={} --json",
      f[1].str(), f[2].str(), f[3].str(), f[4].str(), f[5].str(), f[6].str(), f[7].str(), f[8].str(), f[9].str(),
      f[10].str()));
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK(json_number(r, "step_time_s") == Approx(json_number(run.out, "step_time_s")).epsilon(1e-8));
  CHECK(json_number(r, "peak_memory_gib") == Approx(json_number(run.out, "peak_memory_gib")).epsilon(1e-8));
  // Time to train: the tokens at the simulated rate; GPU-hours: that time on every GPU.
  const double tokens = json_number(advised.out, "tokens");
  const double train_s = tokens / json_number(r, "tokens_per_s");
  CHECK(json_number(r, "train_days") == Approx(train_s / 86400).epsilon(1e-6));
  CHECK(json_number(r, "gpu_hours") == Approx(train_s / 3600 * json_number(r, "num_gpus")).epsilon(1e-6));
}

TEST_CASE("bad heterogeneity and trace detail values name the key and what is valid", "[cli]") {
  expect_input_error("run --cluster.slow_gpus=99999:0.8", "cluster.slow_gpus: GPU 99999 does not exist");
  expect_input_error("run --cluster.slow_gpus=17:0", "must be a number from 0.001 to 1000");
  expect_input_error("run --cluster.slow_gpus=17:nan", "must be a number from 0.001 to 1000");
  expect_input_error("run --cluster.slow_gpus=17", "is not NAME:FACTOR");
  expect_input_error("run --cluster.slow_gpus=x:0.5", "'x' is not a GPU index");
  expect_input_error("run --cluster.degraded_links=node0.nic0:0.5", "is not DEVICE--DEVICE");
  expect_input_error("run --cluster.degraded_links=node0.nic0--nowhere:0.5", "no device 'nowhere'");
  expect_input_error("run --cluster.degraded_links=node0.gpu0--node1.gpu0:0.5", "no link between");
  expect_input_error("run --output.detail=most", "output.detail = 'most': valid values are summary, stages, full");
  expect_input_error("run --cluster.fabric=torus", "cluster.fabric = 'torus'");
  expect_input_error("run --threads=-1", "--threads -1");
}

TEST_CASE("a mistyped key, option or catalog gets the nearest valid name", "[cli]") {
  CHECK(dtsim::nearest_name("paralel.tp", dtsim::scenario_key_names()) == "parallel.tp");
  CHECK(dtsim::nearest_name("Parallel.TP", dtsim::scenario_key_names()) == "parallel.tp");
  CHECK(dtsim::nearest_name("xyzzy", dtsim::scenario_key_names()).empty());
  CHECK(dtsim::edit_distance("kitten", "sitting") == 3);
  const auto refused_with = [](const std::string& args, const std::string& message) {
    const Outcome o = run_dtsim(args);
    INFO(args << "\n" << o.err);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains(message));
  };
  refused_with("run --paralel.tp=2", "unknown option '--paralel.tp=2' (did you mean 'parallel.tp'?)");
  refused_with("collective --opp all_reduce", "(did you mean 'op'?); run 'dtsim collective --help'");
  refused_with("sweep " + scenario("tests/tiny-sweep.ini") + " --sweep paralel.tp=1,2",
               "--sweep paralel.tp: unknown scenario key (did you mean 'parallel.tp'?)");
  refused_with("run " + write_file("typo.ini", "[model]\nnme = gpt2-xl\n"), "unknown key 'model.nme' (did you mean 'model.name'?)");
  refused_with("catalog model", "dtsim catalog 'model' (did you mean 'models'?)");
  const Outcome help = run_dtsim("catalog --help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("usage: dtsim catalog models|gpus|links|frameworks"));
}

TEST_CASE("advise with no layout that fits says what would, and exits 4", "[cli]") {
  const Outcome o = run_dtsim("advise --model bloom-176b --gpus A100 --max-gpus 8 --global-batch 8");
  CHECK(o.status == 4);
  CHECK_THAT(o.out, Catch::Contains("0 fit in memory"));
  CHECK_THAT(o.err, Catch::Contains("A100-SXM4-80GB: nothing fits on up to 8 GPUs; with full recompute and "
                                    "micro-batch 1, bloom-176b needs tp 8 x pp 6 = 48 GPUs"));
  CHECK_THAT(o.err, Catch::Contains("try --max-gpus 64"));
}

TEST_CASE("a scenario file names its model and machine: --template gives one that runs", "[cli]") {
  const Outcome empty = run_dtsim("run " + write_file("empty.ini", ""));
  CHECK(empty.status == 2);
  CHECK_THAT(empty.err, Catch::Contains("has no [model] section") && Catch::Contains("dtsim run --template"));
  const Outcome no_cluster = run_dtsim("run " + write_file("model-only.ini", "[model]\nname = llama3-8b\n"));
  CHECK(no_cluster.status == 2);
  CHECK_THAT(no_cluster.err, Catch::Contains("has no [cluster] section"));
  const Outcome tmpl = run_dtsim("run --template");
  REQUIRE(tmpl.status == 0);
  CHECK_THAT(tmpl.out, Catch::Contains("[model]") && Catch::Contains("[cluster]"));
  const Outcome ran = run_dtsim("run " + write_file("my.ini", tmpl.out));
  CHECK(ran.status == 0);
  CHECK_THAT(ran.out, Catch::Contains("llama3-8b on 2 x 8 (16 GPUs), TP 2 PP 2 DP 4"));
  CHECK_THAT(ran.out, Catch::Contains("8 x 400 Gb/s infiniband NICs per node"));
}

TEST_CASE("export keeps only the ranks and the window asked for", "[cli][export]") {
  const std::string trace = (scratch() / "pick.h5").string();
  REQUIRE(run_dtsim("run " + scenario("tests/tiny-pipeline.ini") + " --output.trace_detail=full --output " + trace)
              .status == 0);
  const std::string all = (scratch() / "all.json").string(), picked = (scratch() / "picked.json").string();
  REQUIRE(run_dtsim("export " + trace + " --chrome " + all).status == 0);
  const Outcome o = run_dtsim("export " + trace + " --chrome " + picked + " --ranks 1,2-3 --window 0.001:0.002");
  REQUIRE(o.status == 0);
  const std::string whole = slurp(all), part = slurp(picked);
  CHECK(part.size() < whole.size() / 4);
  std::set<std::string> pids;
  const std::regex pid("\"pid\": ([0-9]+)");
  for (auto it = std::sregex_iterator(part.begin(), part.end(), pid); it != std::sregex_iterator(); ++it)
    pids.insert((*it)[1]);
  CHECK(pids == std::set<std::string>{"2", "3", "4"});  // pid = rank + 1
  // Every op event overlaps 1-2 ms of the step.
  const std::regex span("\"ts\": ([0-9.]+), \"dur\": ([0-9.]+)");
  int events = 0;
  for (auto it = std::sregex_iterator(part.begin(), part.end(), span); it != std::sregex_iterator(); ++it, ++events) {
    const double ts = std::stod((*it)[1]), dur = std::stod((*it)[2]);
    CHECK(ts + dur >= 1000 - 1e-3);
    CHECK(ts <= 2000 + 1e-3);
  }
  CHECK(events > 0);
  const Outcome bad_ranks = run_dtsim("export " + trace + " --chrome " + picked + " --ranks 3-1");
  CHECK(bad_ranks.status == 2);
  CHECK_THAT(bad_ranks.err, Catch::Contains("--ranks '3-1': the range '3-1' goes down"));
  const Outcome bad_window = run_dtsim("export " + trace + " --chrome " + picked + " --window 2");
  CHECK(bad_window.status == 2);
  CHECK_THAT(bad_window.err, Catch::Contains("--window '2': no ':'"));
  // OUT.json.gz: the same JSON, gzip'd (what Perfetto opens), a fraction of the size.
  const std::string gz = (scratch() / "all.json.gz").string();
  REQUIRE(run_dtsim("export " + trace + " --chrome " + gz).status == 0);
  gzFile in = gzopen(gz.c_str(), "rb");
  REQUIRE(in != nullptr);
  std::string inflated;
  char buffer[1 << 16];
  for (int n; (n = gzread(in, buffer, sizeof buffer)) > 0;) inflated.append(buffer, static_cast<std::size_t>(n));
  CHECK(gzclose(in) == Z_OK);
  CHECK(inflated == whole);
  CHECK(std::filesystem::file_size(gz) < whole.size() / 5);
}

TEST_CASE("parallel sizes left unset are chosen to fit, and the summary says so", "[cli][chosen]") {
  const std::string file = write_file("unset.ini", "[model]\nname = llama3-8b\n[training]\nglobal_batch = 16\n"
                                                   "[cluster]\ngpu = H100\nnodes = 2\ngpus_per_node = 8\n");
  const Outcome chosen = run_dtsim("run " + file);
  INFO(chosen.err);
  REQUIRE(chosen.status == 0);
  CHECK_THAT(chosen.out, Catch::Contains("  chosen             tp ") && Catch::Contains("set them to override"));
  // As JSON: the sizes run, their product the GPUs, and the same words.
  const Outcome json = run_dtsim("run " + file + " --json");
  REQUIRE(json.status == 0);
  CHECK_THAT(json.out, Catch::Contains("\"chosen\": \"tp ") && Catch::Contains("\"cp\": 1"));
  // A size given is kept; only the others are chosen.
  const Outcome fixed = run_dtsim("run " + file + " --parallel.tp=8");
  REQUIRE(fixed.status == 0);
  CHECK_THAT(fixed.out, Catch::Contains("TP 8 PP 1 DP 2") && Catch::Contains("chosen             tp 8, pp 1, dp 2"));
  // Every size given: nothing chosen.
  const Outcome given = run_dtsim("run " + file + " --parallel.tp=2 --parallel.pp=1 --parallel.dp=8");
  REQUIRE(given.status == 0);
  CHECK_THAT(given.out, !Catch::Contains("chosen"));
  // Nothing fits eight 24 GB cards: the first valid layout runs, says so, and the step is out of memory.
  const Outcome none = run_dtsim("run " + file + " --model.name=llama3.1-405b --cluster.gpu=RTX-4090 --cluster.nodes=1 "
                                 "--cluster.node_kind=pcie");
  CHECK(none.status == 4);
  CHECK_THAT(none.out, Catch::Contains("no layout fits 24.0 GiB"));
}

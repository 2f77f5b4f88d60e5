// dtsim validate on mixture-of-experts rows: a row whose model column names a catalog MoE model
// runs that model (its expert columns and EP size on top), a row that looks like an MoE model
// but lacks what it needs is skipped with the missing columns named, and a dense row is built as
// before.
#include <boost/program_options.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <utility>

#include "sim/validation/validate.hpp"

using namespace dtsim;

namespace {

const std::string kHeader =
    "run_id,source_id,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,global_batch_seqs,micro_batch,"
    "num_gpus,gpu_type,nic_gbps,nics_per_node,gpus_per_node,precision,tp,pp,cp,vpp_chunks,sequence_parallel,"
    "recompute,zero_or_sharding,framework,iter_time_s,tokens_per_s_per_gpu,tflops_per_gpu,flops_counting,ep,experts,"
    "active_experts,shared_experts,expert_ffn_hidden,dense_layers\n";

// One row: the model columns, the layout (GPUs, TP, PP) and the expert columns; 1000 tokens/s.
std::string row(const std::string& id, const std::string& model, const std::string& shape, int gpus, int tp, int pp,
                const std::string& experts, const std::string& precision = "bf16") {
  return id + ",X," + model + "," + shape + ",4096,64,," + std::to_string(gpus) + ",H100-SXM5-80GB,,,8," + precision + "," +
         std::to_string(tp) + "," + std::to_string(pp) + ",1,1,no,full,,Megatron-Core,,1000,,," + experts + "\n";
}

std::vector<ValidationCase> cases_of(const std::string& rows) {
  std::istringstream csv(kHeader + rows);
  return read_validation_cases(csv, "rows.csv", {});
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST_CASE("an MoE row naming a catalog model runs it with the row's EP size", "[validate][moe]") {
  // Shape columns empty: the catalog's Qwen3-235B-A22B (94 layers, heads of 128, 128 experts).
  const auto cases = cases_of(row("qwen", "Qwen3-235B-A22B", ",,,,,", 64, 4, 2, "8,,,,,") +
                              row("mixtral", "Mixtral 8x7B", "32,4096,32,8,14336,32000", 16, 2, 1, "4,8,2,0,14336,0"));
  REQUIRE(cases.size() == 2);
  for (const ValidationCase& c : cases) {
    INFO(c.row.id << ": " << c.row.skip_reason);
    REQUIRE(c.row.skip_reason.empty());
  }
  const Scenario qwen = validation_scenario(cases[0], "rows.csv");
  CHECK(qwen.model.name == "qwen3-235b-a22b");
  CHECK(qwen.model.experts == 128);
  CHECK(qwen.model.head_dim == 128);
  CHECK(qwen.model.seq_len == 4096);
  CHECK(qwen.plan.ep == 8);
  CHECK(has(cases[0].row.assumptions, "model 'Qwen3-235B-A22B' is the catalog's qwen3-235b-a22b (its shape, attention "
                                      "and experts)"));
  // Columns that agree with the catalog are passed on without a note.
  const Scenario mixtral = validation_scenario(cases[1], "rows.csv");
  CHECK(mixtral.model.name == "mixtral-8x7b");
  CHECK(mixtral.model.experts == 8);
  CHECK(mixtral.model.active_experts == 2);
  CHECK(mixtral.plan.ep == 4);
  for (const std::string& a : cases[1].row.assumptions) CHECK(a.find("replaces the catalog's") == std::string::npos);
  // A column that differs from the catalog replaces its value, and says so.
  const auto more = cases_of(row("mixtral16", "Mixtral 8x7B", ",,,,,", 16, 2, 1, "4,16,,,,"));
  REQUIRE(more[0].row.skip_reason.empty());
  CHECK(has(more[0].row.assumptions, "column experts = 16 replaces the catalog's 8"));
  CHECK(validation_scenario(more[0], "rows.csv").model.experts == 16);
}

TEST_CASE("an MoE row without its expert columns is skipped, naming them", "[validate][moe]") {
  const auto cases = cases_of(row("mixtral_no_ep", "Mixtral-8x22B", ",,,,,", 16, 2, 1, ",,,,,") +
                              row("qwen15", "Qwen1.5-MoE-A2.7B", "24,2048,16,,5632,151936", 8, 1, 1, ",60,,,,") +
                              row("deepseek_v2", "DeepSeek-V2", "60,5120,128,,12288,102400", 64, 1, 4, "8,160,6,2,1536,1"));
  REQUIRE(cases.size() == 3);
  CHECK(cases[0].row.skip_reason == "model 'Mixtral-8x22B' is a mixture of experts (mixtral-8x22b in the catalog); "
                                    "the row lacks column ep");
  CHECK(cases[1].row.skip_reason == "model 'Qwen1.5-MoE-A2.7B' is a mixture of experts; the row lacks columns ep, "
                                    "active_experts, shared_experts, expert_ffn_hidden, dense_layers");
  CHECK_THAT(cases[2].row.skip_reason, Catch::Contains("MLA attention, which only the catalog's deepseek-r1 and "
                                                       "deepseek-v3 carry"));
  for (const ValidationCase& c : cases) CHECK(c.overrides.empty());
}

TEST_CASE("a dense row is built as a custom model of its columns", "[validate][moe]") {
  // A distill of DeepSeek-R1 is a dense Llama, whatever its name begins with.
  const auto cases = cases_of(row("llama", "Llama 3 8B", "32,4096,32,8,14336,128256", 8, 1, 1, ",,,,,") +
                              row("distill", "DeepSeek-R1-Distill-Llama-70B", "80,8192,64,8,28672,128256", 64, 8, 1,
                                  ",,,,,"));
  REQUIRE(cases.size() == 2);
  for (const ValidationCase& c : cases) {
    INFO(c.row.id);
    REQUIRE(c.row.skip_reason.empty());
    CHECK(has(c.overrides, "--model.name=custom"));
    for (const std::string& o : c.overrides) CHECK(o.find("expert") == std::string::npos);
    CHECK_FALSE(has(c.overrides, "--parallel.ep=1"));
    const Scenario sc = validation_scenario(c, "rows.csv");
    CHECK(sc.model.experts == 0);
    CHECK(sc.plan.ep == 1);
  }
}

TEST_CASE("a row's FP8 recipe maps to its training.precision", "[validate][moe]") {
  // NeMo/Megatron-Bridge's names (FP8-CS, FP8-MX, MXFP8, NVFP4); other FP8 text is delayed scaling.
  const std::pair<const char*, const char*> named[] = {
      {"FP8-CS", "fp8_current"}, {"\"FP8 (per-tensor current scaling, FP8-CS)\"", "fp8_current"},
      {"FP8-MX", "mxfp8"},       {"MXFP8", "mxfp8"},
      {"NVFP4", "nvfp4"},        {"amp_fp8", "fp8"},
      {"FP8", "fp8"},            {"bf16", "bf16"},
      {"FP8-SC", "fp8_blockwise"}, {"FP8 blockwise", "fp8_blockwise"}};
  for (const auto& [text, precision] : named) {
    INFO(text);
    const auto cases = cases_of(row("q", "Qwen3-30B-A3B", ",,,,,", 16, 1, 1, "8,,,,,", text));
    REQUIRE(cases[0].row.skip_reason.empty());
    CHECK(has(cases[0].overrides, std::string("--training.precision=") + precision));
  }
}

TEST_CASE("an MoE row whose EP folds over TP and DP runs with parallel folding", "[validate][moe]") {
  // Megatron-Bridge's Qwen3-235B-A22B on 256 H100: TP 2, PP 8 (DP 16), EP 32 over TP x DP.
  const auto cases = cases_of(row("folded", "Qwen3-235B-A22B", ",,,,,", 256, 2, 8, "32,,,,,") +
                              row("carved", "Qwen3-235B-A22B", ",,,,,", 256, 2, 8, "16,,,,,"));
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].row.skip_reason.empty());
  CHECK(has(cases[0].overrides, "--parallel.etp=1"));
  CHECK(has(cases[0].row.assumptions, "etp = 1 (EP 32 spans TP x CP x DP = 2 x 1 x 16: parallel folding)"));
  CHECK(validation_scenario(cases[0], "rows.csv").plan.expert_folding());
  CHECK_FALSE(has(cases[1].overrides, "--parallel.etp=1"));
}

TEST_CASE("a row's etp, moe_dispatcher and moe_a2a_overlap columns run as the parallel keys", "[validate][moe]") {
  std::string header = kHeader;
  header.insert(header.size() - 1, ",etp,moe_dispatcher,moe_a2a_overlap");
  std::string r = row("q", "Qwen3-235B-A22B", ",,,,,", 256, 2, 8, "32,,,,,");
  r.insert(r.size() - 1, ",1,alltoall,true");
  std::istringstream csv(header + r);
  auto cases = read_validation_cases(csv, "rows.csv", {});
  REQUIRE(cases.size() == 1);
  for (const char* key : {"--parallel.etp=1", "--parallel.moe_dispatcher=alltoall", "--parallel.moe_a2a_overlap=true"})
    CHECK(has(cases[0].overrides, key));
  CHECK(cases[0].row.assumptions.end() ==
        std::find_if(cases[0].row.assumptions.begin(), cases[0].row.assumptions.end(),
                     [](const std::string& a) { return a.rfind("etp", 0) == 0; }));  // stated, not assumed
  const Scenario sc = validation_scenario(cases[0], "rows.csv");
  CHECK((sc.plan.etp == 1 && sc.plan.moe_a2a_overlap && sc.plan.moe_dispatcher == MoeDispatcher::alltoall));
}

TEST_CASE("every MoE row of published_runs.csv builds as its catalog model, none skipped", "[validate][moe]") {
  std::ifstream in(std::string(DTSIM_SOURCE_DIR) + "/tests/validation/published_runs.csv");
  int moe_rows = 0;
  for (const ValidationCase& c : read_validation_cases(in, "published_runs.csv", {"MBRIDGE_PERF"})) {
    INFO(c.row.id);
    CHECK(c.row.skip_reason.empty());
    Scenario sc = validation_scenario(c, "published_runs.csv");
    if (!sc.model.is_moe()) continue;
    ++moe_rows;
    validate_plan(sc.plan, sc.model, sc.plan.num_ranks());  // the layout the row runs is valid
    if (sc.plan.tp > 1) CHECK(sc.plan.expert_folding());  // Megatron-Bridge's Qwen3 recipes: expert TP 1
    // The catalog's own Blackwell parts, not the nearest name.
    for (const auto& [system, gpu] : {std::pair{"_gb200_", "GB200"}, {"_gb300_", "GB300"}, {"_b300_", "B300"}})
      if (c.row.id.find(system) != std::string::npos) CHECK(sc.cluster.gpu == gpu);
  }
  CHECK(moe_rows == 35);  // Qwen3-30B-A3B, Qwen3-235B-A22B, GPT-OSS-120B
}

TEST_CASE("a selective row's recompute text names the modules it reruns", "[validate][moe]") {
  // Megatron-Bridge's GPT-OSS-120B H100 recipe: recompute_modules = [layernorm, moe_act].
  std::string r = row("g", "GPT-OSS-120B", ",,,,,", 64, 1, 4, "8,,,,,");
  r.replace(r.find(",full,"), 6, ",\"selective (recompute_modules layernorm, moe_act)\",");
  const auto cases = cases_of(r + row("plain", "GPT-OSS-120B", ",,,,,", 64, 1, 4, "8,,,,,"));
  REQUIRE(cases.size() == 2);
  CHECK(has(cases[0].overrides, "--training.recompute=selective"));
  CHECK(has(cases[0].overrides, "--training.recompute_modules=layernorm,moe_act"));
  for (const std::string& o : cases[1].overrides) CHECK(o.rfind("--training.recompute_modules", 0) != 0);
}

// dtsim serve against published inference measurements (tests/validation/inference_runs.csv):
// every row is simulated or skipped with its reason, the error is the row's metric against dtsim's,
// llama.cpp's GGUF formats weigh what their files weigh, and `dtsim validate` takes the file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/base/error.hpp"
#include "sim/validation/inference_validate.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/model.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

namespace {

const std::string kRuns = std::string(DTSIM_SOURCE_DIR) + "/tests/validation/inference_runs.csv";

const InferenceValidationRow& row(const std::vector<InferenceValidationRow>& rows, const std::string& id) {
  for (const InferenceValidationRow& r : rows)
    if (r.id == id) return r;
  FAIL("no row " << id);
  return rows.front();
}

}  // namespace

TEST_CASE("llama.cpp's Q4_K_M and Q4_0 weigh what their files weigh", "[serve][validation]") {
  // ggml's blocks: Q4_0 18 bytes per 32 weights; Q4_K_M ~4.8 bits in the linear layers.
  CHECK(weight_format_bytes(WeightFormat::q4_0) == Approx(18.0 / 32));
  CHECK(weight_format_bytes(WeightFormat::q4_k_m) * 8 == Approx(4.8).epsilon(0.01));
  // llama-bench prints the model file's size: 4.58 GiB for XDAI_GPUBENCH's Llama 3 8B Q4_K_M (the
  // CSV's notes), 3.56 GiB for llama 7B Q4_0. The memory model's weights (the embedding counted at
  // Q6_K like the head) land within 3 % of both.
  InferenceSetup s;
  s.format = WeightFormat::q4_k_m;
  const MemoryNeed q4km = inference_memory(find_model("llama3-8b"), s, 1, 1);
  CHECK(q4km.items.front().bytes / (1 << 30) == Approx(4.58).epsilon(0.03));
  s.format = WeightFormat::q4_0;
  const MemoryNeed q40 = inference_memory(find_model("llama2-7b"), s, 1, 1);
  CHECK(q40.items.front().bytes / (1 << 30) == Approx(3.56).epsilon(0.03));
}

TEST_CASE("every published inference row is simulated or skipped with its reason", "[serve][validation]") {
  const std::vector<InferenceValidationRow> rows = validate_inference_runs(kRuns, {});
  REQUIRE(rows.size() == 58);
  int built = 0;
  for (const InferenceValidationRow& r : rows) {
    INFO(r.id << ": " << r.skip_reason);
    CHECK(r.built == r.skip_reason.empty());
    if (!r.built) continue;
    ++built;
    CHECK(r.predicted > 0);
    CHECK(r.error_pct == Approx(100 * (r.predicted - r.measured) / r.measured));
  }
  // llama.cpp: XDAI_GPUBENCH's 28 rows on one GPU and layer splits over 2-8 GPUs, PR 4766's two.
  CHECK(built == 30);
  // Qwen3.6-27B is no catalog model; TensorRT-LLM's rows give no batch; MLPerf runs TP-2
  // replicas; GH200 is no catalog GPU.
  CHECK_THAT(row(rows, "club3090_pr702_nvlink_decode_code").skip_reason,
             Catch::Contains("model = 'qwen3.6-27b': not in dtsim's model catalog"));
  CHECK_THAT(row(rows, "trtllm_v1_llama31-8b_h100_tp1_128_128").skip_reason, Catch::Contains("batch = ''"));
  CHECK_THAT(row(rows, "mlperf41_dgxh100_llama2-70b-99.9_offline_tokps").skip_reason, Catch::Contains("replicas"));
  // A layer split runs its GPUs in turn; RunPod did not record how they were connected.
  const InferenceValidationRow& split = row(rows, "xdai_3090_4_v3_70b_q4_k_m_tg512");
  CHECK(std::find(split.overrides.begin(), split.overrides.end(), "--parallel.pp=4") != split.overrides.end());
  CHECK_THAT(split.assumptions.front(), Catch::Contains("layer split"));
  // A tg row decodes from the BOS token; PR 4766's build predates llama.cpp's CUDA graphs.
  const InferenceValidationRow& tg = row(rows, "llamacpp_pr4766_3090_7b_q4_0_tg128");
  CHECK(tg.metric == "decode_tokens_per_s");
  CHECK_THAT(tg.assumptions.front(), Catch::Contains("1-token prompt"));
  CHECK(std::find(tg.overrides.begin(), tg.overrides.end(), "--inference.cuda_graphs=false") != tg.overrides.end());
  CHECK(std::find(tg.overrides.begin(), tg.overrides.end(), "--inference.weights=q4_0") != tg.overrides.end());
  // Decoding fp16 weights at batch 1 is bound by streaming them: on the consumer cards, whose
  // llama.cpp kernels reach their memory rate, dtsim is within 10 % of the measurement.
  for (const char* id : {"xdai_3090_v3_8b_fp16_tg512", "xdai_4090_v3_8b_fp16_tg512", "xdai_4090_v3_8b_fp16_tg4096"})
    CHECK(std::abs(row(rows, id).error_pct) < 10);
  // So are the layer splits of Llama 3 70B over 2-8 consumer cards: each GPU streams its layers
  // in turn, and the hand-offs are a token's hidden state.
  for (const char* id : {"xdai_3090_2_v3_70b_q4_k_m_tg512", "xdai_4090_2_v3_70b_q4_k_m_tg512",
                         "xdai_3090_4_v3_70b_q4_k_m_tg512", "xdai_4090_4_v3_70b_q4_k_m_tg512",
                         "xdai_3090_6_v3_70b_fp16_tg512", "xdai_4090_8_v3_70b_fp16_tg512"}) {
    INFO(id);
    CHECK(std::abs(row(rows, id).error_pct) < 10);
  }
}

TEST_CASE("decode speed over the published rows: median |error| within the issue's 20 %", "[serve][validation]") {
  // The bound of the serving validation: decode tokens/s, every decode row dtsim builds. The
  // data-centre cards under llama.cpp at batch 1 stay far above their measurement (+55 to +100 %:
  // kernels that keep too few bytes in flight, docs/validation.md); the median holds.
  std::vector<double> errors;
  for (const InferenceValidationRow& r : validate_inference_runs(kRuns, {}))
    if (r.built && r.metric == "decode_tokens_per_s") errors.push_back(std::abs(r.error_pct));
  REQUIRE(errors.size() == 26);
  std::sort(errors.begin(), errors.end());
  const double median = (errors[12] + errors[13]) / 2;
  INFO("median |error| " << median << " %");
  CHECK(median <= 20);
}

TEST_CASE("an inference CSV with a missing column or a bad value is refused naming it", "[serve][validation]") {
  std::istringstream no_metric("id,source,engine,model\nx,S,llama.cpp,llama3-8b\n");
  CHECK_THROWS_WITH(read_inference_rows(no_metric, "bad.csv", {}),
                    Catch::Contains("bad.csv: missing column 'weight_format'"));
  std::istringstream bad(
      "id,source,engine,model,weight_format,kv_precision,gpu,gpus,interconnect,tp,pp,batch,prompt_tokens,"
      "output_tokens,metric,value\n"
      "a,S,vLLM,llama3-8b,Q3_K_S,,RTX 3090,1,,1,1,1,0,128,decode_tokens_per_s,50\n"
      "b,S,vLLM,llama3-8b,fp16,,RTX 3090,1,,1,1,1,0,128,tokens_per_watt,50\n");
  const std::vector<InferenceValidationRow> rows = read_inference_rows(bad, "bad.csv", {});
  REQUIRE(rows.size() == 2);
  CHECK_THAT(rows[0].skip_reason, Catch::Contains("weight_format = 'Q3_K_S'") && Catch::Contains("Q4_K_M"));
  CHECK_THAT(rows[1].skip_reason, Catch::Contains("metric = 'tokens_per_watt'") && Catch::Contains("TPOT_ms"));
}

TEST_CASE("dtsim validate compares an inference CSV through dtsim serve", "[serve][validation][cli]") {
  const fs::path out = fs::temp_directory_path() / "dtsim_serve_validate.json";
  const std::string cmd = std::string(DTSIM_BINARY) + " validate " + kRuns + " --source LLAMACPP_PR4766 --json >" +
                          out.string();
  REQUIRE(WEXITSTATUS(std::system(cmd.c_str())) == 0);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  CHECK_THAT(text.str(), Catch::StartsWith("{\"rows\": [{\"id\": \"llamacpp_pr4766_3090_7b_q4_0_tg128\"") &&
                             Catch::Contains("\"sources\": [{\"source\": \"LLAMACPP_PR4766\", \"built\": 2") &&
                             Catch::Contains("\"median_abs_error_pct\": "));
  fs::remove(out);
}

// Inference validation rows -> dtsim serve overrides, and the metric each row measured.
#include "sim/validation/inference_row.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "sim/base/error.hpp"
#include "sim/scenario/serve.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/model.hpp"

namespace dtsim {
namespace {

using Row = std::map<std::string, std::string>;

std::string at(const Row& row, const char* column) {
  const auto it = row.find(column);
  return it == row.end() ? "" : it->second;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// A whole number >= minimum, or InputError naming the column and what the source gave.
int count(const Row& row, const char* column, int minimum, std::string_view meaning) {
  const std::string text = at(row, column);
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < minimum)
    throw InputError(fmt::format("{} = '{}': the source gives no {} (a whole number >= {} is needed)", column, text,
                                 meaning, minimum));
  return value;
}

// llama.cpp's quantization names by their block layouts (ggml-common.h, llama_tensor_get_type;
// memory_fit.cpp): Q4_0 is 4.5 bits per weight with its scales, Q4_K_M about 4.8 with its Q6_K
// tensors. "int4 (...)" names a group-wise W4A16 checkpoint (GPTQ, AWQ, AutoRound).
std::string weight_format(const std::string& text) {
  if (text == "fp16" || text == "bf16" || text == "fp8" || text == "int8") return text;
  if (text == "Q4_0") return "q4_0";
  if (text == "Q4_K_M") return "q4_k_m";
  if (text.rfind("int4", 0) == 0) return "int4";
  throw InputError(fmt::format("weight_format = '{}': no dtsim weight format for it (mapped: fp16, bf16, fp8, int8, "
                               "int4 ..., and llama.cpp's Q4_0, Q4_K_M)",
                               text));
}

std::string kv_format(const std::string& text, std::vector<std::string>& assumptions) {
  if (text.empty()) {
    assumptions.push_back("kv_precision empty: a 16-bit KV cache");
    return "bf16";
  }
  if (text == "f16" || text == "fp16" || text == "bf16") return "bf16";
  if (text.rfind("fp8", 0) == 0) return "fp8";
  throw InputError(fmt::format("kv_precision = '{}': valid: f16, fp16, bf16, fp8 ...", text));
}

std::string node_kind(const std::string& interconnect, int gpus, int tp) {
  if (interconnect == "nvlink-bridge") return "nvlink_pairs";
  if (interconnect == "pcie") return "pcie";
  if (interconnect == "nvswitch") return "nvswitch";
  // One GPU uses no GPU-to-GPU path; a layer split (tp 1) hands one token's hidden state (16 KiB
  // for a 8192-wide model) between GPUs per step, which no path makes count.
  if (tp == 1 && interconnect.empty()) return "pcie";
  throw InputError(fmt::format("interconnect = '{}' on {} GPUs: valid: nvlink-bridge, pcie, nvswitch", interconnect,
                               gpus));
}

// The metric column's first word: what the row measured.
std::string metric_name(const std::string& text) {
  const std::string name = text.substr(0, text.find(' '));
  for (const char* known : {"decode_tokens_per_s", "prefill_tokens_per_s", "wall_tokens_per_s",
                            "total_output_tokens_per_s", "TPOT_ms", "TTFT_ms"})
    if (name == known) return name;
  throw InputError(fmt::format("metric = '{}': valid: decode_tokens_per_s, prefill_tokens_per_s, wall_tokens_per_s, "
                               "total_output_tokens_per_s, TPOT_ms, TTFT_ms",
                               text));
}

}  // namespace

InferenceRowScenario inference_row_scenario(const Row& row) {
  InferenceRowScenario out;
  out.metric = metric_name(at(row, "metric"));
  const std::string value = at(row, "value");
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out.measured);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || !(out.measured > 0))
    throw InputError(fmt::format("value = '{}': a positive number is needed", value));

  const std::string model = at(row, "model");
  try {
    find_model(model);
  } catch (const InputError&) {
    throw InputError(fmt::format("model = '{}': not in dtsim's model catalog (dtsim catalog models)", model));
  }
  const std::string gpu = at(row, "gpu");
  try {
    find_gpu(gpu);
  } catch (const InputError&) {
    throw InputError(fmt::format("gpu = '{}': not in dtsim's GPU catalog (dtsim catalog gpus)", gpu));
  }
  const int gpus = count(row, "gpus", 1, "GPU count");
  const int tp = count(row, "tp", 1, "tensor-parallel size");
  const int pp = count(row, "pp", 1, "pipeline size");
  if (tp * pp != gpus)
    throw InputError(fmt::format("tp = {} x pp = {} on gpus = {}: {} model replicas; dtsim serve simulates one over all "
                                 "its GPUs",
                                 tp, pp, gpus, static_cast<double>(gpus) / (tp * pp)));
  // llama.cpp's --split-mode layer: whole layers on each GPU, run one after another for a batch.
  if (pp > 1) out.assumptions.push_back(fmt::format("pp {}: llama.cpp's layer split, the GPUs in turn", pp));
  if (gpus > 1 && tp == 1 && at(row, "interconnect").empty())
    out.assumptions.push_back("interconnect not recorded: PCIe between the GPUs of the layer split");
  const int batch = count(row, "batch", 1, "batch of concurrent sequences");
  const int prompt = count(row, "prompt_tokens", 0, "prompt length");
  const int output = count(row, "output_tokens", 0, "output length");

  // llama-bench's `tg N` decodes N tokens from its BOS token, `pp N` runs one N-token prompt:
  // dtsim serve's request has a prompt (here the BOS token) and at least one output token.
  if (prompt == 0) out.assumptions.push_back("prompt_tokens 0 (llama-bench tg): a 1-token prompt, the BOS token");
  if (output == 0) out.assumptions.push_back("output_tokens 0 (llama-bench pp): one output token; the prefill is compared");
  const std::string engine = at(row, "engine");
  // llama.cpp replays a decode step as a CUDA graph only in builds with GGML_CUDA_USE_GRAPHS
  // (ggml-org/llama.cpp pull request 6766, merged May 2024); older builds launch every kernel.
  const bool graphs = !contains(engine, "llama.cpp") || contains(engine, "GRAPHS");
  if (!graphs) out.assumptions.push_back("llama.cpp without CUDA graphs: one launch gap per kernel");

  out.overrides = {
      "--model.name=" + model,
      "--cluster.gpu=" + gpu,
      "--cluster.nodes=1",
      fmt::format("--cluster.gpus_per_node={}", gpus),
      "--cluster.node_kind=" + node_kind(at(row, "interconnect"), gpus, tp),
      fmt::format("--parallel.tp={}", tp),
      fmt::format("--parallel.pp={}", pp),
      "--inference.weights=" + weight_format(at(row, "weight_format")),
      "--inference.kv_cache=" + kv_format(at(row, "kv_precision"), out.assumptions),
      fmt::format("--inference.batch={}", batch),
      fmt::format("--inference.prompt_tokens={}", std::max(prompt, 1)),
      fmt::format("--inference.output_tokens={}", std::max(output, 1)),
      fmt::format("--inference.cuda_graphs={}", graphs ? "true" : "false"),
  };
  if (at(row, "interconnect") == "pcie" && gpus > 1) {
    out.overrides.push_back("--cluster.p2p=false");  // the rows' "pcie": no peer path, through the host
    out.assumptions.push_back("interconnect pcie: no GPU peer-to-peer (cluster.p2p = false)");
  }
  return out;
}

double inference_metric(const std::string& metric, const ServeResult& r, const ServeSetup& s) {
  if (metric == "decode_tokens_per_s") return 1 / r.tpot.total_s;  // per sequence
  if (metric == "prefill_tokens_per_s") return static_cast<double>(s.batch) * s.prompt / r.ttft_s;
  if (metric == "wall_tokens_per_s") return s.output / r.request_s;  // per sequence, the prefill included
  if (metric == "total_output_tokens_per_s") return r.request_tokens_per_s;
  if (metric == "TPOT_ms") return 1e3 * r.tpot.total_s;
  return 1e3 * r.ttft_s;  // TTFT_ms (metric_name admits no other)
}

}  // namespace dtsim

// One published inference measurement (a row of tests/validation/inference_runs.csv) as a
// `dtsim serve` scenario: the catalog model and GPU, the weight format (llama.cpp's quantization
// names mapped to dtsim's formats), TP over the row's GPUs joined as its interconnect says, batch
// and request lengths, CUDA graphs as the engine ran them, and the metric the row measured.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace dtsim {

struct ServeResult;
struct ServeSetup;

// The columns an inference CSV must have (the validation file's; `notes` and `source_detail` are
// read by people only).
inline constexpr const char* kInferenceColumns[] = {"id",  "source", "engine", "model", "weight_format",
                                                    "kv_precision", "gpu", "gpus", "interconnect", "tp",
                                                    "pp", "batch", "prompt_tokens", "output_tokens",
                                                    "metric", "value"};

struct InferenceRowScenario {
  std::vector<std::string> overrides;    // --section.key=value of a serve scenario
  std::vector<std::string> assumptions;  // what the row does not say, or says differently, and was chosen
  std::string metric;                    // decode_tokens_per_s, prefill_tokens_per_s, wall_tokens_per_s,
                                         // total_output_tokens_per_s, TPOT_ms or TTFT_ms
  double measured = 0;
};

// The scenario of a row (columns by name); throws InputError with the reason a row cannot be
// simulated (a model or GPU outside the catalogs, a layer split, a batch or length the source
// does not give, a weight format dtsim has no counterpart for), naming the column and its value.
InferenceRowScenario inference_row_scenario(const std::map<std::string, std::string>& row);

// The row's metric from a simulated request of `setup`.
double inference_metric(const std::string& metric, const ServeResult& r, const ServeSetup& setup);

}  // namespace dtsim

// Validation rows -> scenario overrides -> simulated step -> error against the measurement.
#include "sim/validation/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <tbb/parallel_for.h>

#include "sim/base/error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/csv.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"

namespace po = boost::program_options;

namespace dtsim {
namespace {

bool contains(const std::string& text, const char* what) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return lower.find(what) != std::string::npos;
}

std::string precision_of(const std::string& text) {
  if (contains(text, "fp8")) return "fp8";
  if (contains(text, "bf16")) return "bf16";
  if (contains(text, "fp16")) return "fp16";
  if (contains(text, "fp32")) return "fp32";
  return "bf16";
}

// The reason a row cannot be simulated today, or "" when it can.
std::string unsupported(const std::map<std::string, std::string>& r) {
  const auto& get = [&](const char* k) { return r.at(k); };
  if (get("iter_time_s").empty()) return "no measured iteration time";
  if (contains(get("model"), "one transformer layer")) return "single-layer measurement, not a step";
  for (const char* k : {"layers", "hidden", "heads", "vocab", "seq_len", "global_batch_seqs", "micro_batch",
                        "num_gpus", "gpus_per_node", "tp", "pp"})
    if (get(k).empty()) return fmt::format("column {} is empty", k);
  if (!get("cp").empty() && get("cp") != "1") return "context parallelism is not modelled yet";
  return "";
}

int zero_stage_of(const std::string& text) {
  if (contains(text, "zero-3") || contains(text, "full_shard") || contains(text, "fsdp2")) return 3;
  if (contains(text, "zero-2") || contains(text, "shard_grad_op")) return 2;
  if (contains(text, "zero-1") || contains(text, "distributed optimizer")) return 1;
  return 0;
}

std::string recompute_of(const std::string& text) {
  if (contains(text, "selective")) return "selective";
  if (contains(text, "full")) return "full";
  return "none";
}

// Megatron-LM's local DDP reduces gradients after the backward pass; PyTorch DDP, FSDP and
// DeepSpeed overlap the reduction with it.
bool dp_overlap_of(const std::string& framework) {
  return !(contains(framework, "megatron") && !contains(framework, "ddp-impl torch"));
}

// A Megatron-LM dated before 2022 (the framework column's first four-digit year).
bool megatron_before_2022(const std::string& framework) {
  if (!contains(framework, "megatron")) return false;
  for (std::size_t i = framework.find("20"); i != std::string::npos; i = framework.find("20", i + 1)) {
    int year = 0;
    const auto [end, ec] = std::from_chars(framework.data() + i, framework.data() + std::min(i + 4, framework.size()), year);
    if (ec == std::errc() && end == framework.data() + i + 4) return year < 2022;
  }
  return false;  // an undated Megatron-LM: today's
}

// Megatron-LM fuses the weight-gradient accumulation into its GEMMs from 2022 on; earlier
// Megatron and the PyTorch-autograd frameworks (DDP, FSDP, DeepSpeed) add each micro-batch's
// gradients with a kernel of their own.
// Megatron-LM also overlaps the backward pass's TP communication with the weight-gradient GEMMs
// from 2022 on (asynchronous TP all-reduce; with SP, the re-gather and the reduce-scatter).
bool megatron_from_2022(const std::string& framework) {
  return contains(framework, "megatron") && !megatron_before_2022(framework);
}

// Gradients reduced in fp32: Composer/llm-foundry's FSDP "DEFAULT" mixed precision ("PURE": in
// the training precision) and Megatron-LM with bf16 (fp32 main gradients); Megatron with fp16
// all-reduces fp16 gradients.
bool grad_reduce_fp32_of(const std::string& framework, const std::string& precision) {
  return contains(framework, "mp_mode default") || (contains(framework, "megatron") && precision == "bf16");
}

// Dropout as the models were trained: MPT's llm-foundry configurations set every dropout to 0,
// and Llama (torchtitan) has none; Megatron's GPT models use 0.1.
bool dropout_of(const std::string& framework) {
  return !(contains(framework, "llm-foundry") || contains(framework, "torchtitan"));
}

// Fused attention where the framework names it (flash-attn, PyTorch SDPA in torchtitan), in
// its Triton version where it says so (llm-foundry's attn_impl: triton).
std::string attention_of(const std::map<std::string, std::string>& r) {
  const std::string& f = r.at("framework");
  const bool fused = contains(f, "flash") || contains(f, "sdpa") || contains(f, "torchtitan") || contains(r.at("notes"), "flash");
  if (!fused) return "standard";
  return contains(f, "triton") ? "flash_triton" : "flash";
}

// Column `key` as an integer from 1 to the GPU limit (the sizes the overrides compute with).
long long count_of(const std::map<std::string, std::string>& r, const char* key) {
  const std::string& text = r.at(key);
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > limits::kMaxGpus)
    throw InputError(fmt::format("column {} = '{}': must be an integer from 1 to {}", key, text, limits::kMaxGpus));
  return value;
}

std::vector<std::string> overrides(const std::map<std::string, std::string>& r) {
  const auto& get = [&](const char* k) { return r.at(k); };
  const long long gpus = count_of(r, "num_gpus"), per_node = count_of(r, "gpus_per_node");
  const long long tp = count_of(r, "tp"), pp = count_of(r, "pp");
  const std::string gpu = get("gpu_type").substr(0, get("gpu_type").find(' '));
  const long long vpp = get("vpp_chunks").empty() ? 1 : count_of(r, "vpp_chunks");
  std::vector<std::string> a = {
      "--model.name=custom", "--model.layers=" + get("layers"), "--model.hidden=" + get("hidden"),
      "--model.heads=" + get("heads"), "--model.vocab=" + get("vocab"), "--model.seq_len=" + get("seq_len"),
      "--model.position_embedding=learned", "--training.global_batch=" + get("global_batch_seqs"),
      "--training.micro_batch=" + get("micro_batch"), "--training.precision=" + precision_of(get("precision")),
      "--training.recompute=" + recompute_of(get("recompute")),
      "--training.attention=" + attention_of(r),
      fmt::format("--parallel.tp={}", tp), fmt::format("--parallel.pp={}", pp),
      fmt::format("--parallel.dp={}", gpus / (tp * pp)),
      fmt::format("--parallel.zero_stage={}", zero_stage_of(get("zero_or_sharding"))),
      std::string("--parallel.sequence_parallel=") + (get("sequence_parallel") == "yes" ? "true" : "false"),
      std::string("--parallel.dp_overlap=") + (dp_overlap_of(get("framework")) ? "true" : "false"),
      std::string("--training.fused_grad_accumulation=") + (megatron_from_2022(get("framework")) ? "true" : "false"),
      std::string("--parallel.tp_overlap=") + (megatron_from_2022(get("framework")) ? "true" : "false"),
      std::string("--parallel.grad_reduce_fp32=") + (grad_reduce_fp32_of(get("framework"), precision_of(get("precision"))) ? "true" : "false"),
      std::string("--training.dropout=") + (dropout_of(get("framework")) ? "true" : "false"),
      "--parallel.stage_layers=auto", "--cluster.gpu=" + gpu,
      fmt::format("--cluster.nodes={}", std::max(gpus / per_node, 1LL)),
      fmt::format("--cluster.gpus_per_node={}", std::min(per_node, gpus)), "--output.trace_detail=summary"};
  if (vpp > 1) {
    a.push_back("--parallel.schedule=interleaved");
    a.push_back(fmt::format("--parallel.virtual_stages={}", vpp));
  }
  if (!get("ffn_hidden").empty()) a.push_back("--model.ffn_hidden=" + get("ffn_hidden"));
  if (!get("kv_heads").empty()) a.push_back("--model.kv_heads=" + get("kv_heads"));
  if (!get("nics_per_node").empty()) a.push_back("--cluster.nics_per_node=" + get("nics_per_node"));
  if (!get("nic_gbps").empty()) a.push_back("--cluster.nic_gbps=" + get("nic_gbps"));
  a.push_back(contains(get("notes") + get("framework"), "roce") ? "--cluster.nic_kind=ethernet"
                                                                  : "--cluster.nic_kind=infiniband");
  return a;
}

double measured_of(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value <= 0)
    throw InputError(fmt::format("column iter_time_s = '{}': must be a number of seconds > 0", text));
  return value;
}

}  // namespace

std::vector<ValidationCase> read_validation_cases(std::istream& in, const std::string& name,
                                                  const std::vector<std::string>& sources) {
  const auto records = parse_csv(in);
  if (records.empty()) throw InputError(fmt::format("{}: empty file", name));
  const std::vector<std::string>& header = records.front();
  const char* required[] = {"run_id", "source_id", "model", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                            "vocab", "seq_len", "global_batch_seqs", "micro_batch", "num_gpus", "gpu_type",
                            "nic_gbps", "nics_per_node", "gpus_per_node", "precision", "tp", "pp", "cp",
                            "vpp_chunks", "sequence_parallel", "recompute", "zero_or_sharding", "iter_time_s"};
  for (const char* col : required)
    if (std::find(header.begin(), header.end(), col) == header.end())
      throw InputError(fmt::format("{}: missing column '{}' (the columns of shared/validation/runs.csv)", name, col));
  std::vector<ValidationCase> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    std::map<std::string, std::string> r;
    r["framework"] = r["notes"] = "";  // optional columns
    for (std::size_t c = 0; c < header.size(); ++c) r[header[c]] = c < records[i].size() ? records[i][c] : "";
    if (!sources.empty() && std::find(sources.begin(), sources.end(), r["source_id"]) == sources.end()) continue;
    ValidationCase vc;
    vc.row.id = r["run_id"];
    vc.row.source = r["source_id"];
    vc.row.skip_reason = unsupported(r);
    if (vc.row.skip_reason.empty()) {
      try {
        vc.overrides = overrides(r);
        vc.row.measured_s = measured_of(r["iter_time_s"]);
      } catch (const InputError& e) {
        vc.overrides.clear();
        vc.row.skip_reason = e.what();
      }
    }
    out.push_back(std::move(vc));
  }
  return out;
}

Scenario validation_scenario(const ValidationCase& c, const std::string& name) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(c.overrides).options(scenario_options()).run(), vm);
  } catch (const po::error& e) {
    throw InputError(e.what());
  }
  Scenario sc = load_scenario("", vm);
  sc.source = fmt::format("{} row {}", name, c.row.id);
  return sc;
}

std::vector<ValidationRow> validate_runs(const std::string& csv_path, const std::vector<std::string>& sources) {
  std::ifstream in(csv_path);
  if (!in) throw InputError(fmt::format("{}: cannot open the validation file", csv_path));
  std::vector<ValidationCase> cases = read_validation_cases(in, csv_path, sources);
  // Rows are independent simulations: run them on all cores, each writing only its own row.
  tbb::parallel_for(std::size_t{0}, cases.size(), [&](std::size_t i) {
    ValidationRow& row = cases[i].row;
    if (!row.skip_reason.empty()) return;
    try {
      Scenario sc = validation_scenario(cases[i], csv_path);
      row.predicted_s = run_scenario(sc, "", 1, true).summary.step_time_s;
      row.error_pct = 100 * (row.predicted_s - row.measured_s) / row.measured_s;
      row.built = true;
    } catch (const InputError& e) {
      row.skip_reason = e.what();
    }
  });
  std::vector<ValidationRow> out;
  for (const ValidationCase& c : cases) out.push_back(c.row);
  return out;
}

}  // namespace dtsim

// Validation rows -> scenario overrides -> simulated step -> error against the measurement.
#include "sim/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <boost/program_options.hpp>
#include <fstream>
#include <map>
#include <tbb/parallel_for.h>

#include "sim/base/error.hpp"
#include "sim/csv.hpp"
#include "sim/run.hpp"
#include "sim/scenario.hpp"

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

// Fused attention where the framework names it (flash-attn, PyTorch SDPA in torchtitan).
bool flash_attention_of(const std::map<std::string, std::string>& r) {
  const std::string& f = r.at("framework");
  return contains(f, "flash") || contains(f, "sdpa") || contains(f, "torchtitan") || contains(r.at("notes"), "flash");
}

std::vector<std::string> overrides(const std::map<std::string, std::string>& r) {
  const auto& get = [&](const char* k) { return r.at(k); };
  const int gpus = std::stoi(get("num_gpus")), per_node = std::stoi(get("gpus_per_node"));
  const int tp = std::stoi(get("tp")), pp = std::stoi(get("pp"));
  const std::string gpu = get("gpu_type").substr(0, get("gpu_type").find(' '));
  const int vpp = get("vpp_chunks").empty() ? 1 : std::stoi(get("vpp_chunks"));
  std::vector<std::string> a = {
      "--model.name=custom", "--model.layers=" + get("layers"), "--model.hidden=" + get("hidden"),
      "--model.heads=" + get("heads"), "--model.vocab=" + get("vocab"), "--model.seq_len=" + get("seq_len"),
      "--model.position_embedding=learned", "--training.global_batch=" + get("global_batch_seqs"),
      "--training.micro_batch=" + get("micro_batch"), "--training.precision=" + precision_of(get("precision")),
      "--training.recompute=" + recompute_of(get("recompute")),
      std::string("--training.attention=") + (flash_attention_of(r) ? "flash" : "standard"),
      fmt::format("--parallel.tp={}", tp), fmt::format("--parallel.pp={}", pp),
      fmt::format("--parallel.dp={}", gpus / std::max(tp * pp, 1)),
      fmt::format("--parallel.zero_stage={}", zero_stage_of(get("zero_or_sharding"))),
      std::string("--parallel.sequence_parallel=") + (get("sequence_parallel") == "yes" ? "true" : "false"),
      std::string("--parallel.dp_overlap=") + (dp_overlap_of(get("framework")) ? "true" : "false"),
      "--parallel.stage_layers=auto", "--cluster.gpu=" + gpu,
      fmt::format("--cluster.nodes={}", std::max(gpus / per_node, 1)),
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

}  // namespace

std::vector<ValidationRow> validate_runs(const std::string& csv_path, const std::vector<std::string>& sources) {
  std::ifstream in(csv_path);
  if (!in) throw InputError(fmt::format("{}: cannot open the validation file", csv_path));
  const auto records = parse_csv(in);
  if (records.empty()) throw InputError(fmt::format("{}: empty file", csv_path));
  const std::vector<std::string>& header = records.front();
  const char* required[] = {"run_id", "source_id", "model", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                            "vocab", "seq_len", "global_batch_seqs", "micro_batch", "num_gpus", "gpu_type",
                            "nic_gbps", "nics_per_node", "gpus_per_node", "precision", "tp", "pp", "cp",
                            "vpp_chunks", "sequence_parallel", "recompute", "zero_or_sharding", "iter_time_s"};
  for (const char* col : required)
    if (std::find(header.begin(), header.end(), col) == header.end())
      throw InputError(fmt::format("{}: missing column '{}' (the columns of shared/validation/runs.csv)", csv_path, col));
  std::vector<ValidationRow> out;
  std::vector<std::map<std::string, std::string>> fields;
  for (std::size_t i = 1; i < records.size(); ++i) {
    std::map<std::string, std::string> r;
    r["framework"] = r["notes"] = "";  // optional columns
    for (std::size_t c = 0; c < header.size(); ++c) r[header[c]] = c < records[i].size() ? records[i][c] : "";
    if (!sources.empty() && std::find(sources.begin(), sources.end(), r["source_id"]) == sources.end()) continue;
    ValidationRow row;
    row.id = r["run_id"];
    row.source = r["source_id"];
    row.skip_reason = unsupported(r);
    out.push_back(row);
    fields.push_back(std::move(r));
  }
  // Rows are independent simulations: run them on all cores, each writing only its own row.
  tbb::parallel_for(std::size_t{0}, out.size(), [&](std::size_t i) {
    ValidationRow& row = out[i];
    if (!row.skip_reason.empty()) return;
    const std::map<std::string, std::string>& r = fields[i];
    try {
      const std::vector<std::string> args = overrides(r);
      po::variables_map vm;
      po::store(po::command_line_parser(args).options(scenario_options()).run(), vm);
      Scenario sc = load_scenario("", vm);
      sc.source = fmt::format("{} row {}", csv_path, row.id);
      row.measured_s = std::stod(r.at("iter_time_s"));
      row.predicted_s = run_scenario(sc, "").summary.step_time_s;
      row.error_pct = 100 * (row.predicted_s - row.measured_s) / row.measured_s;
      row.built = true;
    } catch (const InputError& e) {
      row.skip_reason = e.what();
    } catch (const std::logic_error&) {  // std::stoi / std::stod on a malformed number
      row.skip_reason = "a numeric column holds something that is not a number";
    }
  });
  return out;
}

}  // namespace dtsim

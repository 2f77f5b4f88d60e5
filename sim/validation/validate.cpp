// Validation rows -> scenario overrides -> simulated step -> error against the measurement.
#include "sim/validation/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <fstream>
#include <tbb/parallel_for.h>

#include "sim/base/csv.hpp"
#include "sim/base/error.hpp"
#include "sim/base/json.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/validation/moe_row.hpp"
#include "sim/validation/row_scenario.hpp"
#include "sim/base/input_file.hpp"
#include "sim/base/nearest.hpp"

namespace po = boost::program_options;

namespace dtsim {

std::vector<ValidationCase> read_validation_cases(std::istream& in, const std::string& name,
                                                  const std::vector<std::string>& sources) {
  const auto records = parse_csv(in);
  if (records.empty()) throw InputError(fmt::format("{}: empty file", name));
  const std::vector<std::string>& header = records.front();
  const char* required[] = {"run_id", "source_id", "model", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                            "vocab", "seq_len", "global_batch_seqs", "micro_batch", "num_gpus", "gpu_type",
                            "nic_gbps", "nics_per_node", "gpus_per_node", "precision", "tp", "pp", "cp",
                            "vpp_chunks", "sequence_parallel", "recompute", "zero_or_sharding", "iter_time_s"};
  // Optional: framework, notes, tokens_per_s_per_gpu, tflops_per_gpu, flops_counting, and the
  // mixture-of-experts columns (kMoeColumns: ep, experts, active_experts, shared_experts,
  // expert_ffn_hidden, dense_layers; kMoeExecutionColumns: etp, moe_dispatcher, moe_a2a_overlap).
  for (const char* col : required)
    if (std::find(header.begin(), header.end(), col) == header.end())
      throw InputError(fmt::format("{}: missing column '{}' (the columns of shared/validation/runs.csv)", name, col));
  std::vector<ValidationCase> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    CsvRow r;
    for (const char* optional : {"framework", "notes", "tokens_per_s_per_gpu", "tflops_per_gpu", "flops_counting"})
      r[optional] = "";
    for (const char* optional : kMoeColumns) r[optional] = "";
    for (const char* optional : kMoeExecutionColumns) r[optional] = "";
    for (std::size_t c = 0; c < header.size(); ++c) r[header[c]] = c < records[i].size() ? records[i][c] : "";
    if (!sources.empty() && std::find(sources.begin(), sources.end(), r["source_id"]) == sources.end()) continue;
    ValidationCase vc;
    vc.row.id = r["run_id"];
    vc.row.source = r["source_id"];
    vc.row.skip_reason = row_unsupported(r);
    if (vc.row.skip_reason.empty()) {
      try {
        RowScenario built = row_scenario(r);
        vc.overrides = std::move(built.overrides);
        vc.row.framework = std::move(built.framework);
        vc.row.framework_rule = std::move(built.framework_rule);
        vc.row.assumptions = std::move(built.assumptions);
        vc.row.compared_on = std::move(built.compared_on);
        vc.row.measured_s = built.measured_s;
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

std::string validation_row_scenario(const std::string& csv_path, const std::string& id) {
  std::ifstream in = open_input_file(csv_path, "the validation file");
  const std::vector<ValidationCase> cases = read_validation_cases(in, csv_path, {});
  const auto found = std::find_if(cases.begin(), cases.end(), [&](const ValidationCase& c) { return c.row.id == id; });
  if (found == cases.end()) {
    std::vector<std::string> ids;
    for (const ValidationCase& c : cases) ids.push_back(c.row.id);
    throw InputError(fmt::format("{}: no run_id '{}'{}; `dtsim validate {}` lists the run ids", csv_path, id,
                                 did_you_mean(id, ids), csv_path));
  }
  const ValidationRow& row = found->row;
  if (!row.skip_reason.empty())
    throw InputError(fmt::format("{}: row {} cannot be simulated: {}", csv_path, id, row.skip_reason));
  const Scenario sc = validation_scenario(*found, csv_path);
  std::string out = fmt::format("# {} row {} ({}), as dtsim validate builds it\n", csv_path, id, row.source);
  out += fmt::format("# measured step {:.6g} s (compared on {}); framework profile {}: {}\n", row.measured_s,
                     row.compared_on, row.framework, row.framework_rule);
  for (const std::string& a : row.assumptions) out += fmt::format("# assumed: {}\n", a);
  return out + sc.resolved_text;
}

std::vector<ValidationRow> validate_runs(const std::string& csv_path, const std::vector<std::string>& sources) {
  std::ifstream in = open_input_file(csv_path, "the validation file");
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

std::string validation_report(const std::vector<ValidationRow>& rows, bool json) {
  std::vector<double> errors;
  for (const ValidationRow& r : rows)
    if (r.built) errors.push_back(std::abs(r.error_pct));
  std::sort(errors.begin(), errors.end());
  const double median = errors.empty() ? 0 : errors.size() % 2 ? errors[errors.size() / 2]
                                                               : 0.5 * (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]);
  const double worst = errors.empty() ? 0 : errors.back();
  std::string out;
  if (json) {
    JsonList list;
    for (const ValidationRow& r : rows) {
      JsonList assumptions;
      for (const std::string& a : r.assumptions) assumptions.add(json_string(a));
      list.add(fmt::format("{{\"run_id\": {}, \"source_id\": {}, \"built\": {}, \"measured_s\": {:.9g}, "
                           "\"predicted_s\": {:.9g}, \"error_pct\": {:.9g}, \"compared_on\": {}, "
                           "\"framework\": {}, \"framework_rule\": {}, \"assumptions\": {}, "
                           "\"skip_reason\": {}, \"caveat\": {}}}",
                           json_string(r.id), json_string(r.source), r.built ? "true" : "false",
                           JsonNumber{r.measured_s}, JsonNumber{r.predicted_s}, JsonNumber{r.error_pct},
                           json_string(r.compared_on), json_string(r.framework), json_string(r.framework_rule),
                           assumptions.str(), json_string(r.skip_reason), json_string(r.caveat)));
    }
    return fmt::format("{{\"rows\": {}, \"built\": {}, \"median_abs_error_pct\": {:.9g}, "
                       "\"max_abs_error_pct\": {:.9g}}}\n", list.str(), errors.size(), JsonNumber{median},
                       JsonNumber{worst});
  }
  out += fmt::format("{:<44} {:>11} {:>11} {:>8}  {:<20} {}\n", "run", "measured s", "predicted s", "error %",
                     "framework", "compared on");
  for (const ValidationRow& r : rows) {
    if (!r.built) {
      out += fmt::format("{:<44} skipped: {}\n", r.id, r.skip_reason);
      continue;
    }
    out += fmt::format("{:<44} {:>11.3f} {:>11.3f} {:>+8.1f}  {:<20} {}{}\n", r.id, r.measured_s, r.predicted_s,
                       r.error_pct, r.framework, r.compared_on, r.caveat.empty() ? "" : "  (" + r.caveat + ")");
    for (const std::string& a : r.assumptions) out += fmt::format("{:<44} assumed: {}\n", "", a);
  }
  out += fmt::format("{} rows simulated, {} skipped; median |error| {:.1f} %, max {:.1f} %\n", errors.size(),
                     rows.size() - errors.size(), median, worst);
  return out;
}

}  // namespace dtsim

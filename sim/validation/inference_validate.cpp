// Inference validation rows -> serve scenarios -> simulated requests -> error on the row's metric.
#include "sim/validation/inference_validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <tbb/parallel_for.h>

#include "sim/base/csv.hpp"
#include "sim/base/error.hpp"
#include "sim/base/json.hpp"
#include "sim/scenario/serve.hpp"
#include "sim/validation/inference_row.hpp"
#include "sim/base/input_file.hpp"

namespace po = boost::program_options;

namespace dtsim {
namespace {

std::vector<std::string> header_of(std::istream& in, const std::string& name) {
  const auto records = parse_csv(in);
  if (records.empty()) throw InputError(fmt::format("{}: empty file", name));
  return records.front();
}

bool has(const std::vector<std::string>& header, const char* column) {
  return std::find(header.begin(), header.end(), column) != header.end();
}

// The row's request: its scenario keys over a file that only opens the sections a serving
// scenario must name.
Scenario row_scenario(const InferenceValidationRow& row, const std::string& name) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(row.overrides).options(scenario_options()).run(), vm);
  } catch (const po::error& e) {
    throw InputError(e.what());
  }
  return load_scenario_text("[model]\n[cluster]\n[inference]\n", fmt::format("{} row {}", name, row.id), vm,
                            SweepSection::refuse, Workload::inference);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Sources in the order their first row appears.
std::vector<std::string> sources_of(const std::vector<InferenceValidationRow>& rows) {
  std::vector<std::string> out;
  for (const InferenceValidationRow& r : rows)
    if (std::find(out.begin(), out.end(), r.source) == out.end()) out.push_back(r.source);
  return out;
}

int built_rows(const std::vector<InferenceValidationRow>& rows, const std::string& source) {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const InferenceValidationRow& r) {
    return r.built && (source.empty() || r.source == source);
  }));
}

}  // namespace

bool is_inference_csv(const std::string& csv_path) {
  std::ifstream in = open_input_file(csv_path, "the validation file");
  const std::vector<std::string> header = header_of(in, csv_path);
  return has(header, "metric") && has(header, "weight_format");
}

std::vector<InferenceValidationRow> read_inference_rows(std::istream& in, const std::string& name,
                                                        const std::vector<std::string>& sources) {
  const auto records = parse_csv(in);
  if (records.empty()) throw InputError(fmt::format("{}: empty file", name));
  const std::vector<std::string>& header = records.front();
  for (const char* column : kInferenceColumns)
    if (!has(header, column))
      throw InputError(fmt::format("{}: missing column '{}' (the columns of tests/validation/inference_runs.csv)", name,
                                   column));
  std::vector<InferenceValidationRow> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    std::map<std::string, std::string> r;
    for (std::size_t c = 0; c < header.size(); ++c) r[header[c]] = c < records[i].size() ? records[i][c] : "";
    if (!sources.empty() && std::find(sources.begin(), sources.end(), r["source"]) == sources.end()) continue;
    InferenceValidationRow row;
    row.id = r["id"];
    row.source = r["source"];
    row.metric = r["metric"].substr(0, r["metric"].find(' '));
    try {
      InferenceRowScenario built = inference_row_scenario(r);
      row.metric = std::move(built.metric);
      row.overrides = std::move(built.overrides);
      row.assumptions = std::move(built.assumptions);
      row.measured = built.measured;
    } catch (const InputError& e) {
      row.skip_reason = e.what();
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<InferenceValidationRow> validate_inference_runs(const std::string& csv_path,
                                                            const std::vector<std::string>& sources) {
  std::ifstream in = open_input_file(csv_path, "the validation file");
  std::vector<InferenceValidationRow> rows = read_inference_rows(in, csv_path, sources);
  // Rows are independent simulations: run them on all cores, each writing only its own row.
  tbb::parallel_for(std::size_t{0}, rows.size(), [&](std::size_t i) {
    InferenceValidationRow& row = rows[i];
    if (!row.skip_reason.empty()) return;
    try {
      Scenario sc = row_scenario(row, csv_path);
      const ServeResult r = run_serve(sc, "");
      if (!r.fits) throw InputError("the request does not fit in the GPUs' memory as dtsim counts it");
      row.predicted = inference_metric(row.metric, r, sc.inference);
      row.error_pct = 100 * (row.predicted - row.measured) / row.measured;
      row.built = true;
    } catch (const InputError& e) {
      row.skip_reason = e.what();
    }
  });
  return rows;
}

double median_abs_error(const std::vector<InferenceValidationRow>& rows, const std::string& source) {
  std::vector<double> errors;
  for (const InferenceValidationRow& r : rows)
    if (r.built && (source.empty() || r.source == source)) errors.push_back(std::abs(r.error_pct));
  return median(errors);
}

std::string inference_validation_report(const std::vector<InferenceValidationRow>& rows, bool json) {
  const std::vector<std::string> sources = sources_of(rows);
  if (json) {
    JsonList list;
    for (const InferenceValidationRow& r : rows) {
      JsonList assumptions;
      for (const std::string& a : r.assumptions) assumptions.add(json_string(a));
      list.add(fmt::format("{{\"id\": {}, \"source\": {}, \"metric\": {}, \"built\": {}, \"measured\": {:.9g}, "
                           "\"predicted\": {:.9g}, \"error_pct\": {:.9g}, \"assumptions\": {}, \"skip_reason\": {}}}",
                           json_string(r.id), json_string(r.source), json_string(r.metric),
                           r.built ? "true" : "false", JsonNumber{r.measured}, JsonNumber{r.predicted},
                           JsonNumber{r.error_pct}, assumptions.str(), json_string(r.skip_reason)));
    }
    JsonList per_source;
    for (const std::string& s : sources)
      per_source.add(fmt::format("{{\"source\": {}, \"built\": {}, \"median_abs_error_pct\": {:.9g}}}",
                                 json_string(s), built_rows(rows, s), JsonNumber{median_abs_error(rows, s)}));
    return fmt::format("{{\"rows\": {}, \"sources\": {}, \"built\": {}, \"median_abs_error_pct\": {:.9g}}}\n",
                       list.str(), per_source.str(), built_rows(rows, ""), JsonNumber{median_abs_error(rows)});
  }
  std::string out = fmt::format("{:<48} {:<26} {:>10} {:>10} {:>8}\n", "row", "metric", "measured", "dtsim", "error %");
  for (const InferenceValidationRow& r : rows) {
    if (!r.built) {
      out += fmt::format("{:<48} skipped: {}\n", r.id, r.skip_reason);
      continue;
    }
    out += fmt::format("{:<48} {:<26} {:>10.2f} {:>10.2f} {:>+8.1f}\n", r.id, r.metric, r.measured, r.predicted,
                       r.error_pct);
    for (const std::string& a : r.assumptions) out += fmt::format("{:<48} assumed: {}\n", "", a);
  }
  for (const std::string& s : sources) {
    const int built = built_rows(rows, s);
    const int all = static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const auto& r) { return r.source == s; }));
    out += fmt::format("{:<20} {:>3} rows simulated, {:>3} skipped; median |error| {}\n", s, built, all - built,
                       built ? fmt::format("{:.1f} %", median_abs_error(rows, s)) : "-");
  }
  out += fmt::format("{:<20} {:>3} rows simulated, {:>3} skipped; median |error| {:.1f} %\n", "all",
                     built_rows(rows, ""), static_cast<int>(rows.size()) - built_rows(rows, ""),
                     median_abs_error(rows));
  return out;
}

}  // namespace dtsim

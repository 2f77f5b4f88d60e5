// The guide's VRAM table against dtsim's memory model (see guide_check.hpp).
#include "sim/validation/guide_check.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <map>

#include "sim/base/csv.hpp"
#include "sim/base/error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/units.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/memory_fit.hpp"
#include "sim/base/input_file.hpp"

namespace dtsim {
namespace {

constexpr double kMatchTolerance = 0.10;    // a claim within 10 % of dtsim's figure matches
constexpr double kFormulaTolerance = 0.03;  // a claim within 3 % of a simple formula "equals" it
// The range of a claim's GB and a model's billions of parameters in the claims CSV.
constexpr double kMinGb = 1e-3, kMaxGb = 1e9;

// The first number in `text` ("~1342 GB", "at least 12 GB"), which must lie from `low` to `high`
// (a minus sign before it makes it negative, hence refused).
double first_number(const std::string& text, const std::string& where, double low, double high) {
  const std::size_t at = text.find_first_of("0123456789");
  if (at == std::string::npos) throw InputError(fmt::format("{}: no number in '{}'", where, text));
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) value = HUGE_VAL;
  else if (ec != std::errc()) throw InputError(fmt::format("{}: no number in '{}'", where, text));
  if (at > 0 && text[at - 1] == '-') value = -value;
  if (!(value >= low && value <= high))
    throw InputError(fmt::format("{} = '{}': must be a number from {} to {}", where, text, low, high));
  return value;
}

// `find(name)` from a catalog, its error prefixed with the file, row and column `where`.
template <class Entry>
const Entry& catalog_entry(const Entry& (*find)(std::string_view), const std::string& name, const std::string& where) {
  try {
    return find(name);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
}

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// The simple formula the claim equals (weights alone, nominal size or dtsim's count, GB or GiB).
std::string formula_for(double claim_bytes, double params_b, const ModelShape& m) {
  struct Candidate {
    double bytes;
    std::string words;
  };
  std::vector<Candidate> c;
  for (const auto& [b, bits] : {std::pair{2.0, 16}, std::pair{1.0, 8}, std::pair{0.5, 4}}) {
    if (params_b > 0) {
      c.push_back({params_b * 1e9 * b, fmt::format("{}B x {} B: {}-bit weights alone, nominal size, in GB", params_b, b, bits)});
      c.push_back({params_b * 1e9 * b * 1e9 / kGiB,
                   fmt::format("{}B x {} B in GiB: {}-bit weights alone, nominal size", params_b, b, bits)});
    }
  }
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::fp8, WeightFormat::int4}) {
    const double w = inference_memory(m, {f, 1, 1}).items.front().bytes;
    c.push_back({w, fmt::format("dtsim's {} weights alone ({})", weight_format_name(f), gb(w))});
  }
  const Candidate* best = nullptr;
  for (const Candidate& k : c)
    if (std::abs(claim_bytes / k.bytes - 1) <= kFormulaTolerance &&
        (best == nullptr || std::abs(claim_bytes / k.bytes - 1) < std::abs(claim_bytes / best->bytes - 1)))
      best = &k;
  return best ? fmt::format("the claim is {}", best->words) : "the claim matches no weights-only formula";
}

// The format a claim stands for: the one whose weights alone come closest to it.
WeightFormat implied_format(double claim_bytes, const ModelShape& m) {
  WeightFormat best = WeightFormat::bf16;
  double best_error = 1e300;
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::fp8, WeightFormat::int4}) {
    const double error = std::abs(std::log(claim_bytes / inference_memory(m, {f, 1, 1}).items.front().bytes));
    if (error < best_error) best = f, best_error = error;
  }
  return best;
}

std::string gpus_text(const FitResult& r) {
  if (!r.fits) return "no split up to the layer count fits";
  return fmt::format("{} GPU(s) (tp {} x pp {}, {:.1f} GiB each)", r.split.gpus(), r.split.tp, r.split.pp,
                     r.split.need.total() / kGiB);
}

}  // namespace

std::string default_claims_path() { return DTSIM_DATA_DIR "/guide/gpu_guide_claims.csv"; }

std::vector<GuideRow> check_guide(const std::string& path) {
  std::ifstream in = open_input_file(path, "the claims file");
  const auto records = parse_csv(in);
  if (records.empty()) throw InputError(fmt::format("{}: empty file", path));
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < records[0].size(); ++i) col[records[0][i]] = i;
  for (const char* c : {"model", "params_B", "claimed_vram", "claimed_gpu", "dtsim_model", "mode", "dtsim_gpu",
                        "claimed_gpu_count", "dtsim_note"})
    if (!col.count(c)) throw InputError(fmt::format("{}: missing column '{}'", path, c));
  std::vector<GuideRow> rows;
  for (std::size_t r = 1; r < records.size(); ++r) {
    const auto& rec = records[r];
    const auto get = [&](const char* c) { return col[c] < rec.size() ? rec[col[c]] : std::string(); };
    const std::string where = fmt::format("{} row {}", path, r + 1);
    GuideRow g;
    g.model = get("model"), g.claimed_vram = get("claimed_vram"), g.claimed_gpu = get("claimed_gpu");
    g.dtsim_model = get("dtsim_model"), g.mode = get("mode"), g.note = get("dtsim_note");
    g.claimed_gb = first_number(g.claimed_vram, where + " claimed_vram", kMinGb, kMaxGb);
    const ModelShape& m = catalog_entry(find_model, g.dtsim_model, where + " dtsim_model");
    if (g.mode != "inference" && g.mode != "training")
      throw InputError(fmt::format("{} mode = '{}': valid values are inference, training", where, g.mode));
    const double params_b =
        get("params_B").empty() ? 0 : first_number(get("params_B"), where + " params_B", kMinGb, limits::kMaxParams / 1e9);
    const GpuSpec& card = catalog_entry(find_gpu, get("dtsim_gpu"), where + " dtsim_gpu");
    g.dtsim_gpu = card.name;
    const double gpu_gib = card.memory_bytes / kGiB;
    const int count = get("claimed_gpu_count").empty()
                          ? 0
                          : static_cast<int>(first_number(get("claimed_gpu_count"), where + " claimed_gpu_count", 1,
                                                          static_cast<double>(limits::kMaxGpus)));
    g.gpu_count = count;
    const double claim = g.claimed_gb * 1e9, capacity = card.memory_bytes;
    const std::string on = fmt::format("{} ({:.0f} GiB)", card.name, gpu_gib);
    std::string gpus;
    if (g.mode == "training") {
      const TrainingSetup t{.seq_len = m.seq_len};
      g.dtsim_gb = training_memory(m, t).total() / 1e9;
      gpus = fmt::format("training (bf16 Adam, full recompute) needs {} of {}", gpus_text(smallest_training_split(m, t, capacity)), on);
    } else {
      const InferenceSetup bf16{WeightFormat::bf16, kGuideContext, 1};
      g.dtsim_gb = inference_memory(m, bf16).total() / 1e9;
      const WeightFormat f = implied_format(claim, m);
      const InferenceSetup implied{f, kGuideContext, 1};
      gpus = fmt::format("bf16 needs {} of {}", gpus_text(smallest_inference_split(m, bf16, capacity)), on);
      if (f != WeightFormat::bf16)
        gpus += fmt::format("; {} (total {}) needs {}", weight_format_name(f), gb(inference_memory(m, implied).total()),
                            gpus_text(smallest_inference_split(m, implied, capacity)));
    }
    const double ratio = claim / (g.dtsim_gb * 1e9);
    g.verdict = std::abs(ratio - 1) <= kMatchTolerance ? "matches" : ratio < 1 ? "underestimates" : "overestimates";
    g.explanation = fmt::format("{}; {}", formula_for(claim, params_b, m), gpus);
    if (count > 0) {
      const double cards_gb = count * capacity / 1e9;
      g.explanation += fmt::format("; {} x {:.0f} GiB = {:.0f} GB{}", count, gpu_gib, cards_gb,
                                   count * gpu_gib < g.claimed_gb && cards_gb >= g.claimed_gb
                                       ? fmt::format(" (not {:.0f} GB: the cards' GB are GiB)", count * gpu_gib)
                                       : "");
    }
    if (!g.note.empty()) g.explanation += "; " + g.note;
    rows.push_back(std::move(g));
  }
  return rows;
}

}  // namespace dtsim

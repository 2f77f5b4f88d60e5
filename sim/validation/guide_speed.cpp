// Decode speeds for the GPU guide's rows: a dtsim serve scenario per card set, the widest weight
// format that fits, and the cheapest priced set that reaches a speed.
#include "sim/validation/guide_speed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <vector>

#include <boost/program_options.hpp>

#include "sim/base/csv.hpp"
#include "sim/base/error.hpp"
#include "sim/scenario/serve.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/inference_program.hpp"
#include "workloads/model.hpp"
#include "sim/base/input_file.hpp"

namespace dtsim {
namespace {

// Widest first: a user keeps the most precision the cards hold.
constexpr WeightFormat kFormats[] = {WeightFormat::bf16, WeightFormat::int8, WeightFormat::int4};
constexpr int kSetSizes[] = {1, 2, 4, 8};

ServeSetup request(WeightFormat f) {
  ServeSetup s;
  s.weights = f;
  s.batch = 1;
  s.prompt = kGuidePromptTokens;
  s.output = kGuideOutputTokens;
  return s;
}

// The machine the cards come in: an NVSwitch board for SXM parts, else a PCIe box, without
// peer-to-peer for GeForce cards (their drivers leave it off, so TP goes through the CPU).
std::string cluster_text(const GpuSpec& card, int gpus) {
  const bool board = card.nvlink_domain_gpus >= 8 && !card.nvlink_bridge_only;
  const bool geforce = card.form_factor.find("consumer") != std::string::npos;
  const int per_node = std::min(gpus, 8);
  return fmt::format("[cluster]\ngpu = {}\nnodes = {}\ngpus_per_node = {}\nnode_kind = {}\n{}", card.name,
                     gpus / per_node, per_node, board ? "nvswitch" : "pcie", !board && geforce ? "p2p = false\n" : "");
}

GuideServing serve_on(const ModelShape& m, const GpuSpec& card, int gpus, WeightFormat f, int tp, int pp) {
  GuideServing g;
  g.gpu = card.name;
  g.gpus = gpus;
  g.tp = tp;
  g.pp = pp;
  g.weights = f;
  const ServeSetup s = request(f);
  const std::string text =
      fmt::format("[model]\nname = {}\n[parallel]\ntp = {}\npp = {}\n{}[inference]\nweights = {}\nbatch = 1\n"
                  "prompt_tokens = {}\noutput_tokens = {}\n",
                  m.name, tp, pp, cluster_text(card, gpus), weight_format_name(f), s.prompt, s.output);
  namespace po = boost::program_options;
  po::variables_map none;
  po::store(po::command_line_parser(std::vector<std::string>{}).options(scenario_options()).run(), none);
  Scenario sc = load_scenario_text(text, "seed-table serving", none, SweepSection::refuse, Workload::inference);
  const ServeResult r = run_serve(sc, "");
  g.modelled = true;
  g.fits = r.fits;
  g.decode_tokens_per_s = r.decode_tokens_per_s;
  return g;
}

// The memory check before a run: some format's weights, KV cache and runtime on one of the cards.
bool holds(const ModelShape& m, const GpuSpec& card, int gpus, WeightFormat f) {
  return serve_memory(m, request(f), gpus, 1).total() <= card.memory_bytes;
}

// TP over the cards of a machine (8 at most) and pipeline stages over the machines, as dtsim fit
// splits; llama.cpp's layer split where TP cannot divide the heads.
GuideServing speed_in(const ModelShape& m, const GpuSpec& card, int gpus, WeightFormat f) {
  const int tp = std::min(gpus, 8);
  try {
    return serve_on(m, card, gpus, f, tp, gpus / tp);
  } catch (const InputError&) {
    if (gpus == 1) throw;
    return serve_on(m, card, gpus, f, 1, gpus);
  }
}

// Why serve cannot run the model at all (a mixture of experts, MLA), or "" when it can.
std::string unmodelled(const ModelShape& m) {
  try {
    inference_plan(m, request(WeightFormat::bf16), 1);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// More tokens/s than `gpus` cards can decode one sequence at: every weight but the embedding table
// read once per token, at the cards' datasheet rate together.
double speed_bound(const ModelShape& m, const GpuSpec& card, int gpus, WeightFormat f) {
  const double streamed = m.total_params() - static_cast<double>(m.vocab) * m.hidden;
  return gpus * card.hbm_bytes_per_s / (weight_format_bytes(f) * streamed);
}

}  // namespace

std::string default_prices_path() { return DTSIM_DATA_DIR "/guide/gpu_prices.csv"; }

std::map<std::string, double> read_gpu_prices(const std::string& path, const std::map<std::string, double>& extra) {
  std::ifstream in = open_input_file(path, "the prices file");
  const auto records = parse_csv(in);
  if (records.empty() || records[0].size() < 2 || records[0][0] != "gpu" || records[0][1] != "usd")
    throw InputError(fmt::format("{}: the header must start with gpu,usd", path));
  std::map<std::string, double> prices;
  const auto add = [&](const std::string& name, const std::string& usd, const std::string& where) {
    const GpuSpec* card = nullptr;
    try {
      card = &find_gpu(name);
    } catch (const InputError&) {
      throw InputError(fmt::format("{}: gpu = '{}' is not in dtsim's GPU catalog (dtsim catalog gpus)", where, name));
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(usd.data(), usd.data() + usd.size(), value);
    if (usd.empty() || ec != std::errc() || end != usd.data() + usd.size() || !(value > 0) || value > 1e7)
      throw InputError(fmt::format("{}: usd = '{}': a price in USD per card, above 0 and at most 1e7, is needed", where, usd));
    prices[card->name] = value;
  };
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() < 2) throw InputError(fmt::format("{} row {}: needs gpu and usd", path, r + 1));
    add(records[r][0], records[r][1], fmt::format("{} row {}", path, r + 1));
  }
  for (const auto& [name, usd] : extra) add(name, fmt::format("{}", usd), "--price " + name);
  return prices;
}

GuideServing guide_speed(const std::string& model, const std::string& gpu, int gpus) {
  const ModelShape& m = find_model(model);
  const GpuSpec& card = find_gpu(gpu);
  GuideServing none;
  none.gpu = card.name;
  none.gpus = gpus;
  if (const std::string why = unmodelled(m); !why.empty()) {
    none.reason = why;
    return none;
  }
  none.modelled = true;
  for (WeightFormat f : kFormats)
    if (holds(m, card, gpus, f)) return speed_in(m, card, gpus, f);
  none.reason = fmt::format("{} does not fit on {} x {} in bf16, int8 or int4", m.name, gpus, card.name);
  return none;
}

GuideServing guide_speed_in(const std::string& model, const std::string& gpu, int gpus, WeightFormat f) {
  const ModelShape& m = find_model(model);
  const GpuSpec& card = find_gpu(gpu);
  if (holds(m, card, gpus, f)) return speed_in(m, card, gpus, f);
  GuideServing none;
  none.modelled = true;
  none.gpu = card.name;
  none.gpus = gpus;
  none.weights = f;
  none.reason = fmt::format("{} does not fit on {} x {} in {}", m.name, gpus, card.name, weight_format_name(f));
  return none;
}

GuideServing cheapest_for_speed(const std::string& model, double tokens_per_s, const std::map<std::string, double>& prices) {
  const ModelShape& m = find_model(model);
  GuideServing none;
  if (const std::string why = unmodelled(m); !why.empty()) {
    none.reason = why;
    return none;
  }
  struct Set {
    const GpuSpec* card;
    int gpus;
    double usd;
  };
  std::vector<Set> sets;
  for (const auto& [name, usd] : prices)
    for (int n : kSetSizes) sets.push_back({&find_gpu(name), n, n * usd});
  std::stable_sort(sets.begin(), sets.end(), [](const Set& a, const Set& b) { return a.usd < b.usd; });
  for (const Set& set : sets)
    for (WeightFormat f : kFormats) {
      if (!holds(m, *set.card, set.gpus, f) || speed_bound(m, *set.card, set.gpus, f) < tokens_per_s) continue;
      GuideServing g = speed_in(m, *set.card, set.gpus, f);
      if (!g.fits || g.decode_tokens_per_s < tokens_per_s) continue;
      g.usd = set.usd;
      return g;
    }
  none.reason = fmt::format("no set of 1, 2, 4 or 8 priced cards both holds {} and decodes it at {:g} tokens/s", m.name,
                            tokens_per_s);
  return none;
}

}  // namespace dtsim

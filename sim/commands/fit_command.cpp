// `dtsim fit`: the memory model of workloads/memory_fit for one model, then for every catalog GPU
// the smallest split that holds it; `--seed-table` checks the guide's table (sim/validation/
// guide_check) and gives its rows' decode speeds (guide_speed).
// Training runs as the framework profile of --framework (the advisor's framework_setup) says.
#include "sim/commands/fit_command.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <charconv>
#include <iostream>
#include <map>

#include "sim/advisor/advise.hpp"
#include "sim/base/error.hpp"
#include "sim/base/units.hpp"
#include "sim/validation/guide_check.hpp"
#include "sim/validation/guide_speed.hpp"
#include "sim/base/json.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/memory_fit.hpp"

namespace po = boost::program_options;

namespace dtsim {
namespace {

struct FitRequest {
  const ModelShape* model = nullptr;
  bool training = false;
  InferenceSetup inference;
  TrainingSetup training_setup;
  std::string framework;
  int dp = 1;
};

int positive(const po::variables_map& vm, const char* key) {
  const int v = vm[key].as<int>();
  if (v < 1) throw InputError(fmt::format("--{} = {}: must be a positive integer", key, v));
  return v;
}

FitRequest read_request(const po::variables_map& vm) {
  FitRequest r;
  if (!vm.count("model")) throw InputError("dtsim fit: --model NAME is required (or --seed-table)");
  r.model = &find_model(vm["model"].as<std::string>());
  const std::string mode = vm["mode"].as<std::string>();
  if (mode != "inference" && mode != "training")
    throw InputError(fmt::format("--mode = '{}': valid values are inference, training", mode));
  r.training = mode == "training";
  const WeightFormat f = parse_weight_format(vm["precision"].as<std::string>(), "--precision");
  const int context = vm.count("context") ? positive(vm, "context") : r.model->seq_len;
  const int batch = positive(vm, "batch");
  r.dp = positive(vm, "dp");
  if (r.training) {
    if (f != WeightFormat::bf16 && f != WeightFormat::fp16)
      throw InputError(fmt::format("--precision = {}: training is mixed precision; valid values with --mode training: "
                                   "bf16, fp16", weight_format_name(f)));
    r.framework = vm["framework"].as<std::string>();
    r.training_setup = framework_setup(r.framework, std::string(weight_format_name(f))).training;
    r.training_setup.seq_len = context;
    r.training_setup.micro_batch = batch;
    r.training_setup.recompute = parse_recompute(vm["recompute"].as<std::string>(), "--recompute");
    if (vm.count("zero")) r.training_setup.zero_stage = vm["zero"].as<int>();
    r.training_setup.cp = positive(vm, "cp");
    ModelShape at_context = *r.model;
    at_context.seq_len = context;
    validate_context_parallel(training_plan(at_context, r.training_setup, 1, 1, r.dp), at_context, "--cp");
    if (r.training_setup.zero_stage < 0 || r.training_setup.zero_stage > 3)
      throw InputError(fmt::format("--zero = {}: valid values are 0, 1, 2, 3", r.training_setup.zero_stage));
  } else {
    r.inference = {f, context, batch};
  }
  return r;
}

FitResult fit_on(const FitRequest& r, double capacity) {
  return r.training ? smallest_training_split(*r.model, r.training_setup, capacity, r.dp)
                    : smallest_inference_split(*r.model, r.inference, capacity);
}

void print_fit(const FitRequest& r, bool json) {
  const ModelShape& m = *r.model;
  const MemoryNeed need = r.training ? training_memory(m, r.training_setup, 1, 1, r.dp) : inference_memory(m, r.inference);
  const std::string setup =
      r.training ? fmt::format("training, {} ({} attention{}{}), mixed-precision Adam, seq {} x micro-batch {}, recompute {}, "
                               "ZeRO-{}, dp {}{}", r.framework, attention_name(r.training_setup.attention),
                               r.training_setup.sequence_parallel ? ", sequence parallel with tp > 1" : "",
                               r.training_setup.dropout ? ", dropout" : "", r.training_setup.seq_len,
                               r.training_setup.micro_batch, recompute_name(r.training_setup.recompute),
                               r.training_setup.zero_stage, r.dp,
                               r.training_setup.cp > 1 ? fmt::format(", cp {}", r.training_setup.cp) : "")
                 : fmt::format("inference, {}, context {} x batch {}", weight_format_name(r.inference.format),
                               r.inference.context, r.inference.batch);
  if (json) {
    JsonList items, gpus;
    for (const MemoryItem& i : need.items)
      items.add(fmt::format("{{\"name\": \"{}\", \"bytes\": {:.0f}, \"includes\": \"{}\"}}", i.name, i.bytes, json_escape(i.includes)));
    for (const GpuSpec& g : gpu_catalog()) {
      const FitResult f = fit_on(r, g.memory_bytes);
      gpus.add(fmt::format("{{\"gpu\": \"{}\", \"memory_gib\": {:.9g}, \"fits_on_one\": {}, \"fits\": {}, \"gpus_needed\": {}, "
                           "\"tp\": {}, \"pp\": {}, \"dp\": {}, \"per_gpu_gib\": {:.9g}}}",
                           g.name, g.memory_bytes / kGiB, f.fits && f.split.tp * f.split.pp == 1 ? "true" : "false",
                           f.fits ? "true" : "false", f.fits ? f.split.gpus() : 0, f.split.tp, f.split.pp, f.split.dp,
                           f.split.need.total() / kGiB));
    }
    std::cout << fmt::format("{{\"model\": \"{}\", \"setup\": \"{}\", \"params\": {:.0f}, \"active_params\": {:.0f}, "
                             "\"items\": {}, \"total_bytes\": {:.0f}, \"total_gib\": {:.9g}, \"gpus\": {}}}\n",
                             m.name, json_escape(setup), m.total_params(), m.active_params(), items.str(), need.total(),
                             need.total() / kGiB, gpus.str());
    return;
  }
  std::cout << fmt::format("dtsim fit: {} ({:.2f} B parameters, {:.2f} B active per token), {}\n", m.name,
                           m.total_params() / 1e9, m.active_params() / 1e9, setup);
  std::cout << fmt::format("  {:<12} {:>10} {:>10}  {}\n", "", "GB", "GiB", "includes");
  for (const MemoryItem& i : need.items)
    std::cout << fmt::format("  {:<12} {:>10.2f} {:>10.2f}  {}\n", i.name, i.bytes / 1e9, i.bytes / kGiB, i.includes);
  std::cout << fmt::format("  {:<12} {:>10.2f} {:>10.2f}  on one GPU{}\n\n", "total", need.total() / 1e9,
                           need.total() / kGiB, r.training ? " (per GPU of dp)" : "");
  std::cout << fmt::format("{:<16} {:>8} {:>11} {:>7} {:>5} {:>5} {:>5} {:>12}\n", "GPU", "GiB", "fits on one", "GPUs",
                           "tp", "pp", "dp", "per GPU GiB");
  for (const GpuSpec& g : gpu_catalog()) {
    const FitResult f = fit_on(r, g.memory_bytes);
    if (f.fits)
      std::cout << fmt::format("{:<16} {:>8.0f} {:>11} {:>7} {:>5} {:>5} {:>5} {:>12.2f}\n", g.name, g.memory_bytes / kGiB,
                               f.split.tp * f.split.pp == 1 ? "yes" : "no", f.split.gpus(), f.split.tp, f.split.pp,
                               f.split.dp, f.split.need.total() / kGiB);
    else
      std::cout << fmt::format("{:<16} {:>8.0f} {:>11}  does not fit with pp up to {} layers\n", g.name,
                               g.memory_bytes / kGiB, "no", m.layers);
  }
  std::cout << "(split: tp 1, 2, 4, 8 in a node of 8 GPUs, then pp nodes; per GPU = weights and KV / split + "
               "activations / tp + overhead)\n";
}

// A serving setup in words: "18.2 tokens/s on 2 x RTX-4090 (int4, tp 2)".
std::string serving_text(const GuideServing& g) {
  const std::string layout = g.pp == 1   ? fmt::format("tp {}", g.tp)
                             : g.tp == 1 ? fmt::format("layer split over {}", g.pp)
                                         : fmt::format("tp {} x pp {}", g.tp, g.pp);
  return fmt::format("{:.1f} tokens/s on {} x {} ({}, {})", g.decode_tokens_per_s, g.gpus, g.gpu,
                     weight_format_name(g.weights), layout);
}

std::string serving_json(const GuideServing& g) {
  if (!g.modelled || !g.fits || g.decode_tokens_per_s <= 0)
    return fmt::format("{{\"reason\": {}}}", json_string(g.reason));
  return fmt::format("{{\"gpu\": \"{}\", \"gpus\": {}, \"tp\": {}, \"pp\": {}, \"weights\": \"{}\", "
                     "\"decode_tokens_per_s\": {}, \"usd\": {}}}",
                     g.gpu, g.gpus, g.tp, g.pp, weight_format_name(g.weights), JsonNumber{g.decode_tokens_per_s},
                     JsonNumber{g.usd});
}

// The guide's cards: its count, or the fewest of 1, 2, 4, 8 that hold the model in some format.
GuideServing speed_on_guide_cards(const GuideRow& g) {
  if (g.gpu_count > 0) return guide_speed(g.dtsim_model, g.dtsim_gpu, g.gpu_count);
  GuideServing s;
  for (int n : {1, 2, 4, 8}) {
    s = guide_speed(g.dtsim_model, g.dtsim_gpu, n);
    if (!s.modelled || s.fits) break;
  }
  return s;
}

void print_seed_table(const std::string& path, double speed, const std::map<std::string, double>& extra_prices,
                      bool json) {
  const std::vector<GuideRow> rows = check_guide(path);
  const std::map<std::string, double> prices = read_gpu_prices(default_prices_path(), extra_prices);
  std::vector<GuideServing> on_guide(rows.size()), cheapest(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].mode != "inference") continue;
    on_guide[i] = speed_on_guide_cards(rows[i]);
    cheapest[i] = cheapest_for_speed(rows[i].dtsim_model, speed, prices);
  }
  if (json) {
    JsonList out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const GuideRow& g = rows[i];
      const std::string speeds = g.mode != "inference" ? ""
                                     : fmt::format(", \"speed\": {}, \"cheapest\": {}", serving_json(on_guide[i]),
                                                   serving_json(cheapest[i]));
      out.add(fmt::format("{{\"model\": \"{}\", \"claimed_vram\": \"{}\", \"claimed_gpu\": \"{}\", \"dtsim_model\": \"{}\", "
                          "\"mode\": \"{}\", \"dtsim_gpu\": \"{}\", \"claimed_gb\": {:.9g}, \"dtsim_gb\": {:.9g}, \"verdict\": \"{}\", "
                          "\"explanation\": \"{}\"{}}}",
                          json_escape(g.model), json_escape(g.claimed_vram), json_escape(g.claimed_gpu), g.dtsim_model,
                          g.mode, g.dtsim_gpu, g.claimed_gb, g.dtsim_gb, g.verdict, json_escape(g.explanation), speeds));
    }
    std::cout << fmt::format("{{\"claims\": \"{}\", \"target_tokens_per_s\": {}, \"rows\": {}}}\n", json_escape(path),
                             JsonNumber{speed}, out.str());
    return;
  }
  std::cout << fmt::format("The guide's VRAM table ({}) against dtsim: inference at bf16 with a {}-token KV cache, "
                           "batch 1, activations and 1 GiB runtime overhead; training with bf16 mixed-precision Adam "
                           "and full recompute. GB = 1e9 B. matches: within 10 %.\n", path, kGuideContext);
  std::cout << fmt::format("speed: dtsim serve decoding one sequence ({} prompt + {} output tokens) on the guide's cards "
                           "in the widest of bf16, int8, int4 that fits; for {:g} tokens/s: the cheapest set of 1, 2, 4 "
                           "or 8 cards priced in {} (launch prices) or by --price that reaches it.\n\n",
                           kGuidePromptTokens, kGuideOutputTokens, speed, default_prices_path());
  std::cout << fmt::format("{:<30} {:<22} {:>12} {:<15} {}\n", "model", "guide claims", "dtsim GB", "verdict", "guide's GPUs");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GuideRow& g = rows[i];
    std::cout << fmt::format("{:<30} {:<22} {:>12.1f} {:<15} {}\n", g.model, g.claimed_vram, g.dtsim_gb, g.verdict,
                             g.claimed_gpu);
    std::cout << fmt::format("    {} ({}): {}\n", g.dtsim_model, g.mode, g.explanation);
    if (g.mode != "inference") continue;
    const GuideServing& s = on_guide[i];
    const GuideServing& c = cheapest[i];
    if (!s.modelled) {  // serve cannot run the model on any cards
      std::cout << fmt::format("    speed: not modelled ({})\n", s.reason);
      continue;
    }
    const std::string on = s.fits ? serving_text(s) : s.reason;
    const std::string best = c.modelled && c.fits
                                 ? fmt::format("{:.0f} USD, {}", c.usd, serving_text(c))
                                 : c.reason;
    std::cout << fmt::format("    speed: {}; for {:g} tokens/s: {}\n", on, speed, best);
  }
}

}  // namespace

int fit_command(int argc, char** argv) {
  po::options_description own("dtsim fit options");
  own.add_options()("help,h", "print this help")("model", po::value<std::string>(), "catalog model (dtsim catalog models)")(
      "precision", po::value<std::string>()->default_value("bf16"), ("weights: " + weight_format_names(" | ")).c_str())(
      "context", po::value<int>(), "tokens per sequence (KV cache; training: sequence length); default the model's seq_len")(
      "batch", po::value<int>()->default_value(1), "sequences at once (training: micro-batch)")(
      "mode", po::value<std::string>()->default_value("inference"), "inference | training")(
      "recompute", po::value<std::string>()->default_value("full"), "training: none | selective | full")(
      "framework", po::value<std::string>()->default_value("megatron-core"),
      "training: framework profile (dtsim catalog frameworks), as run's training.framework")(
      "zero", po::value<int>(), "training: ZeRO stage 0..3 (shards over dp); default the framework's")(
      "dp", po::value<int>()->default_value(1), "training: data-parallel replicas")(
      "cp", po::value<int>()->default_value(1), "training: context-parallel ranks per sequence (needs flash attention)")(
      "seed-table", "check the GPU guide's VRAM table instead")(
      "speed", po::value<double>()->default_value(20), "seed table: decode tokens/s for one user the cheapest card set must reach")(
      "price", po::value<std::vector<std::string>>()->composing(), "seed table: GPU=USD per card, added to the launch prices (repeatable)")(
      "claims", po::value<std::string>()->default_value(default_claims_path()), "the guide's table (CSV)")(
      "json", "print JSON");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(own).run(), vm);
  } catch (const po::error& e) {
    throw InputError(fmt::format("dtsim fit: {}", e.what()));
  }
  if (vm.count("help")) {
    std::cout << "usage: dtsim fit --model NAME [--precision bf16] [--context N] [--batch N] [--mode inference|training] "
                 "[--framework NAME] [--recompute full] [--zero N] [--dp N] [--cp N] [--json]\n       dtsim fit --seed-table [--claims FILE.csv] [--speed 20] [--price GPU=USD ...] [--json]\n\n" << own << "\n";
    return 0;
  }
  if (vm.count("seed-table")) {
    const double speed = vm["speed"].as<double>();
    if (!(speed > 0) || speed > 1e6) throw InputError(fmt::format("--speed = {}: tokens/s above 0 and at most 1e6", speed));
    std::map<std::string, double> prices;
    if (vm.count("price"))
      for (const std::string& p : vm["price"].as<std::vector<std::string>>()) {
        const std::size_t eq = p.find('=');
        if (eq == std::string::npos) throw InputError(fmt::format("--price '{}': give GPU=USD per card, e.g. RTX-3090=800", p));
        double usd = 0;
        const std::string v = p.substr(eq + 1);
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), usd);
        if (v.empty() || ec != std::errc() || end != v.data() + v.size())
          throw InputError(fmt::format("--price '{}': '{}' is not a number of USD", p, v));
        prices[p.substr(0, eq)] = usd;
      }
    print_seed_table(vm["claims"].as<std::string>(), speed, prices, vm.count("json") > 0);
  }
  else print_fit(read_request(vm), vm.count("json") > 0);
  return 0;
}

}  // namespace dtsim

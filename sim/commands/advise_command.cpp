// `dtsim advise` command line and its text and JSON output (the search is sim/advise).
#include "sim/commands/advise_command.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include "sim/advisor/advise.hpp"
#include "sim/advisor/advise_table.hpp"
#include "sim/base/error.hpp"
#include "sim/base/safe_write.hpp"
#include "sim/base/json.hpp"

namespace po = boost::program_options;

namespace dtsim {
namespace {

double number(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw InputError(fmt::format("{} = '{}': not a number", what, text));
  return v;
}

std::string layout_text(const AdviseRow& r) {
  const std::string ep = r.ep > 1 ? fmt::format(" ep{}", r.ep) : "";
  return fmt::format("tp{} pp{} dp{}{} mb{} {} z{}", r.tp, r.pp, r.dp, ep, r.micro_batch, recompute_name(r.recompute),
                     r.zero_stage);
}

// No layout fits the GPUs asked for: the table is empty and the status says so, as `dtsim run`'s
// for a step that does not fit.
constexpr int kExitNothingFits = 4;

std::string money(double usd) { return std::isnan(usd) ? "" : fmt::format("{:.0f}", usd); }

void print_text(const AdviseResult& res, double wall_s) {
  std::cout << fmt::format("dtsim advise: {} as {} runs it, global batch {} x {} tokens, {:.3g} tokens to train; {} "
                           "layouts, {} fit in memory, {} simulated in {:.1f} s; ranked by {}\n\n",
                           res.model, res.framework, res.global_batch, res.seq_len, res.tokens, res.candidates, res.fitting,
                           res.rows.size(), wall_s, res.ranked_by);
  std::cout << fmt::format("{:>4} {:<16} {:>5} {:>5} {:<30} {:<12} {:>9} {:>9} {:>6} {:>8} {:>8} {:>10} {:>12}\n", "rank",
                           "GPU", "GPUs", "nodes", "layout", "node", "step s", "tokens/s", "MFU", "peak GiB", "days",
                           "GPU-hours", "cost USD");
  for (const AdviseRow& r : res.rows) {
    if (r.role != "layout") continue;
    if (r.status != PointStatus::ok) {
      std::cout << fmt::format("{:>4} {:<16} {:>5} {:>5} {:<30} {:<12} {}: {}\n", "-", r.gpu, r.num_gpus(), r.nodes,
                               layout_text(r), r.node_kind, point_status_name(r.status), r.message);
      continue;
    }
    std::cout << fmt::format("{:>4} {:<16} {:>5} {:>5} {:<30} {:<12} {:>9.2f} {:>9.0f} {:>6.3f} {:>8.1f} {:>8.1f} {:>10.0f} {:>12}\n",
                             r.rank, r.gpu, r.num_gpus(), r.nodes, layout_text(r), r.node_kind, r.summary.step_time_s,
                             r.summary.tokens_per_s, r.summary.mfu, r.summary.peak_memory_gib, r.train_s / 86400,
                             r.gpu_hours, money(r.cost_usd));
  }
  std::cout << "\nlinks of the best layout per GPU (node kind and NICs per node x Gbit/s):\n";
  std::cout << fmt::format("{:<16} {:<30} {:<12} {:>10} {:>9} {:>9}\n", "GPU", "layout", "node", "NICs", "step s", "vs best");
  std::set<std::string> shown;
  for (const AdviseRow& best : res.rows) {
    if (best.role != "layout" || best.status != PointStatus::ok || !shown.insert(best.gpu).second) continue;
    bool first = true;
    for (const AdviseRow& v : res.rows) {
      if (v.role != "variant" || v.gpu != best.gpu) continue;
      if (first) {
        std::cout << fmt::format("{:<16} {:<30} {:<12} {:>10} {:>9.2f} {:>9}\n", best.gpu, layout_text(best), best.node_kind,
                                 fmt::format("{}x{}", best.nics_per_node, best.nic_gbps), best.summary.step_time_s, "best");
        first = false;
      }
      const std::string change = v.status == PointStatus::ok
                                     ? fmt::format("{:+.1f} %", 100 * (v.summary.step_time_s / best.summary.step_time_s - 1))
                                     : std::string(point_status_name(v.status));
      std::cout << fmt::format("{:<16} {:<30} {:<12} {:>10} {:>9.2f} {:>9}\n", "", "", v.node_kind,
                               fmt::format("{}x{}", v.nics_per_node, v.nic_gbps), v.summary.step_time_s, change);
    }
  }
  std::cout << "(step time simulated by dtsim; days, GPU-hours and cost for the tokens to train; InfiniBand between nodes)\n";
}

void print_json(const AdviseResult& res) {
  JsonList rows;
  const auto num = [](double v) { return fmt::format("{:.9g}", JsonNumber{v}); };
  for (const AdviseRow& r : res.rows)
    rows.add(fmt::format("{{\"rank\": {}, \"gpu\": \"{}\", \"role\": \"{}\", \"num_gpus\": {}, \"nodes\": {}, "
                         "\"gpus_per_node\": {}, \"tp\": {}, \"pp\": {}, \"dp\": {}, \"ep\": {}, \"micro_batch\": {}, \"recompute\": \"{}\", "
                         "\"zero_stage\": {}, \"stage_layers\": \"{}\", \"node_kind\": \"{}\", \"nics_per_node\": {}, \"nic_gbps\": {}, \"fit_gib\": {}, "
                         "\"estimate_s\": {}, \"status\": \"{}\", \"message\": \"{}\", \"step_time_s\": {}, \"tokens_per_s\": {}, \"mfu\": {}, "
                         "\"peak_memory_gib\": {}, \"train_days\": {}, \"gpu_hours\": {}, \"cost_usd\": {}}}",
                         r.rank, r.gpu, r.role, r.num_gpus(), r.nodes, r.gpus_per_node, r.tp, r.pp, r.dp, r.ep, r.micro_batch,
                         recompute_name(r.recompute), r.zero_stage, r.stage_layers, r.node_kind, r.nics_per_node, num(r.nic_gbps),
                         num(r.fit_gib), num(r.estimate_s), point_status_name(r.status), json_escape(r.message), num(r.summary.step_time_s),
                         num(r.summary.tokens_per_s), num(r.summary.mfu), num(r.summary.peak_memory_gib),
                         num(r.train_s / 86400), num(r.gpu_hours), num(r.cost_usd)));
  std::cout << fmt::format("{{\"model\": \"{}\", \"framework\": \"{}\", \"tokens\": {:.9g}, \"global_batch\": {}, \"seq_len\": {}, "
                           "\"candidates\": {}, \"fitting\": {}, \"ranked_by\": \"{}\", \"rows\": {}}}\n",
                           res.model, res.framework, res.tokens, res.global_batch, res.seq_len, res.candidates, res.fitting,
                           res.ranked_by, rows.str());
}

}  // namespace

int advise_command(int argc, char** argv) {
  po::options_description own("dtsim advise options");
  own.add_options()("help,h", "print this help")("model", po::value<std::string>(), "catalog model")(
      "gpus", po::value<std::string>(), "GPU types, comma-separated (catalog names or aliases)")(
      "framework", po::value<std::string>()->default_value("megatron-core"),
      "framework profile every layout runs with (dtsim catalog frameworks), as run's training.framework")(
      "max-gpus", po::value<int>()->default_value(256), "largest GPU count searched (powers of two, 8 per node)")(
      "tokens", po::value<std::string>()->default_value("0"), "tokens to train; 0 = 20 per parameter (Chinchilla)")(
      "global-batch", po::value<int>()->default_value(0), "sequences per step; 0 = 2^22 tokens / seq_len")(
      "price", po::value<std::vector<std::string>>()->composing(), "GPU=USD_PER_GPU_HOUR (repeatable)")(
      "top", po::value<int>()->default_value(2), "more layouts simulated at the best GPU count")(
      "nics-per-node", po::value<int>()->default_value(4), "NICs per node (InfiniBand)")(
      "nic-gbps", po::value<std::string>()->default_value("200"), "Gbit/s per NIC")(
      "jobs,j", po::value<int>()->default_value(0), "simulations at once; 0 = all cores")(
      "output,o", po::value<std::string>(), "write the /advise table to FILE.h5")("json", "print JSON");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(own).run(), vm);
  } catch (const po::error& e) {
    throw InputError(fmt::format("dtsim advise: {}", e.what()));
  }
  if (vm.count("help")) {
    std::cout << "usage: dtsim advise --model NAME --gpus A100-80GB,H100-80GB,RTX4090 [--framework NAME] [--max-gpus N] "
                 "[--tokens T] "
                 "[--price GPU=USD_PER_HOUR ...] [--output FILE.h5] [--json]\n\n" << own << "\n";
    return 0;
  }
  if (!vm.count("model")) throw InputError("dtsim advise: --model NAME is required");
  if (!vm.count("gpus")) throw InputError("dtsim advise: --gpus GPU,GPU,... is required");
  AdviseRequest q;
  q.model = vm["model"].as<std::string>();
  q.framework = vm["framework"].as<std::string>();
  std::stringstream list(vm["gpus"].as<std::string>());
  for (std::string g; std::getline(list, g, ',');)
    if (!g.empty()) q.gpus.push_back(g);
  q.max_gpus = vm["max-gpus"].as<int>();
  q.tokens = number(vm["tokens"].as<std::string>(), "--tokens");
  if (q.tokens < 0) throw InputError(fmt::format("--tokens = {}: must be >= 0", q.tokens));
  q.global_batch = vm["global-batch"].as<int>();
  if (q.global_batch < 0) throw InputError(fmt::format("--global-batch = {}: must be >= 1, or 0 for the default", q.global_batch));
  q.top = vm["top"].as<int>();
  if (q.top < 0) throw InputError(fmt::format("--top = {}: must be >= 0", q.top));
  q.nics_per_node = vm["nics-per-node"].as<int>();
  if (q.nics_per_node < 1) throw InputError(fmt::format("--nics-per-node = {}: must be >= 1", q.nics_per_node));
  q.nic_gbps = number(vm["nic-gbps"].as<std::string>(), "--nic-gbps");
  if (!(q.nic_gbps > 0)) throw InputError(fmt::format("--nic-gbps = {}: must be > 0", q.nic_gbps));
  q.jobs = vm["jobs"].as<int>();
  if (q.jobs < 0) throw InputError(fmt::format("--jobs = {}: must be >= 1, or 0 for all cores", q.jobs));
  if (vm.count("price"))
    for (const std::string& p : vm["price"].as<std::vector<std::string>>()) {
      const std::size_t eq = p.find('=');
      if (eq == std::string::npos) throw InputError(fmt::format("--price '{}': give GPU=USD_PER_HOUR, e.g. A100=1.8", p));
      q.prices[p.substr(0, eq)] = number(p.substr(eq + 1), "--price " + p.substr(0, eq));
    }
  if (vm.count("output")) check_output_path(vm["output"].as<std::string>(), "--output " + vm["output"].as<std::string>());
  const auto start = std::chrono::steady_clock::now();
  const AdviseResult res = advise(q);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (vm.count("output")) save_advise_table(res, vm["output"].as<std::string>());
  if (vm.count("json")) print_json(res);
  else print_text(res, wall);
  if (res.fitting > 0) return 0;
  for (const std::string& hint : res.what_would_fit) std::cerr << "dtsim advise: " << hint << "\n";
  return kExitNothingFits;
}

}  // namespace dtsim

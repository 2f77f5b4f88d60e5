// The dtsim command line: `dtsim run`, `serve`, `topology`, `collective`, `validate`, `sweep`, `merge`,
// `export`, `catalog`, `fit`, `advise`. Bad input prints one message and exits with status 2,
// running out of memory with 3, an internal inconsistency (a bug) with 70; nothing is written then.
// A simulated step that runs out of GPU memory exits 4 after its summary.
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <tbb/info.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>
#include <iostream>

#include "sim/commands/advise_command.hpp"
#include "sim/base/error.hpp"
#include "sim/commands/catalog_command.hpp"
#include "sim/trace/chrome_export.hpp"
#include "sim/network/collective_bench.hpp"
#include "sim/commands/fit_command.hpp"
#include "sim/commands/scenario_template.hpp"
#include "sim/commands/serve_sweep.hpp"
#include "sim/base/json.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/nearest.hpp"
#include "sim/base/safe_write.hpp"
#include "sim/trace/hdf5_util.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/serve_format.hpp"
#include "sim/scenario/summary_format.hpp"
#include "sim/commands/sweep_command.hpp"
#include "sim/validation/inference_validate.hpp"
#include "sim/validation/validate.hpp"
#include "topologies/dot_io.hpp"

namespace po = boost::program_options;
using namespace dtsim;

namespace {

// `dtsim run` of a step that does not fit its GPUs: the summary and trace are written, the
// status says the layout is not usable (2 is bad input, 3 this machine's memory, 70 a bug).
constexpr int kExitOutOfGpuMemory = 4;

// The commands and their options: `dtsim --help` and `dtsim --usage` print it, and the README's
// command block is this text (CTest usage_doc).
constexpr const char* kUsage =
    "usage: dtsim run [SCENARIO.ini] [--section.key=value ...] [--output FILE.h5] [--json] [--threads N] [--fold-tp]\n"
    "                 [--max-memory GIB] | dtsim run --template\n"
    "       dtsim serve SCENARIO.ini [--section.key=value ...] [--output FILE.h5] [--json] [--threads N]\n"
    "                   [--sweep KEY=V1,V2,... ...] [--zip]\n"
    "       dtsim topology [SCENARIO.ini] [--section.key=value ...] --dot FILE.dot\n"
    "       dtsim collective [SCENARIO.ini] [--section.key=value ...]\n"
    "                        [--op all_reduce|reduce_scatter|all_gather|broadcast|all_to_all] [--gpus N]\n"
    "                        [--sizes 32K:16G] [--algo auto|ring|tree|hierarchical|nvls|nvls_tree] [--nccl VERSION] [--json]\n"
    "       dtsim validate FILE.csv [--source ID,...] [--json] | dtsim validate FILE.csv --scenario RUN_ID\n"
    "       dtsim sweep [SCENARIO.ini] --sweep KEY=V1,V2,... [--sweep KEY=START:STOP:STEP ...] [--zip]\n"
    "                   [--section.key=value ...] [--output FILE.h5] [--csv FILE.csv] [--traces DIR] [--fold-tp]\n"
    "                   [--jobs N] [--shard K/N] [--resume] [--quiet]\n"
    "       dtsim merge OUT.h5 PART.h5... [--csv OUT.csv]\n"
    "       dtsim export TRACE.h5 --chrome OUT.json[.gz] [--ranks 0,3,8-15] [--window START:END]\n"
    "       dtsim catalog models|gpus|links|frameworks|nccl\n"
    "       dtsim fit --model NAME [--precision fp16|bf16|fp8|int8|int4] [--context N] [--batch N]\n"
    "                 [--mode inference|training] [--framework megatron-core] [--recompute full] [--zero N]\n"
    "                 [--dp 1] [--cp 1] [--json]\n"
    "       dtsim fit --seed-table [--claims FILE.csv] [--speed 20] [--price GPU=USD ...] [--json]\n"
    "       dtsim advise --model NAME --gpus A100-80GB,H100-80GB,RTX4090 [--framework megatron-core] [--max-gpus 256]\n"
    "                    [--tokens T] [--global-batch N] [--price GPU=USD_PER_HOUR ...] [--top 2]\n"
    "                    [--nics-per-node 4] [--nic-gbps 200] [--jobs N] [--output FILE.h5] [--json]\n"
    "       dtsim --help | dtsim --usage | dtsim VERB --help\n";

struct Command {
  po::variables_map vm;
  std::string scenario;
};

Command parse(int argc, char** argv, const po::options_description& own) {
  po::options_description all;
  all.add(own).add(scenario_options());
  all.add_options()("scenario", po::value<std::string>()->default_value(""), "scenario file");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  Command c;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), c.vm);
  } catch (const po::too_many_positional_options_error&) {
    throw InputError("only one scenario file may be given");
  } catch (const po::unknown_option& e) {
    std::vector<std::string> names;  // the verb's own options first: they win a tie
    for (const auto& option : own.options()) names.push_back(option->long_name());
    for (const std::string& key : scenario_key_names()) names.push_back(key);
    std::string typed = e.get_option_name();
    typed = typed.substr(std::min(typed.find_first_not_of('-'), typed.size()));
    typed = typed.substr(0, typed.find('='));
    throw InputError(fmt::format("unknown option '{}'{}; run 'dtsim {} --help' for the valid options and keys",
                                 e.get_option_name(), did_you_mean(typed, names), argc > 0 ? argv[0] : "run"));
  } catch (const po::error& e) {
    throw InputError(e.what());
  }
  c.scenario = c.vm["scenario"].as<std::string>();
  return c;
}

void print_help(const po::options_description& own) {
  std::cout << kUsage << "\n" << own << "\n" << scenario_options() << "\n";
}

int run_command(int argc, char** argv) {
  po::options_description own("dtsim run options");
  own.add_options()("help,h", "print this help")("output,o", po::value<std::string>(),
                                                  "write the HDF5 trace to FILE (overrides output.trace)")(
      "json", "print the summary as one JSON object")(
      "threads", po::value<int>()->default_value(0), "engine threads; 0 = all cores (results do not depend on it)")(
      "fold-tp", "simulate one rank per TP group for the whole group where the cluster is symmetric (same results)")(
      "max-memory", po::value<double>()->default_value(0),
      "GiB one simulation may use; refused beyond it, with the estimate (0 = half of this machine's memory)")(
      "template", "print an annotated starting scenario (dtsim run --template > my.ini) and exit");
  Command cmd = parse(argc, argv, own);
  if (cmd.vm.count("help")) {
    print_help(own);
    return 0;
  }
  if (cmd.vm.count("template")) {
    std::cout << kScenarioTemplate;
    return 0;
  }
  Scenario sc = load_scenario(cmd.scenario, cmd.vm);
  const std::string trace = cmd.vm.count("output") ? cmd.vm["output"].as<std::string>() : sc.trace_path;
  check_trace_target(trace, cmd.scenario, cmd.vm.count("output") > 0 || !cmd.vm["output.trace"].defaulted());
  if (!trace.empty()) check_output_path(trace, "trace file '" + trace + "'", {cmd.scenario});
  const int threads = cmd.vm["threads"].as<int>();
  if (threads < 0 || threads > limits::kMaxThreads)
    throw InputError(fmt::format("--threads {}: must be from 1 to {}, or 0 for all cores", threads, limits::kMaxThreads));
  const double max_memory_gib = cmd.vm["max-memory"].as<double>();
  if (!(max_memory_gib >= 0 && max_memory_gib <= 1e6))
    throw InputError(fmt::format("--max-memory {}: must be a number of GiB from 0 to 1000000 (0 = half of this "
                                 "machine's memory)", max_memory_gib));
  const EngineResult result = run_scenario(sc, trace, threads > 0 ? threads : tbb::info::default_concurrency(),
                                           cmd.vm.count("fold-tp") > 0, max_memory_gib * 1024 * 1024 * 1024);
  std::cout << (cmd.vm.count("json") ? format_summary_json(sc, result.summary, result.links) + "\n"
                                     : format_summary_text(sc, result.summary, result.links, result.ranks));
  if (!trace.empty() && !cmd.vm.count("json"))
    std::cout << fmt::format("  trace              {} (detail: {})\n", trace, trace_detail_name(sc.trace_detail));
  return result.summary.oom ? kExitOutOfGpuMemory : 0;
}

int serve_command(int argc, char** argv) {
  po::options_description own("dtsim serve options");
  own.add_options()("help,h", "print this help")("output,o", po::value<std::string>(),
                                                  "write the HDF5 trace to FILE (overrides output.trace)")(
      "json", "print the summary as one JSON object")(
      "threads", po::value<int>()->default_value(1), "engine threads (results do not depend on it)")(
      "sweep", po::value<std::vector<std::string>>()->composing(),
      "an axis: KEY=V1,V2,... or KEY=START:STOP:STEP; prints one row per point")(
      "zip", "pair the axes (equal lengths) instead of their cartesian product");
  Command cmd = parse(argc, argv, own);
  if (cmd.vm.count("help")) {
    print_help(own);
    return 0;
  }
  if (cmd.scenario.empty())
    throw InputError("dtsim serve: give a scenario file with a [model], a [cluster] and an [inference] section, e.g. "
                     "scenarios/serve/llama3-70b-2x3090-nvlink.ini (the built-in default is a 384-GPU training run)");
  const int threads = cmd.vm["threads"].as<int>();
  if (threads < 1 || threads > limits::kMaxThreads)
    throw InputError(fmt::format("--threads {}: must be from 1 to {}", threads, limits::kMaxThreads));
  if (cmd.vm.count("sweep")) {
    if (cmd.vm.count("output"))
      throw InputError("dtsim serve: --output writes one point's trace; give it without --sweep");
    ServeSweep sweep{cmd.scenario, {}, {}, threads, cmd.vm.count("json") > 0};
    std::vector<std::string> fixed_keys;
    const po::options_description keys = scenario_options();
    for (const auto& option : keys.options()) {
      const std::string& key = option->long_name();
      if (!cmd.vm[key].defaulted()) {
        sweep.fixed.emplace_back(key, cmd.vm[key].as<std::string>());
        fixed_keys.push_back(key);
      }
    }
    sweep.spec = make_sweep_spec(cmd.scenario, {}, cmd.vm["sweep"].as<std::vector<std::string>>(),
                                 cmd.vm.count("zip") > 0, fixed_keys);
    std::cout << run_serve_sweep(sweep);
    return 0;
  }
  Scenario sc = load_scenario(cmd.scenario, cmd.vm, SweepSection::refuse, Workload::inference);
  const std::string trace = cmd.vm.count("output") ? cmd.vm["output"].as<std::string>() : sc.trace_path;
  check_trace_target(trace, cmd.scenario, cmd.vm.count("output") > 0 || !cmd.vm["output.trace"].defaulted());
  if (!trace.empty()) check_output_path(trace, "trace file '" + trace + "'", {cmd.scenario});
  const ServeResult result = run_serve(sc, trace, threads);
  std::cout << (cmd.vm.count("json") ? format_serve_json(sc, result) + "\n" : format_serve_text(sc, result));
  if (!trace.empty() && !cmd.vm.count("json"))
    std::cout << fmt::format("  trace              {} (detail: {})\n", trace, trace_detail_name(sc.trace_detail));
  return result.fits ? 0 : kExitOutOfGpuMemory;
}

int topology_command(int argc, char** argv) {
  po::options_description own("dtsim topology options");
  own.add_options()("help,h", "print this help")("dot", po::value<std::string>(), "write the cluster as GraphViz DOT");
  Command cmd = parse(argc, argv, own);
  if (cmd.vm.count("help")) {
    print_help(own);
    return 0;
  }
  if (!cmd.vm.count("dot")) throw InputError("dtsim topology: --dot FILE is required");
  const std::string path = cmd.vm["dot"].as<std::string>();
  check_output_path(path, "--dot " + path, {cmd.scenario});
  // Only the cluster is used: a serving scenario (with [inference] keys) is as good as a training one.
  Scenario sc = load_scenario(cmd.scenario, cmd.vm, SweepSection::refuse, Workload::cluster);
  const ClusterGraph graph = make_cluster(sc);
  write_file_safely(path, "--dot " + path, [&](std::ostream& out) { write_dot(graph, out); });
  std::cout << fmt::format("wrote {} ({} GPUs, {} directed links)\n", path, graph.num_gpus(), graph.num_links());
  return 0;
}

int collective_command(int argc, char** argv) {
  po::options_description own("dtsim collective options");
  own.add_options()("help,h", "print this help")(
      "op", po::value<std::string>()->default_value("all_reduce"), "all_reduce | reduce_scatter | all_gather | broadcast | all_to_all")(
      "gpus", po::value<int>()->default_value(0), "GPUs in the group (the first N of the cluster); 0 = all")(
      "sizes", po::value<std::string>()->default_value("32K:16G"), "message sizes: powers of two from:to (K, M, G)")(
      "algo", po::value<std::string>()->default_value(""),
      "algorithm: auto | ring | tree | hierarchical | nvls | nvls_tree (default: the scenario's cluster.nccl_algorithm)")(
      "nccl", po::value<std::string>()->default_value(""),
      "NCCL release, e.g. 2.18 or 2.27.7 (default: the scenario's cluster.nccl_version)")("json", "print JSON");
  Command cmd = parse(argc, argv, own);
  if (cmd.vm.count("help")) {
    print_help(own);
    return 0;
  }
  const std::string algo_text = cmd.vm["algo"].as<std::string>();
  const CommKind kind = parse_collective(cmd.vm["op"].as<std::string>(), "--op");
  const std::vector<double> sizes = parse_size_sweep(cmd.vm["sizes"].as<std::string>(), "--sizes");
  // Only the cluster is used: a serving scenario (with [inference] keys) is as good as a training one.
  Scenario sc = load_scenario(cmd.scenario, cmd.vm, SweepSection::refuse, Workload::cluster);
  const ClusterGraph graph = make_cluster(sc);
  const int gpus = cmd.vm["gpus"].as<int>() == 0 ? graph.num_gpus() : cmd.vm["gpus"].as<int>();
  const std::optional<Algorithm> algorithm = algo_text.empty() ? sc.algorithm : parse_algorithm(algo_text, "--algo");
  const std::string algo = algorithm ? std::string(algorithm_name(*algorithm)) : "auto";
  const std::string nccl_text = cmd.vm["nccl"].as<std::string>();
  const std::string nccl_version = nccl_text.empty() ? sc.nccl_version : nccl_text;
  const NcclProfile& nccl = nccl_text.empty() ? *sc.nccl : find_nccl_profile(nccl_text, "--nccl");
  const std::vector<CollectivePoint> points = sweep_collective(graph, kind, gpus, sizes, sc.protocol, algorithm, nccl);
  const std::string op = cmd.vm["op"].as<std::string>();
  if (cmd.vm.count("json")) {
    std::string rows;
    for (const CollectivePoint& p : points)
      rows += fmt::format("{}{{\"bytes\": {:.0f}, \"time_us\": {:.9g}, \"algbw_GBps\": {:.9g}, \"busbw_GBps\": {:.9g}, "
                          "\"algorithm\": \"{}\", \"protocol\": \"{}\", \"channels\": {}}}",
                          rows.empty() ? "" : ", ", p.bytes, p.time_s * 1e6, p.algbw_GBps, p.busbw_GBps,
                          algorithm_name(p.algorithm), protocol_name(p.protocol), p.channels);
    std::cout << fmt::format("{{\"op\": \"{}\", \"algo\": \"{}\", \"gpus\": {}, \"nccl\": \"{}\", \"nccl_profile\": "
                             "\"{}\", \"points\": [{}]}}\n",
                             op, algo, gpus, nccl_version, nccl.version, rows);
    return 0;
  }
  std::cout << fmt::format("# {} ({}) over {} GPUs of {}, NCCL {} (profile {}: {})\n", op, algo, gpus, sc.source,
                           nccl_version, nccl.version, nccl.releases);
  std::cout << fmt::format("{:>14} {:>12} {:>12} {:>12} {:>12} {:>9} {:>8}\n", "size (B)", "time (us)", "algbw (GB/s)",
                           "busbw (GB/s)", "algorithm", "protocol", "channels");
  for (const CollectivePoint& p : points)
    std::cout << fmt::format("{:>14.0f} {:>12.1f} {:>12.2f} {:>12.2f} {:>12} {:>9} {:>8}\n", p.bytes, p.time_s * 1e6,
                             p.algbw_GBps, p.busbw_GBps, algorithm_name(p.algorithm), protocol_name(p.protocol),
                             p.channels);
  return 0;
}

int validate_command(int argc, char** argv) {
  po::options_description own("dtsim validate options");
  own.add_options()("help,h", "print this help")("file", po::value<std::string>(), "runs CSV (training) or inference CSV")(
      "source", po::value<std::string>()->default_value(""), "only rows of these source_id (inference CSV: source) values (comma-separated)")(
      "json", "print JSON")("scenario", po::value<std::string>(),
                            "print the scenario file of row RUN_ID as validate runs it (dtsim run on it predicts the same step)");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(own).positional(positional).run(), vm);
  } catch (const po::error& e) {
    throw InputError(fmt::format("dtsim validate: {}", e.what()));
  }
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << own << "\n";
    return 0;
  }
  if (!vm.count("file")) throw InputError("dtsim validate: give the runs CSV file, e.g. shared/validation/runs.csv "
                     "(or an inference CSV, e.g. tests/validation/inference_runs.csv)");
  std::vector<std::string> sources;
  std::stringstream list(vm["source"].as<std::string>());
  for (std::string id; std::getline(list, id, ',');)
    if (!id.empty()) sources.push_back(id);
  const std::string file = vm["file"].as<std::string>();
  const bool json = vm.count("json") > 0;
  if (vm.count("scenario")) {
    if (json || !sources.empty())
      throw InputError("dtsim validate: --scenario prints one row's scenario file; it takes no --source or --json");
    if (is_inference_csv(file)) throw InputError(fmt::format("dtsim validate: --scenario takes a training runs CSV; "
                                                             "{} is an inference CSV", file));
    std::cout << validation_row_scenario(file, vm["scenario"].as<std::string>());
    return 0;
  }
  // An inference CSV (tests/validation/inference_runs.csv's columns) is compared through dtsim serve.
  if (is_inference_csv(file)) std::cout << inference_validation_report(validate_inference_runs(file, sources), json);
  else std::cout << validation_report(validate_runs(file, sources), json);
  return 0;
}

int sweep_command(int argc, char** argv) {
  po::options_description own("dtsim sweep options");
  own.add_options()("help,h", "print this help")(
      "sweep", po::value<std::vector<std::string>>()->composing(), "an axis: KEY=V1,V2,... or KEY=START:STOP:STEP")(
      "zip", "pair the axes (equal lengths) instead of their cartesian product")(
      "output,o", po::value<std::string>()->default_value(""), "write the /sweep table to FILE.h5")(
      "csv", po::value<std::string>()->default_value(""), "write the table as CSV")(
      "traces", po::value<std::string>()->default_value(""), "keep each point's trace as DIR/point-NNNNNN.h5")(
      "jobs,j", po::value<int>()->default_value(0), "points run at once; 0 = all cores")(
      "shard", po::value<std::string>()->default_value("1/1"), "run only the K-th of N slices of the points")(
      "resume", "skip the points an interrupted run of the same sweep finished (kept in OUTPUT.progress)")(
      "quiet,q", "no progress on stderr")(
      "fold-tp", "simulate one rank per TP group where the cluster is symmetric (as dtsim run --fold-tp)");
  Command cmd = parse(argc, argv, own);
  if (cmd.vm.count("help")) {
    print_help(own);
    return 0;
  }
  SweepRequest r;
  r.plan.scenario_path = cmd.scenario;
  std::vector<std::string> fixed_keys;
  const po::options_description keys = scenario_options();
  for (const auto& option : keys.options()) {
    const std::string& key = option->long_name();
    if (!cmd.vm[key].defaulted()) {
      r.plan.fixed.emplace_back(key, cmd.vm[key].as<std::string>());
      fixed_keys.push_back(key);
    }
  }
  const auto axes = cmd.vm.count("sweep") ? cmd.vm["sweep"].as<std::vector<std::string>>() : std::vector<std::string>{};
  r.plan.spec = make_sweep_spec(cmd.scenario, read_sweep_section(cmd.scenario), axes, cmd.vm.count("zip") > 0, fixed_keys);
  r.plan.traces_dir = cmd.vm["traces"].as<std::string>();
  r.plan.fold_tp = cmd.vm.count("fold-tp") > 0;
  r.shard = parse_shard(cmd.vm["shard"].as<std::string>());
  r.jobs = cmd.vm["jobs"].as<int>();
  if (r.jobs < 0) throw InputError(fmt::format("--jobs {}: must be >= 1, or 0 for all cores", r.jobs));
  r.output = cmd.vm["output"].as<std::string>();
  r.csv = cmd.vm["csv"].as<std::string>();
  r.quiet = cmd.vm.count("quiet") > 0;
  r.resume = cmd.vm.count("resume") > 0;
  return run_sweep(r);
}

int merge_command(int argc, char** argv) {
  po::options_description own("dtsim merge options");
  own.add_options()("help,h", "print this help")("files", po::value<std::vector<std::string>>(), "OUT.h5 PART.h5...")(
      "csv", po::value<std::string>()->default_value(""), "also write the merged table as CSV");
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(own).positional(positional).run(), vm);
  } catch (const po::error& e) {
    throw InputError(fmt::format("dtsim merge: {}", e.what()));
  }
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << own << "\n";
    return 0;
  }
  const auto files = vm.count("files") ? vm["files"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (files.size() < 2) throw InputError("dtsim merge: give the output file and the parts: dtsim merge OUT.h5 PART.h5...");
  return run_merge(files.front(), vm["csv"].as<std::string>(), {files.begin() + 1, files.end()});
}

int export_command(int argc, char** argv) {
  po::options_description own("dtsim export options");
  own.add_options()("help,h", "print this help")("trace", po::value<std::string>(), "dtsim HDF5 trace")(
      "chrome", po::value<std::string>(), "write Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE; gzip'd when FILE ends in .gz")(
      "ranks", po::value<std::string>(), "only these traced ranks: numbers and ranges, e.g. 0,3,8-15")(
      "window", po::value<std::string>(), "only events overlapping START:END seconds of the step, e.g. 2.5:3");
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(own).positional(positional).run(), vm);
  } catch (const po::error& e) {
    throw InputError(fmt::format("dtsim export: {}", e.what()));
  }
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << own << "\n";
    return 0;
  }
  if (!vm.count("trace")) throw InputError("dtsim export: give the trace file, e.g. dtsim export run.h5 --chrome run.json");
  if (!vm.count("chrome")) throw InputError("dtsim export: --chrome OUT.json is required (the only export format)");
  const std::string trace = vm["trace"].as<std::string>(), json = vm["chrome"].as<std::string>();
  check_output_path(json, "--chrome " + json, {trace});
  ChromeExportFilter filter;
  if (vm.count("ranks")) filter.ranks = parse_rank_list(vm["ranks"].as<std::string>());
  if (vm.count("window")) std::tie(filter.start_ns, filter.end_ns) = parse_time_window(vm["window"].as<std::string>());
  const ChromeExportCounts c = export_chrome_trace(trace, json, filter);
  std::cout << fmt::format("wrote {} from {}: {} op events, {} memory counters, {} metadata events\n", json, trace,
                           c.op_events, c.counter_events, c.metadata_events);
  return 0;
}

}  // namespace

namespace {

// The command line as typed, for the messages that ask for a report.
std::string command_line(int argc, char** argv) {
  std::string out = "dtsim";
  for (int i = 1; i < argc; ++i) out += std::string(" ") + argv[i];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  trace_h5::no_cleanup_at_exit();
  try {
    const std::string sub = argc > 1 ? argv[1] : "";
    if (sub == "--usage") {
      std::cout << kUsage;
      return 0;
    }
    if (sub == "--help" || sub == "-h" || sub == "help" || sub.empty()) {
      std::cout << kUsage << "\n" << scenario_options() << "\n";
      return sub.empty() ? 2 : 0;
    }
    if (sub == "run") return run_command(argc - 1, argv + 1);
    if (sub == "serve") return serve_command(argc - 1, argv + 1);
    if (sub == "topology") return topology_command(argc - 1, argv + 1);
    if (sub == "collective") return collective_command(argc - 1, argv + 1);
    if (sub == "validate") return validate_command(argc - 1, argv + 1);
    if (sub == "sweep") return sweep_command(argc - 1, argv + 1);
    if (sub == "merge") return merge_command(argc - 1, argv + 1);
    if (sub == "export") return export_command(argc - 1, argv + 1);
    if (sub == "catalog") return catalog_command(argc - 1, argv + 1);
    if (sub == "fit") return fit_command(argc - 1, argv + 1);
    if (sub == "advise") return advise_command(argc - 1, argv + 1);
    throw InputError(fmt::format("unknown command '{}'; valid commands: run, serve, topology, collective, validate, sweep, "
                                 "merge, export, catalog, fit, advise", sub));
  } catch (const InputError& e) {
    std::cerr << "dtsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << fmt::format("dtsim: error: out of memory running '{}': the job needs more memory than this machine "
                             "has; simulate fewer GPUs, layers or micro-batches (the limits: docs/hardening.md)\n",
                             command_line(argc, argv));
    return 3;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("dtsim: internal error: {} (running '{}'). This is a bug in dtsim: please report it "
                             "with this command line and the scenario file\n",
                             e.what(), command_line(argc, argv));
    return 70;
  }
}

// A scenario: model, training setup, parallel layout, cluster and output, read from an INI file
// by Boost.Program_options (sections [model] [training] [parallel] [cluster] [output], and
// [sweep] for dtsim sweep). Every key is also a command-line option (--parallel.tp=8) that
// overrides the file. The defaults are the built-in scenario: BLOOM-176B on 48 nodes x 8 A100-SXM4-80GB (scenarios/bloom-176b.ini).
#pragma once
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>
#include <vector>

#include "sim/network/comm_model.hpp"
#include "sim/engine/engine.hpp"
#include "topologies/builders.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/inference_program.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// cluster.slow_gpus: GPU `gpu` computes at `factor` of its nominal speed.
struct GpuFactor {
  int gpu = 0;
  double factor = 1;
};
// cluster.degraded_links: the link between devices `a` and `b` (both directions) carries
// `factor` of its bandwidth.
struct LinkFactor {
  std::string a, b;
  double factor = 1;
};

struct Scenario {
  std::string source;            // the file it came from, or "built-in default"
  std::string framework;         // the framework profile (training.framework) the step runs with
  ModelShape model;
  ParallelPlan plan;             // validated against the model and the cluster
  ClusterConfig cluster;
  std::string topology_file;     // a DOT file replacing the built cluster, "" for none
  std::vector<GpuFactor> slow_gpus;          // checked against the GPU count by validate_scenario
  std::vector<LinkFactor> degraded_links;    // applied (and checked) by make_cluster
  Precision precision = Precision::bf16;
  std::optional<Protocol> protocol;  // forced NCCL protocol; nullopt = chosen per collective
  std::optional<Algorithm> algorithm;  // forced NCCL algorithm; nullopt = chosen per collective
  std::string nccl_version;      // cluster.nccl_version as given (or the framework's)
  const NcclProfile* nccl = &legacy_nccl_profile();  // its profile
  std::string trace_path;        // "" = no trace
  TraceDetail trace_detail = TraceDetail::stages;
  std::string resolved_text;     // every key = value, as run
  std::string chosen;            // the parallel sizes chosen for keys left to auto, in words ("" for none)
  ServeSetup inference;          // the [inference] keys (dtsim serve; defaults for training)
};

// What a scenario is read for: a training step (dtsim run and the commands built on it), whose
// files may not set [inference] keys; inference (dtsim serve), which reads them and refuses
// [training] keys and [parallel] keys but tp, pp, dp; or the cluster alone (topology,
// collective), which takes either kind of file.
enum class Workload { training, inference, cluster };

// Every scenario key with its unit, default and meaning (for --help and parsing).
boost::program_options::options_description scenario_options();
// The names of those keys ("parallel.tp", ...), for "did you mean" messages.
std::vector<std::string> scenario_key_names();

// Whether a file's [sweep] section is accepted (dtsim sweep: each point is a scenario of the same
// file) or refused with a message pointing to `dtsim sweep` (every other command).
enum class SweepSection { refuse, accept };

// Reads `path` (empty: the built-in default) with command-line values in `cli` taking precedence.
// The variables map must come from parsing the command line with scenario_options(). Checks
// every value and the consistency of the layout; throws InputError naming file, key and value.
// `num_gpus` is the cluster's GPU count (known once the topology is built); it is checked by
// validate_scenario.
Scenario load_scenario(const std::string& path, boost::program_options::variables_map cli,
                       SweepSection sweep = SweepSection::refuse, Workload workload = Workload::training);

// load_scenario with the file's text given as `text`, named `name` in messages (tests, fuzzing).
Scenario load_scenario_text(const std::string& text, const std::string& name,
                            boost::program_options::variables_map cli, SweepSection sweep = SweepSection::refuse,
                            Workload workload = Workload::training);

// The resolved text (every key = value, as in Scenario::resolved_text) of the file with `cli`
// taking precedence, without checking the values; the file may have a [sweep] section.
std::string resolved_scenario_text(const std::string& path, boost::program_options::variables_map cli);

// One `key = value` line of a file's [sweep] section, in file order.
struct SweepLine {
  std::string key, value;
};
// The [sweep] section of `path` (none: empty); the rest of the file is checked as by load_scenario.
std::vector<SweepLine> read_sweep_section(const std::string& path);

// Checks the layout against the number of GPUs the cluster turned out to have.
void validate_scenario(Scenario& scenario, int num_gpus);

std::string_view trace_detail_name(TraceDetail d);

}  // namespace dtsim

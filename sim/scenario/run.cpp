// Composition of scenario, cluster, program, engine and trace for one step.
#include "sim/scenario/run.hpp"

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>

#include "sim/base/error.hpp"
#include "sim/scenario/memory_budget.hpp"
#include "sim/trace/hdf5_sink.hpp"
#include "topologies/dot_io.hpp"
#include "topologies/routing.hpp"
#include "workloads/program.hpp"

namespace dtsim {

ClusterGraph make_cluster(const Scenario& sc) {
  ClusterGraph graph;
  try {
    if (sc.topology_file.empty()) {
      graph = build_cluster(sc.cluster);
    } else {
      graph = read_dot(sc.topology_file);
      require_gpu_nodes(graph, sc.topology_file);
    }
    for (const LinkFactor& f : sc.degraded_links) scale_link_pair(graph, f.a, f.b, f.factor);
    Router(graph).check_connected();
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", sc.source, e.what()));
  }
  return graph;
}

std::vector<DeviceRecord> device_records(const ClusterGraph& graph) {
  std::vector<DeviceRecord> out;
  for (VertexId v = 0; v < boost::num_vertices(graph.graph()); ++v) {
    const Device& d = graph.device(v);
    out.push_back(DeviceRecord{d.name, std::string(device_kind_name(d.kind)), d.node, d.gpu_index});
  }
  return out;
}

bool tp_fold_exact(const Scenario& sc) {
  const ClusterConfig& c = sc.cluster;
  const int tp = sc.plan.tp, nics = c.nics_per_node;
  const bool nics_permute = c.nodes == 1 || nics % tp == 0 || tp % nics == 0;
  const bool nics_on_one_leaf = c.nodes == 1 || c.fabric != Fabric::fat_tree || kLeafPorts % nics == 0;
  return sc.topology_file.empty() && sc.slow_gpus.empty() && sc.degraded_links.empty() &&
         (c.node_kind == NodeKind::nvswitch || c.node_kind == NodeKind::nvl72) && sc.plan.order[0] == 't' && c.gpus_per_node % tp == 0 && nics_permute &&
         nics_on_one_leaf && c.spines == 0;
}

EngineResult run_scenario(Scenario& sc, const std::string& trace_path, int threads, bool fold_tp,
                          double max_memory_bytes) {
  // Before the cluster is built (a million-GPU graph is itself most of the footprint), after the
  // layout's own checks (the op limit among them), which do not depend on the machine.
  if (sc.topology_file.empty()) {
    const int gpus = sc.cluster.nodes * sc.cluster.gpus_per_node;  // at most 2^20: checked when read
    validate_scenario(sc, gpus);
    check_memory_budget(sc, gpus, max_memory_bytes);
  }
  const ClusterGraph graph = make_cluster(sc);
  validate_scenario(sc, graph.num_gpus());
  if (!sc.topology_file.empty()) check_memory_budget(sc, graph.num_gpus(), max_memory_bytes);
  const GpuSpec& gpu = find_gpu(sc.cluster.gpu);
  const Program program = build_program(sc.model, sc.plan);
  Engine engine(program, graph, gpu, sc.precision, sc.protocol, sc.algorithm, *sc.nccl);
  std::unique_ptr<TraceSink> sink;
  if (!trace_path.empty()) {
    sink = std::make_unique<Hdf5TraceSink>(trace_path);
    sink->begin(RunInfo{sc.resolved_text, DTSIM_VERSION});
  }
  try {
    EngineOptions options;
    options.threads = threads;
    options.tp_symmetric = tp_fold_exact(sc);
    options.fold_tp = fold_tp && options.tp_symmetric;
    if (!sc.slow_gpus.empty()) {
      options.gpu_speed.assign(graph.num_gpus(), 1.0);
      for (const GpuFactor& f : sc.slow_gpus) options.gpu_speed[f.gpu] = f.factor;
    }
    EngineResult result = engine.run(sink.get(), sc.trace_detail, options);
    if (sink) {
      sink->ranks(result.ranks);
      sink->topology(device_records(graph), result.links);
      sink->summary(result.summary);
      sink->finish();
    }
    return result;
  } catch (...) {
    if (sink) sink->abort();
    throw;
  }
}

void check_trace_target(const std::string& trace_path, const std::string& scenario_path, bool named_on_command_line) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (trace_path.empty() || !fs::exists(trace_path, ec)) return;
  if (!scenario_path.empty() && fs::equivalent(trace_path, scenario_path, ec))
    throw InputError(fmt::format("{}: the trace would overwrite the scenario file itself; name another output",
                                 trace_path));
  if (named_on_command_line) return;
  // HDF5's signature at the start of the file (where dtsim writes it).
  constexpr std::array<char, 8> kSignature = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::array<char, 8> head{};
  std::ifstream in(trace_path, std::ios::binary);
  const bool hdf5 = fs::is_regular_file(trace_path, ec) && in.read(head.data(), head.size()) && head == kSignature;
  if (!hdf5)
    throw InputError(fmt::format("{}: output.trace in {} names an existing file that is not an HDF5 trace; dtsim "
                                 "replaces it only when told on the command line (--output {})",
                                 trace_path, scenario_path, trace_path));
}

}  // namespace dtsim

// The event engine: runs a Program on a cluster. Each rank is a logical process with one
// in-order queue per stream; an op starts when its stream is free and its dependencies are done.
// Collectives start when every member of the group has posted them (rendezvous); a send
// delivers its message to the peer's matching receive when the transfer ends. Events are
// ordered by (time, rank, sequence), so a run is deterministic.
//
// Thread safety: an Engine is used by one thread.
#pragma once
#include <vector>

#include "sim/comm_model.hpp"
#include "sim/compute_model.hpp"
#include "sim/trace_sink.hpp"
#include "topologies/cluster_graph.hpp"
#include "workloads/program.hpp"

namespace dtsim {

enum class TraceDetail { summary, stages, all };

struct EngineResult {
  Summary summary;
  std::vector<RankRecord> ranks;
  std::vector<LinkRecord> links;
};

class Engine {
 public:
  // protocol, algorithm: force one NCCL protocol / algorithm for every collective (nullopt: the
  // model chooses).
  Engine(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, Precision precision,
         std::optional<Protocol> protocol = std::nullopt, std::optional<Algorithm> algorithm = std::nullopt);
  // Runs one step; streams events and memory records of traced ranks to `sink` (may be null).
  EngineResult run(TraceSink* sink, TraceDetail detail);

 private:
  const Program& program_;
  const ClusterGraph& graph_;
  const GpuSpec& gpu_;
  Router router_;
  CommModel comm_;
  ComputeModel compute_;
};

}  // namespace dtsim

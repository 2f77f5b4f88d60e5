// The event engine: runs a Program on a cluster. Each rank is a logical process with one
// in-order queue per stream; an op starts when its stream is free and its dependencies are done.
// Collectives start when every member of the group has posted them (rendezvous); a send
// delivers its message to the peer's matching receive when the transfer ends.
//
// Parallel scheme (conservative windows): every cross-rank effect goes through the network and
// arrives at least the lookahead (the least latency tail of any collective or send the step can
// start, found before the step) after it was caused. So all rank events in [T, T + lookahead), T
// the earliest pending event, can be handled rank by rank in parallel. Each of the `threads`
// threads owns a shard of the ranks and node domains for the whole step (crew.hpp): it runs
// its ranks' events of the window and its node domains' networks (transfers that stay inside a node
// on NVLink links nothing else crosses, domains.hpp), buffering what they do to shared state
// (posting a collective, starting a send) and their trace records. Then the calling thread applies
// those actions in (time, rank, sequence) order together with the global network's events; what the
// network delivers to a rank waits in its shard until the shard's own thread next runs it. The
// result and the trace are identical for any thread count.
//
// Thread safety: an Engine is used by one thread at a time (it may use `threads` TBB workers).
#pragma once
#include <vector>

#include "sim/network/comm_model.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/trace/sink.hpp"
#include "topologies/cluster_graph.hpp"
#include "workloads/program.hpp"

namespace dtsim {

enum class TraceDetail { summary, stages, all };

struct EngineOptions {
  int threads = 1;                // TBB worker threads for the rank-local phase, >= 1
  std::vector<double> gpu_speed{};  // compute speed factor per GPU (> 0; 1 = nominal); empty = all 1
  bool node_domains = true;       // in-node transfers on per-node flow networks where they can be (domains.hpp)
  bool lone_domains = true;       // node domains whose flows never share a link timed in closed form; same results
  bool kernel_chains = true;      // runs of kernels with one event each run (rank.hpp); same results
  // The caller says that permuting every TP group's ranks alike maps the cluster onto itself
  // (tp_fold_exact in run.hpp). Then each transfer leaving a TP group carries its TP copies' as
  // well (fold.hpp); same results. Ignored with MoE or gpu_speed.
  bool tp_symmetric = false;
  // With tp_symmetric: runs one rank per TP group for all of them; same results from 1/tp the
  // events. Ignored also with every rank traced.
  bool fold_tp = false;
  // Steps of fewer ranks run each window's shards on the calling thread in turn (their windows
  // are too small to hand out; engine.cpp); same results. Tests set 0 to hand out every window.
  int parallel_from_ranks = 2048;
};

struct EngineResult {
  Summary summary;
  std::vector<RankRecord> ranks;
  std::vector<LinkRecord> links;
};

class Engine {
 public:
  // protocol, algorithm: force one NCCL protocol / algorithm for every collective (nullopt: the
  // model chooses); nccl: the NCCL release the collectives follow; launch_ns: each kernel's launch
  // gap (ComputeModel).
  Engine(const Program& program, const ClusterGraph& graph, const GpuSpec& gpu, Precision precision,
         std::optional<Protocol> protocol = std::nullopt, std::optional<Algorithm> algorithm = std::nullopt,
         const NcclProfile& nccl = legacy_nccl_profile(), TimeNs launch_ns = ComputeModel::kLaunchOverheadNs);
  // Runs one step; streams events and memory records of traced ranks to `sink` (may be null).
  EngineResult run(TraceSink* sink, TraceDetail detail, const EngineOptions& options = {});

 private:
  const Program& program_;
  const ClusterGraph& graph_;
  const GpuSpec& gpu_;
  Router router_;
  CommModel comm_;
  ComputeModel compute_;
};

}  // namespace dtsim

// Communication model (first version): ring collectives and point-to-point sends over the
// graph's routes. A ring's bandwidth is the slowest hop's bottleneck link times the achievable
// fraction of that link kind; every algorithm step pays the hop latency plus a software step
// latency. Ring all-reduce: 2(n-1)/n * S / B + 2(n-1) * alpha; reduce-scatter and all-gather:
// (n-1)/n * S / B + (n-1) * alpha; send: S / B + alpha.
#pragma once
#include <span>
#include <vector>

#include "sim/base/units.hpp"
#include "topologies/cluster_graph.hpp"
#include "topologies/routing.hpp"
#include "workloads/program.hpp"

namespace dtsim {

// Fraction of a link's wire rate that NCCL-style transfers reach, per link kind. Calibrated per
// kind on shared/validation/collectives.csv (see comm_model.cpp), never per row.
double achievable_fraction(LinkKind kind);

struct PathParams {
  double bytes_per_s = 0;  // effective bandwidth
  TimeNs alpha_ns = 0;     // per-step latency
};

class CommModel {
 public:
  CommModel(const ClusterGraph& graph, const Router& router) : graph_(graph), router_(router) {}

  // Ring over `gpus` in the given order (neighbour i -> i+1 mod n).
  PathParams ring(std::span<const int> gpus) const;
  PathParams path(int src_gpu, int dst_gpu) const;
  const Router& router() const { return router_; }
  static TimeNs collective_time(CommKind kind, double bytes, int n, PathParams p);
  // Latency-bound steps of the ring algorithm: 2(n-1) for all-reduce, n-1 for reduce-scatter
  // and all-gather, 1 for a send.
  static int steps(CommKind kind, int n);
  // Bytes each ring hop carries for a collective of `bytes` over n ranks.
  static double bytes_per_hop(CommKind kind, double bytes, int n);

  // NCCL per-step software latency (kernel-side synchronisation per ring step), of the order of
  // the base latencies in NCCL's tuning model.
  static constexpr TimeNs kStepLatencyNs = 2000;

 private:
  const ClusterGraph& graph_;
  const Router& router_;
};

}  // namespace dtsim

// A simulated nccl-tests: times one collective over a group of GPUs of a cluster for a sweep of
// message sizes, with nccl-tests' algorithm and bus bandwidth definitions. This is `dtsim
// collective`, for checking a machine description before trusting a training run.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "sim/network/comm_model.hpp"
#include "topologies/cluster_graph.hpp"
#include "workloads/program.hpp"

namespace dtsim {

struct CollectivePoint {
  double bytes = 0;
  double time_s = 0;
  double algbw_GBps = 0;  // bytes / time
  double busbw_GBps = 0;  // algbw x 2(n-1)/n (all-reduce) or x (n-1)/n (reduce-scatter, all-gather)
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;       // rings (tree: channels of two trees each; hierarchical: rings across the nodes;
                          // nvls: the release's NVLS thread blocks)
};

// "all_reduce" | "reduce_scatter" | "all_gather"; throws InputError naming `key`.
CommKind parse_collective(std::string_view text, std::string_view key);
// "32K:16G" = powers of two from 32 KiB to 16 GiB (suffixes K, M, G are binary); one size alone
// is allowed. Throws InputError naming `key`.
std::vector<double> parse_size_sweep(std::string_view text, std::string_view key);

// A collective over GPUs 0..gpus-1 of `graph`, one size at a time on an idle network, with the
// algorithm and protocol chosen per size (or forced), as NCCL release `nccl` runs it.
std::vector<CollectivePoint> sweep_collective(const ClusterGraph& graph, CommKind kind, int gpus,
                                              const std::vector<double>& sizes, std::optional<Protocol> protocol,
                                              std::optional<Algorithm> algorithm = std::nullopt,
                                              const NcclProfile& nccl = legacy_nccl_profile());

}  // namespace dtsim

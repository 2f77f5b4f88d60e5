// Sweeps of one ring collective over message sizes, through the same rings, protocol choice and
// lowering to flows as the engine uses.
#include "sim/network/collective_bench.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "sim/base/error.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/network/nvls.hpp"
#include "sim/network/transfers.hpp"

namespace dtsim {

CommKind parse_collective(std::string_view text, std::string_view key) {
  if (text == "all_reduce") return CommKind::all_reduce;
  if (text == "reduce_scatter") return CommKind::reduce_scatter;
  if (text == "all_gather") return CommKind::all_gather;
  if (text == "broadcast") return CommKind::broadcast;
  if (text == "all_to_all") return CommKind::all_to_all;
  throw InputError(fmt::format("{} = '{}': valid values are all_reduce, reduce_scatter, all_gather, broadcast, all_to_all",
                               key, text));
}

namespace {
double parse_size(std::string_view text, std::string_view key, std::string_view whole) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(std::string(text), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string_view suffix = used ? text.substr(used) : text;
  const double scale = suffix.empty() ? 1 : suffix == "K" ? 1024.0 : suffix == "M" ? 1024.0 * 1024 : suffix == "G" ? kGiB : 0;
  if (used == 0 || scale == 0 || value <= 0)
    throw InputError(fmt::format("{} = '{}': give sizes like 32K:16G or 1M (suffixes K, M, G)", key, whole));
  return value * scale;
}
}  // namespace

std::vector<double> parse_size_sweep(std::string_view text, std::string_view key) {
  const std::size_t colon = text.find(':');
  const double lo = parse_size(text.substr(0, colon), key, text);
  const double hi = colon == std::string_view::npos ? lo : parse_size(text.substr(colon + 1), key, text);
  if (hi < lo) throw InputError(fmt::format("{} = '{}': the largest size comes after the colon", key, text));
  std::vector<double> sizes;
  for (double s = lo; s <= hi * (1 + 1e-12); s *= 2) sizes.push_back(s);
  return sizes;
}

std::vector<CollectivePoint> sweep_collective(const ClusterGraph& graph, CommKind kind, int gpus,
                                              const std::vector<double>& sizes, std::optional<Protocol> protocol,
                                              std::optional<Algorithm> algorithm, const NcclProfile& nccl) {
  if (gpus < 2 || gpus > graph.num_gpus())
    throw InputError(fmt::format("--gpus {}: need 2 .. {} (the GPUs of the cluster)", gpus, graph.num_gpus()));
  const Router router(graph);
  const CommModel comm(graph, router, protocol, algorithm, nccl);
  std::vector<int> group(gpus);
  std::iota(group.begin(), group.end(), 0);
  const RingSet rings = comm.rings(group);
  if (algorithm == Algorithm::nvls_tree && !nvls::tree_applies(kind, rings, nccl))
    throw InputError(fmt::format(
        "--algo nvls_tree: NCCL {} cannot run this collective as an NVLS tree on GPUs 0-{}: it needs an all-reduce "
        "over the same 3 or more GPUs in each of 2 or more NVLink domains on NVLink switches{}",
        nccl.releases, gpus - 1, nccl.nvls_tree ? "" : " (NVLS trees came with 2.18)"));
  if (algorithm == Algorithm::nvls && !nvls::applies(kind, rings, nccl))
    throw InputError(fmt::format(
        "--algo nvls: NCCL {} cannot run this collective as NVLS on GPUs 0-{}: it needs an all-reduce, "
        "reduce-scatter or all-gather over 3 or more GPUs of one NVLink domain on NVLink switches (reduce-scatter and "
        "all-gather: at most {} GPUs{})",
        nccl.releases, gpus - 1, nccl.nvls_arity,
        nccl.nvls_across_hosts ? "" : "; across the hosts of an NVL72 rack from NCCL 2.21"));
  std::vector<CollectivePoint> out;
  std::vector<HopFlow> hops;
  std::vector<FinishedTransfer> done;
  for (double bytes : sizes) {
    const CollectiveCost cost = comm.cost(kind, bytes, rings);
    lower_collective(kind, bytes, rings, cost, hops);
    Transfers net(graph, router);
    net.start(0, hops, cost.tails(), 0);
    while (done.empty()) net.collect(std::max<TimeNs>(net.next_event(), 0), done);
    CollectivePoint p;
    p.bytes = bytes;
    p.time_s = ns_to_seconds(done.front().end_ns);
    p.algbw_GBps = bytes / p.time_s / kGB;
    p.busbw_GBps = p.algbw_GBps * CommModel::bytes_per_hop(kind, 1.0, gpus);
    p.algorithm = cost.algorithm;
    p.protocol = cost.protocol;
    const LinkKind nvlink = graph.link(rings.hop_routes[0][0]->links[0]).kind;
    p.channels = cost.algorithm == Algorithm::hierarchical ? rings.members_per_node
                 : cost.algorithm == Algorithm::nvls       ? nvls::channels(nvlink, false, nccl)
                 : cost.algorithm == Algorithm::nvls_tree  ? nvls::channels(nvlink, true, nccl)
                                                           : static_cast<int>(rings.rings.size());
    out.push_back(p);
    done.clear();
  }
  return out;
}

}  // namespace dtsim

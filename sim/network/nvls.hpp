// NVLS (NVLink SHARP): collectives reduced inside the NVLink switches, as NCCL runs them from
// 2.17 on (src/device/all_reduce.h RunWorkColl<ncclFuncAllReduce, ..., NCCL_ALGO_NVLS,
// NCCL_PROTO_SIMPLE>, src/transport/nvls.cc; Simple protocol only, src/graph/tuning.cc).
//
// Where: a group inside one NVLink domain of three or more GPUs whose NVLink (generation 4 or
// later: H100, H200, B200, GB200) ends on an NVSwitch (NCCL's search needs an NVSwitch and
// compute capability 9.0: src/graph/search.cc; nvls.cc turns NVLS off at two GPUs).
//
// How the data moves (n GPUs, h = min(n, NCCL_MAX_NVLS_ARITY) heads): every head owns 1/h of
// the data. Its reduce warps read that share through the multicast address (multimem.ld_reduce:
// the switch reads it from all n GPUs and returns the sum) and write the sum back to the
// multicast address (multimem.st: the switch writes it into all n GPUs). A GPU's link therefore
// carries, for an all-reduce of S bytes, S up (its data, read by the switch) plus S/h up (its
// sums), and S/h down (the sums returned) plus S down (every head's sum): S(1 + 1/h) each way,
// where a ring moves 2(n-1)/n S. Reduce-scatter is the reading half (S up, S/n down), all-gather
// the writing half (S/n up, S down). The collective is one pipelined flow over the group's ring
// of hops through the switch (every GPU's up and down link once), carrying the heavier
// direction's bytes.
//
// Link efficiency: besides the data, the links carry the switch's read requests and the
// multicast writes' acknowledgements, and NVLS reaches less of a link than a ring (wire factor
// below, relative to the ring's achievable fraction). Latency: the launch base of the Simple
// protocol plus NCCL's own NVLS latency (no per-step hops: the switch reduces in one step).
// Whether NVLS exists, its heads, latency and channels belong to the NCCL release (NcclProfile).
#pragma once
#include "sim/network/comm_model.hpp"
#include "topologies/cluster_graph.hpp"
#include "topologies/routing.hpp"

namespace dtsim::nvls {

// NVLS's share of a link relative to a ring's (payload / what the link carries), per fabric.
// An HGX baseboard's NVSwitches: 0.82, the mean over the GPU-count sweeps of
// shared/validation/collectives.csv (8 x H200, 5-8 GPUs: c0047-c0053, and 8 x B200, 6-8 GPUs:
// c0059-c0063; each row's algbw x (1 + 1/n) / (link x achievable fraction) lies in 0.79-0.85).
// A rack's NVLink switch tier (NVL72: 18 NVLink switch chips in 9 trays, GPUs of 18 hosts):
// 0.66, from NVIDIA's GB200 NVL72 figure of 850 GB/s bus bandwidth over 32 GPUs (GTC25 S72583,
// collectives.csv c0197); checked on 72 GPUs in tests/validation/nvl72_collectives.csv.
constexpr double kWireFactorNvswitch = 0.82;
constexpr double kWireFactorRack = 0.66;
// The NVLS fabric a route GPU -> switch -> GPU crosses, none when it is not such a route over
// NVLink 4 or later.
NvlsFabric fabric_of(const ClusterGraph& graph, const RouteInfo& route);
// Whether a GPU of the graph hangs off an NVSwitch or NVLink switch over NVLink 4 or later.
bool graph_has_nvls(const ClusterGraph& graph);
// Whether NCCL release `nccl` runs `kind` on the group as NVLS: an all-reduce, reduce-scatter or
// all-gather over 3 or more GPUs of one NVLS domain (across hosts, an NVL72 rack, only where the
// release has it; reduce-scatter and all-gather over at most its arity: src/enqueue.cc
// getAlgoInfo).
bool applies(CommKind kind, const RingSet& rings, const NcclProfile& nccl);
// Bytes a GPU's link carries in its heavier direction for `kind` of `bytes` over n GPUs with at
// most `arity` heads.
double link_bytes(CommKind kind, double bytes, int n, int arity);
// NVLS's wire factor on the fabric.
double wire_factor(NvlsFabric f);
// NVLS tree (NCCL 2.18+, src/device/all_reduce.h RunWorkColl<ncclFuncAllReduce, ...,
// NCCL_ALGO_NVLS_TREE, ...>): an all-reduce over the same m >= 3 GPUs in each of N >= 2 NVLS
// domains. Inside each domain NVLS as above (h = min(m, arity) heads); each head sends its S/h
// share's sum up a tree over the domains (through its own NIC) and multicasts what comes back
// down, the stages pipelined through chunks: one phase in which the domains' NVLS flows
// (S(1 + 1/h) per link) and the heads' network flows run at once. A head's NIC sends its share
// to its parent and to its children: S/h over two domains, 2 S/h beyond (NCCL's tuning halves
// the network bandwidth of NVLS_TREE beyond two nodes, src/graph/tuning.cc). Latency: the Simple
// base, the NVLS latency and 2 log2(N) network steps. Checked on NVIDIA's NVLS-tree plot of 32
// and 8,192 H100s (collectives.csv c0267-c0274) and two NVL72 racks.
bool tree_applies(CommKind kind, const RingSet& rings, const NcclProfile& nccl);
CollectiveCost tree_cost(double bytes, const RingSet& rings, const NcclProfile& nccl);
// Bytes a head's NIC sends for an NVLS tree all-reduce of `bytes` over `nodes` domains with
// `heads` heads each.
double tree_nic_bytes(double bytes, int nodes, int heads);

// The release's NVLS channels (thread blocks) on GPUs whose NVLink is `kind` (NVLink 5:
// Blackwell; else Hopper) for a communicator inside one NVLink domain or spanning domains.
int channels(LinkKind kind, bool spans_domains, const NcclProfile& nccl);
// The cost of `kind` of `bytes` as NVLS on `rings` (applies() holds) under release `nccl`.
CollectiveCost cost(CommKind kind, double bytes, const RingSet& rings, const NcclProfile& nccl);

}  // namespace dtsim::nvls

// Which nodes of a step get a network domain of their own (internal to sim/engine/engine.cpp). A node
// whose transfers among its own GPUs (TP collectives, pipeline sends between its stages, an
// in-node EP all-to-all) run on NVLink links that no transfer leaving the node crosses has a
// flow network of its own: nothing outside can share those links, so the engine solves it in
// the rank-parallel phase, one task per node, and the global flow network keeps only what
// crosses nodes. At 16K GPUs the TP collectives are 87 % of the flows.
//
// A node keeps its transfers in the global network when a group that spans nodes has two or
// more of its GPUs (a hierarchical collective's in-node phase would share its NVLink links),
// when an in-node route leaves NVLink (PCIe nodes: GPU-to-GPU and GPU-to-NIC traffic share the
// PCIe switch), or when a route of a transfer that leaves the node crosses one of those links
// (every such route is checked here: the ring and tree hops of each group spanning nodes and
// the pipeline sends between nodes). The global network checks it again as transfers start
// (Transfers::forbid). A domain is lone when its flows can never share a link (NodeDomains::lone).
// While the step runs each domain, and the global network, is a Domain.
#pragma once
#include <array>
#include <utility>
#include <vector>

#include "sim/network/comm_model.hpp"
#include "sim/engine/groups.hpp"
#include "sim/engine/state.hpp"
#include "sim/network/transfers.hpp"
#include "topologies/cluster_graph.hpp"
#include "workloads/program.hpp"

namespace dtsim {

struct NodeDomains {
  std::vector<std::vector<int>> links;  // per domain: the links it owns
  std::vector<int> domain_of_rank;      // the domain of the rank's node, -1 when it has none
  std::vector<int> domain_of_link;      // per link: the domain that owns it, -1 for the global network
  // Per domain: its flows never share a link (Transfers::set_lone). It carries only TP
  // collectives, each one flow on its group's single ring, the groups' rings on links of their
  // own, and all TP collectives run on one stream, so one group's run one at a time.
  std::vector<char> lone;
  // Per collective group index and rank: the rank's group lies inside its node.
  std::array<std::vector<char>, kNumCollectiveGroups> group_in_node;
};

// Builds every group the program uses (and their rings) in `groups`.
NodeDomains node_domains(const Program& program, const ClusterGraph& graph, const Router& router, RankGroups& groups);

// The op a transfer completes: a send of `rank` (op), or a collective of the group led by `rank`
// (each member completes the op it posted on `stream`).
struct CommSlot {
  int rank;
  int op;
  Group group;
  Stream stream;
};

// A flow network with its transfers and what they complete: the global one, or one node's.
// Node domains run on different threads: each starts a cache line.
struct alignas(64) Domain {
  explicit Domain(Transfers t) : transfers(std::move(t)) {}
  Transfers transfers;
  std::vector<CommSlot> slots;  // what each transfer completes, indexed by its tag
  std::vector<int> free_slots;
  std::vector<HopFlow> hops;    // scratch for the flows of one transfer
  std::vector<std::vector<HopFlow>> copy_hops;  // scratch: the flows of each TP copy (fold.hpp)
  std::vector<FinishedTransfer> finished;
  TimeNs now = 0;               // its network clock
  std::vector<Action> actions;  // a node domain's actions of the current window
  std::vector<int> touched;     // ranks a node domain scheduled events for in the current window
};

}  // namespace dtsim

// The engine's groups of ranks (internal to sim/engine.cpp and engine_domains): which ranks form
// each TP, DP, embedding, EP and expert-DP group, in ring order, their rings, their pending
// rendezvous, and each rank's pipeline neighbours. Everything is kept per group leader (its
// first rank) and built on first use.
//
// Thread safety: entries of different leaders may be built concurrently; one leader's entries
// by one thread at a time.
#pragma once
#include <vector>

#include "sim/comm_model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// The collective groups by index: TP, DP, embedding, EP, expert DP.
constexpr int kNumCollectiveGroups = 5;
inline int collective_group_index(Group g) {
  return g == Group::tp ? 0 : g == Group::dp ? 1 : g == Group::embedding ? 2 : g == Group::ep ? 3 : 4;
}

// A pending collective of one group: members that posted it and when the last one did.
struct Rendezvous {
  int arrived = 0;
  TimeNs latest = 0;
};

class RankGroups {
 public:
  RankGroups(const ParallelPlan& plan, const CommModel& comm) : plan_(plan), comm_(comm) {
    for (PerGroup& g : groups_) {
      g.rendezvous.resize(plan.num_ranks());
      g.rings.resize(plan.num_ranks());
      g.members.resize(plan.num_ranks());
    }
  }

  // Ranks of this rank's group in ring order; the first is the group's leader. The embedding
  // group joins the first and last pipeline stages (tied embeddings); the EP group is the block
  // of ep consecutive DP ranks holding this rank, the expert-DP group the DP ranks at this rank's
  // position in every block.
  const std::vector<int>& members(int rank, Group g) {
    RankCoords c = plan_.coords(rank);
    int& coord = g == Group::tp ? c.tp : g == Group::embedding ? c.pp : c.dp;
    const int base = g == Group::ep ? c.dp / plan_.ep * plan_.ep : g == Group::expert_dp ? c.dp % plan_.ep : 0;
    const int stride = g == Group::expert_dp ? plan_.ep : 1;
    const int size = g == Group::tp ? plan_.tp : g == Group::ep ? plan_.ep : g == Group::expert_dp ? plan_.expert_dp()
                                                                                                  : plan_.dp;
    coord = base;
    std::vector<int>& out = of(g).members[plan_.rank_of(c)];
    if (out.empty()) {
      if (g == Group::embedding) {
        out.push_back(plan_.rank_of(c));
        coord = plan_.pp - 1;
        out.push_back(plan_.rank_of(c));
      } else {
        for (int i = 0; i < size; ++i) {
          coord = base + i * stride;
          out.push_back(plan_.rank_of(c));
        }
      }
    }
    return out;
  }

  // Whether `rank` is the first of its group, without building the group.
  bool leads(int rank, Group g) const {
    const RankCoords c = plan_.coords(rank);
    switch (g) {
      case Group::tp: return c.tp == 0;
      case Group::embedding: return c.pp == 0;
      case Group::dp: return c.dp == 0;
      case Group::ep: return c.dp % plan_.ep == 0;
      case Group::expert_dp: return c.dp < plan_.ep;
      default: return false;
    }
  }

  // The rings of rank's group.
  const RingSet& rings(int rank, Group g) {
    const std::vector<int>& group = members(rank, g);
    RingSet& rings = of(g).rings[group.front()];
    if (rings.rings.empty()) rings = comm_.rings(group);
    return rings;
  }

  Rendezvous& rendezvous(int leader, Group g) { return of(g).rendezvous[leader]; }

  // The neighbouring stage; with interleaving the last stage feeds the first (next chunk).
  int peer(int rank, Group g) const {
    RankCoords c = plan_.coords(rank);
    c.pp = (c.pp + (g == Group::pp_next ? 1 : plan_.pp - 1)) % plan_.pp;
    return plan_.rank_of(c);
  }

 private:
  struct PerGroup {
    std::vector<Rendezvous> rendezvous;  // indexed by group leader rank
    std::vector<RingSet> rings;
    std::vector<std::vector<int>> members;
  };
  PerGroup& of(Group g) { return groups_[collective_group_index(g)]; }

  const ParallelPlan& plan_;
  const CommModel& comm_;
  PerGroup groups_[kNumCollectiveGroups];
};

}  // namespace dtsim

// TP folding (EngineOptions::fold_tp; internal to sim/engine.cpp). When permuting the TP ranks
// of every TP group alike maps the cluster onto itself (run.cpp's tp_fold_exact says when), the
// TP ranks of a group do the same thing at the same times: the engine then runs only the first
// (tp = 0) of each group, its "representative", and the others ("shadows") take its final state.
//
// What a representative sends or reduces outside its TP group, each of its shadows sends too, on
// the image routes. Those copies move at one rate by symmetry, so each flow of the
// representative's transfer and its images become one flow over all their routes (a link k of
// them cross counts k times, as a ring's hops do): the flow network shares every link exactly as
// it would share the separate flows, and its per-link bytes and busy times count every copy. A
// TP collective already is one flow over the whole group's ring; it completes at the
// representative alone.
#pragma once
#include <vector>

#include "sim/transfers.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

class TpFold {
 public:
  TpFold() = default;
  explicit TpFold(const ParallelPlan& plan) : tp_(plan.tp), copies_(static_cast<std::size_t>(plan.num_ranks()) * plan.tp) {
    for (int r = 0; r < plan.num_ranks(); ++r) {
      RankCoords c = plan.coords(r);
      for (int j = 0; j < tp_; ++j) {
        c.tp = j;
        copies_[static_cast<std::size_t>(r) * tp_ + j] = plan.rank_of(c);
      }
    }
  }
  bool on() const { return tp_ > 1; }
  int tp() const { return tp_; }
  // The rank at TP position j of `rank`'s TP group; copy(rank, 0) is its representative.
  int copy(int rank, int j) const { return copies_[static_cast<std::size_t>(rank) * tp_ + j]; }
  bool shadow(int rank) const { return on() && copy(rank, 0) != rank; }

 private:
  int tp_ = 1;
  std::vector<int> copies_;  // rank * tp + j
};

// One transfer's flows for every TP copy (copies[j]: copy j's hops, all lowered alike) as one
// list in which each flow of copy 0 and its images are one chain.
inline void merge_copies(const std::vector<std::vector<HopFlow>>& copies, std::vector<HopFlow>& out) {
  out.clear();
  const std::vector<HopFlow>& first = copies.front();
  int chain = 0;
  for (std::size_t i = 0; i < first.size(); ++chain) {
    std::size_t end = i + 1;  // the hops of copy 0's flow at i
    if (first[i].chain >= 0)
      while (end < first.size() && first[end].phase == first[i].phase && first[end].chain == first[i].chain) ++end;
    for (const std::vector<HopFlow>& copy : copies)
      for (std::size_t k = i; k < end; ++k) {
        out.push_back(copy[k]);
        out.back().chain = chain;
      }
    i = end;
  }
}

}  // namespace dtsim

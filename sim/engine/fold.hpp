// TP folding (EngineOptions::tp_symmetric, fold_tp; internal to sim/engine/engine.cpp). When permuting
// the TP ranks of every TP group alike maps the cluster onto itself (run.cpp's tp_fold_exact says
// when), the TP ranks of a group do the same thing at the same times.
//
// What the group's first rank (tp = 0, its "representative") sends or reduces outside its TP
// group, each TP peer ("copy") sends too, at the same time, on the image routes. Those transfers
// move at one rate by symmetry, so the representative's transfer carries them all: each of its
// flows and their images become one flow over all their routes (a link k of them cross counts
// k times, as a ring's hops do). The flow network shares every link exactly as it would share
// the separate flows, and its per-link bytes and busy times count every copy, from 1/tp the flows:
// at 16K GPUs the pipeline sends crossing pods share one link by hundreds, and each start or end
// re-rates all of them. The copies' own sends and collectives start nothing; the engine checks
// that each comes at the time and op of the representative's, and completes them with it.
//
// With fold_tp the engine also runs only the representatives: the copies ("shadows") take their
// representative's final state. A TP collective already is one flow over the whole group's ring;
// it then completes at the representative alone.
#pragma once
#include <stdexcept>
#include <vector>

#include "sim/network/transfers.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

class TpFold {
 public:
  TpFold() = default;
  TpFold(const ParallelPlan& plan, bool fold_ranks)
      : tp_(plan.tp), fold_ranks_(fold_ranks), copies_(static_cast<std::size_t>(plan.num_ranks()) * plan.tp) {
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
  bool representative(int rank) const { return copy(rank, 0) == rank; }
  // Runs only the representatives (fold_tp).
  bool folds_ranks() const { return fold_ranks_; }
  bool shadow(int rank) const { return on() && fold_ranks_ && !representative(rank); }
  // The TP copies a representative's transfer completes: all of them, or itself alone when the
  // others are shadows.
  int copies_completed() const { return fold_ranks_ ? 1 : tp_; }

 private:
  int tp_ = 1;
  bool fold_ranks_ = false;
  std::vector<int> copies_;  // rank * tp + j
};

// The last transfer each representative started, per pipeline direction and per collective
// group it leads: its TP copies' own must be the same op at the same time.
class CopyLaunches {
 public:
  CopyLaunches() = default;
  CopyLaunches(int ranks, int collective_groups)
      : ranks_(ranks), launched_(static_cast<std::size_t>(2 + collective_groups) * ranks) {}
  std::size_t send(int representative, bool to_next) const {
    return 2 * static_cast<std::size_t>(representative) + (to_next ? 1 : 0);
  }
  std::size_t collective(int group_index, int leader) const {
    return (2 + static_cast<std::size_t>(group_index)) * ranks_ + leader;
  }
  // A transfer (op at `time`) under `key`: the representative's is recorded (false); a copy's
  // must match it (true), else the cluster is not what EngineOptions::tp_symmetric says.
  bool copy(std::size_t key, bool representative, int op, TimeNs time) {
    Launch& launch = launched_[key];
    if (representative) {
      launch = Launch{op, time};
      return false;
    }
    if (launch.op != op || launch.time != time)
      throw std::logic_error("engine: a TP copy's transfer differs from its representative's; the cluster is not "
                             "symmetric under TP permutations (EngineOptions::tp_symmetric)");
    return true;
  }

 private:
  struct Launch {
    int op = -1;
    TimeNs time = -1;
  };
  std::size_t ranks_ = 0;
  std::vector<Launch> launched_;
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

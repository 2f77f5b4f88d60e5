// The tasks of one shard's window (internal to sim/engine/engine.cpp): a node domain's active ranks
// (then its own network), or a few active ranks outside node domains, each task's ranks in
// ascending order.
//
// Thread safety: used by the thread running its shard (crew.hpp).
#pragma once
#include <cstddef>
#include <vector>

namespace dtsim {

class WindowUnits {
 public:
  static constexpr int kRanksPerUnit = 8;  // active ranks outside node domains per task

  struct Unit {
    int domain;              // -1: ranks outside node domains
    std::size_t begin, end;  // its ranks: rank(begin) ... rank(end - 1)
  };

  explicit WindowUnits(std::size_t domains = 0) : unit_of_domain_(domains, -1) {}

  // Tasks of the active ranks (ascending) and of the node domains with network events in the
  // window; domain_of_rank: each rank's node domain, -1 when it has none.
  void form(const std::vector<int>& active, const std::vector<int>& domain_of_rank, const std::vector<int>& active_domains) {
    units_.clear();
    unit_of_active_.resize(active.size());
    int loose = -1;  // the task filling with ranks outside node domains
    for (std::size_t i = 0; i < active.size(); ++i) {
      const int d = domain_of_rank[active[i]];
      int& u = d >= 0 ? unit_of_domain_[d] : loose;
      if (u < 0 || (d < 0 && units_[u].end == kRanksPerUnit)) {
        u = static_cast<int>(units_.size());
        units_.push_back(Unit{d, 0, 0});
      }
      ++units_[u].end;  // counts ranks for now
      unit_of_active_[i] = u;
    }
    for (int d : active_domains)
      if (unit_of_domain_[d] < 0) {
        unit_of_domain_[d] = static_cast<int>(units_.size());
        units_.push_back(Unit{d, 0, 0});
      }
    // Counting sort of the active ranks by task (each task's ranks stay ascending).
    std::size_t at = 0;
    for (Unit& u : units_) {
      u.begin = at;
      at += u.end;
      u.end = u.begin;
    }
    ranks_.resize(active.size());
    for (std::size_t i = 0; i < active.size(); ++i) ranks_[units_[unit_of_active_[i]].end++] = active[i];
    for (const Unit& u : units_)
      if (u.domain >= 0) unit_of_domain_[u.domain] = -1;
  }

  std::size_t size() const { return units_.size(); }
  const Unit& operator[](std::size_t i) const { return units_[i]; }
  std::size_t ranks() const { return ranks_.size(); }
  int rank(std::size_t k) const { return ranks_[k]; }

 private:
  std::vector<Unit> units_;
  std::vector<int> ranks_;           // the tasks' ranks
  std::vector<int> unit_of_active_;  // scratch of form(): the task of each active rank
  std::vector<int> unit_of_domain_;  // per node domain: its task, -1 outside form()
};

}  // namespace dtsim

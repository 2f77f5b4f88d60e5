// The sweep across MPI ranks (built only with -DDTSIM_MPI=ON): rank 0 hands out point indices
// one at a time to the ranks that ask (dynamic load balancing), collects their result rows and
// alone writes the table; ranks 1..P-1 simulate the points they are given, one at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/sweep/runner.hpp"

namespace dtsim {

// MPI_Init on construction, MPI_Finalize on destruction. Without mpirun: one rank.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

// Needs size() > 1. On rank 0: returns the results of `points` in their order, calling
// `on_done` as each arrives. On the other ranks: returns nothing once rank 0 says stop.
std::vector<PointResult> run_points_mpi(const MpiSession& mpi, const SweepPlan& plan,
                                        const std::vector<std::int64_t>& points, const PointDone& on_done);

}  // namespace dtsim

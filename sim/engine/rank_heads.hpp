// The engine's table of ranks' earliest pending event times (internal to sim/engine/engine.cpp): one
// head time per rank in blocks of 64 ranks, each block with the minimum of its heads. A window
// takes the ranks whose head falls in it by scanning only the blocks whose minimum does: a
// window of a deep pipeline holds a few ranks out of thousands, and a scan of every head cost
// 13 % of the 3,072-rank 1T step (a mispredicted branch per rank); a flat table had replaced a
// heap of heads (BLOOM 2.5 -> 1.7 s, the 16K step ~40 -> ~34 s).
//
// Thread safety: none; used by the engine's sequential phase.
#pragma once
#include <algorithm>
#include <limits>
#include <vector>

#include "sim/base/units.hpp"

namespace dtsim {

class RankHeads {
 public:
  static constexpr TimeNs kNone = std::numeric_limits<TimeNs>::max();
  static constexpr int kBlock = 64;

  explicit RankHeads(int ranks) : times_(ranks, kNone), block_min_((ranks + kBlock - 1) / kBlock, kNone) {}

  // The earliest head time, kNone when no rank is held.
  TimeNs min_time() const {
    return block_min_.empty() ? kNone : *std::min_element(block_min_.begin(), block_min_.end());
  }

  // Removes every rank with a head before `limit`, appending them to `out` in ascending order.
  void take_before(TimeNs limit, std::vector<int>& out) {
    for (std::size_t b = 0; b < block_min_.size(); ++b) {
      if (block_min_[b] >= limit) continue;
      TimeNs rest = kNone;
      const int end = std::min(static_cast<int>(times_.size()), static_cast<int>(b + 1) * kBlock);
      for (int r = static_cast<int>(b) * kBlock; r < end; ++r) {
        const TimeNs t = times_[r];
        if (t < limit) {
          out.push_back(r);
          times_[r] = kNone;
        } else {
          rest = std::min(rest, t);
        }
      }
      block_min_[b] = rest;
    }
  }

  TimeNs time(int rank) const { return times_[rank]; }

  // Sets `rank`'s head time (kNone: the rank has no pending event).
  void set(int rank, TimeNs time) {
    const TimeNs old = times_[rank];
    times_[rank] = time;
    TimeNs& block = block_min_[rank / kBlock];
    if (time <= block) {
      block = time;
    } else if (old == block) {
      const int begin = rank / kBlock * kBlock;
      const int end = std::min(static_cast<int>(times_.size()), begin + kBlock);
      block = *std::min_element(times_.begin() + begin, times_.begin() + end);
    }
  }

 private:
  std::vector<TimeNs> times_;
  std::vector<TimeNs> block_min_;  // minimum head of each block of kBlock ranks
};

}  // namespace dtsim

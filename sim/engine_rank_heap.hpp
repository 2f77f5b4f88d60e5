// The engine's heap of ranks by their earliest pending event (internal to sim/engine.cpp): an
// indexed binary min-heap over (time, rank) holding each rank at most once, so a rank whose head
// moves is re-keyed in place instead of leaving a stale entry behind.
//
// Thread safety: none; used by the engine's sequential phase.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/base/units.hpp"

namespace dtsim {

class RankHeap {
 public:
  explicit RankHeap(int ranks) : pos_(ranks, -1) {}

  bool empty() const { return heap_.empty(); }
  TimeNs top_time() const { return heap_.front().time; }
  int top_rank() const { return heap_.front().rank; }

  // Puts `rank` at key `time`, inserting it or moving it.
  void set(int rank, TimeNs time) {
    int i = pos_[rank];
    if (i < 0) {
      i = static_cast<int>(heap_.size());
      heap_.push_back(Entry{time, rank});
      pos_[rank] = i;
      up(i);
      return;
    }
    const TimeNs old = heap_[i].time;
    heap_[i].time = time;
    if (time < old) up(i);
    else down(i);
  }

  void pop() {
    pos_[heap_.front().rank] = -1;
    if (heap_.size() > 1) {
      heap_.front() = heap_.back();
      pos_[heap_.front().rank] = 0;
      heap_.pop_back();
      down(0);
    } else {
      heap_.pop_back();
    }
  }

 private:
  struct Entry {
    TimeNs time;
    int rank;
    bool operator<(const Entry& o) const { return time != o.time ? time < o.time : rank < o.rank; }
  };
  void place(int i, const Entry& e) {
    heap_[i] = e;
    pos_[e.rank] = i;
  }
  void up(int i) {
    const Entry e = heap_[i];
    while (i > 0) {
      const int parent = (i - 1) / 2;
      if (!(e < heap_[parent])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, e);
  }
  void down(int i) {
    const Entry e = heap_[i];
    const int n = static_cast<int>(heap_.size());
    while (true) {
      int child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1] < heap_[child]) ++child;
      if (!(heap_[child] < e)) break;
      place(i, heap_[child]);
      i = child;
    }
    place(i, e);
  }

  std::vector<Entry> heap_;
  std::vector<int> pos_;  // rank -> index in heap_, -1 when absent
};

}  // namespace dtsim

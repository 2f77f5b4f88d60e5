// The engine's dependency table of one stage program (internal to sim/engine.cpp): each op's
// dependencies as positions in the in-order sequences that complete them, so a rank checks them
// against a few counters instead of a done flag per op.
//
// Every op completes in the order of a sequence: the ops of a stream run one at a time in list
// order, and the receives from one peer arrive in the order it sent them (its sends share one
// stream). So "op done" is "its position < the sequence's completed count", the count being
// next - busy for a stream and the receives finished so far for a peer direction. Of the
// dependencies on one sequence only the latest matters, and those on the op's own stream are
// met by stream order; the table keeps one entry per other sequence. It replaces a done flag per
// op and rank (157 MB of flags at 3,072 ranks × 51 k ops, read at random) with counters in the
// rank's state.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "workloads/program.hpp"

namespace dtsim {

// Sequences 0 .. kNumStreams-1 are the streams; then receives from the previous and the next stage.
constexpr int kRecvFromPrev = kNumStreams, kRecvFromNext = kNumStreams + 1, kNumSequences = kNumStreams + 2;

struct SeqPos {
  std::int8_t seq;
  std::int32_t pos;
};

struct StageDeps {
  std::vector<SeqPos> where;             // each op's own sequence and position
  std::vector<std::int32_t> begin{0};    // CSR over ops
  std::vector<SeqPos> deps;              // at most one per sequence, never the op's own stream

  explicit StageDeps(const StageProgram& p) : where(p.size(), SeqPos{-1, 0}) {
    for (int st = 0; st < kNumStreams; ++st)
      for (std::size_t i = 0; i < p.stream_ops[st].size(); ++i)
        where[p.stream_ops[st][i]] = SeqPos{static_cast<std::int8_t>(st), static_cast<std::int32_t>(i)};
    for (std::size_t i = 0; i < p.recv_from_prev.size(); ++i) where[p.recv_from_prev[i]] = SeqPos{kRecvFromPrev, static_cast<std::int32_t>(i)};
    for (std::size_t i = 0; i < p.recv_from_next.size(); ++i) where[p.recv_from_next[i]] = SeqPos{kRecvFromNext, static_cast<std::int32_t>(i)};
    for (int op = 0; op < p.size(); ++op) {
      if (where[op].seq < 0) throw std::logic_error("engine: an op is on no stream and is no receive");
      std::int32_t latest[kNumSequences];
      std::fill(std::begin(latest), std::end(latest), -1);
      for (int i = p.dep_begin[op]; i < p.dep_begin[op + 1]; ++i) {
        const SeqPos d = where[p.deps[i]];
        if (d.seq != where[op].seq) latest[d.seq] = std::max(latest[d.seq], d.pos);
      }
      for (int q = 0; q < kNumSequences; ++q)
        if (latest[q] >= 0) deps.push_back(SeqPos{static_cast<std::int8_t>(q), latest[q]});
      begin.push_back(static_cast<std::int32_t>(deps.size()));
    }
  }
};

}  // namespace dtsim

// The engine's table of one stage program (internal to sim/engine/engine.cpp): what the hot path reads
// of each op packed into 32 bytes (one cache line holds two ops, where the program's
// structure-of-arrays spreads them over a dozen lines), and each op's dependencies as positions
// in the in-order sequences that complete them, so a rank checks them against a few counters
// instead of a done flag per op.
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

#include "sim/compute/compute_model.hpp"
#include "workloads/program.hpp"

namespace dtsim {

// Sequences 0 .. kNumStreams-1 are the streams; then receives from the previous and the next stage.
constexpr int kRecvFromPrev = kNumStreams, kRecvFromNext = kNumStreams + 1, kNumSequences = kNumStreams + 2;

struct SeqPos {
  std::int8_t seq;
  std::int32_t pos;
};

struct EngineOp {
  TimeNs duration = 0;     // compute ops at nominal speed; 0 for communication
  double flops = 0;        // of a GEMM, else 0
  std::int32_t dep_begin = 0, mem_begin = 0;  // into StageOps::deps and StageProgram::mem_changes
  std::uint8_t dep_count = 0, mem_count = 0;
  CommKind comm = CommKind::none;
  Stream stream = Stream::compute;
  std::int8_t seq = -1;    // the sequence it completes in
  bool memory_bound : 1 = false, recompute : 1 = false;
  bool pipeline : 1 = false;  // brings a pipeline message (a receive, or the TP all-gather of a scattered one)
  bool observed : 1 = false;  // an op of another sequence waits for this one's end (rank.hpp)
  bool sm_free : 1 = false;   // a collective that takes no SMs from the kernels beside it
};
static_assert(sizeof(EngineOp) == 32);

struct StageOps {
  std::vector<EngineOp> ops;
  std::vector<SeqPos> deps;              // at most one per sequence, never the op's own stream
  std::vector<std::int32_t> recv_pos;    // a receive's position among those from its peer

  StageOps(const StageProgram& p, const ComputeModel& compute) : ops(p.size()), recv_pos(p.size(), -1) {
    std::vector<SeqPos> where(p.size(), SeqPos{-1, 0});
    for (int st = 0; st < kNumStreams; ++st)
      for (std::size_t i = 0; i < p.stream_ops[st].size(); ++i)
        where[p.stream_ops[st][i]] = SeqPos{static_cast<std::int8_t>(st), static_cast<std::int32_t>(i)};
    for (std::size_t i = 0; i < p.recv_from_prev.size(); ++i) where[p.recv_from_prev[i]] = SeqPos{kRecvFromPrev, static_cast<std::int32_t>(i)};
    for (std::size_t i = 0; i < p.recv_from_next.size(); ++i) where[p.recv_from_next[i]] = SeqPos{kRecvFromNext, static_cast<std::int32_t>(i)};
    for (int op = 0; op < p.size(); ++op) {
      if (where[op].seq < 0) throw std::logic_error("engine: an op is on no stream and is no receive");
      EngineOp& e = ops[op];
      e.comm = p.comm[op];
      e.stream = p.stream[op];
      e.seq = where[op].seq;
      if (e.seq >= kNumStreams) recv_pos[op] = where[op].pos;
      if (e.comm == CommKind::none) {
        const OpTiming timing = compute.time(p, op);
        e.duration = timing.duration_ns;
        e.memory_bound = timing.memory_bound;
      }
      if (p.gemm_m[op] > 0) e.flops = p.flops[op];
      e.recompute = p.phase[op] == Phase::recompute;
      e.pipeline = p.kind[op] == OpKind::pp_recv || p.kind[op] == OpKind::pp_all_gather;
      e.sm_free = p.sm_free[op] != 0;
      e.mem_begin = p.mem_begin[op];
      const int mem_count = p.mem_begin[op + 1] - p.mem_begin[op];
      if (mem_count > 255) throw std::logic_error("engine: an op with more than 255 memory changes");
      e.mem_count = static_cast<std::uint8_t>(mem_count);
      std::int32_t latest[kNumSequences];
      std::fill(std::begin(latest), std::end(latest), -1);
      for (int i = p.dep_begin[op]; i < p.dep_begin[op + 1]; ++i) {
        const SeqPos d = where[p.deps[i]];
        if (d.seq != e.seq) latest[d.seq] = std::max(latest[d.seq], d.pos);
      }
      e.dep_begin = static_cast<std::int32_t>(deps.size());
      for (int q = 0; q < kNumSequences; ++q)
        if (latest[q] >= 0) deps.push_back(SeqPos{static_cast<std::int8_t>(q), latest[q]});
      e.dep_count = static_cast<std::uint8_t>(deps.size() - e.dep_begin);
    }
    for (const SeqPos d : deps)
      if (d.seq < kNumStreams) ops[p.stream_ops[d.seq][d.pos]].observed = true;
  }

};

}  // namespace dtsim

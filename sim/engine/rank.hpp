// A rank's own events, the windows' parallel phase of the engine (internal to sim/engine*.cpp):
// op ends and starts, memory, the compute stream's time breakdown, and the cross-rank actions
// (posted collectives, started sends) left for the merge phase.
//
// Kernel chains. Most of a rank's events are ends of kernels that only the next kernel waits
// for. When the compute stream starts a kernel, the kernels after it on the stream whose
// dependencies are already done are timed with it, up to the first whose end another stream
// waits for (EngineOp::observed), and only the last one's end becomes an event. The kernels in
// between are handled at their own times, in order, before the rank's next event or at the
// chain's end, so memory, the time breakdown and every counter are what an event per kernel
// gives. A kernel's speed depends on the collectives resident when it starts, which only the
// rank's own events change: after an event that changes them the rest of the chain is retimed.
// A traced rank runs without chains, so its records come window by window in time order.
//
// Thread safety: run() touches only the RankState it is given; several ranks can run at once.
#pragma once
#include <vector>

#include "sim/engine/ops.hpp"
#include "sim/engine/state.hpp"

namespace dtsim {

class RankEvents {
 public:
  // memory_bytes: the GPU's memory (for the first time over it); comm_slowdown: a kernel's
  // slowdown while an NCCL collective's kernel is resident, two_hop_slowdown while only DeepEP's
  // dispatch hops are; chains: whether kernels form chains.
  RankEvents(const Program& program, const std::vector<StageOps>& ops, double memory_bytes, double comm_slowdown,
             double two_hop_slowdown, bool chains)
      : program_(program), ops_(ops), memory_bytes_(memory_bytes), comm_slowdown_(comm_slowdown),
        two_hop_slowdown_(two_hop_slowdown), chains_(chains) {}

  // Handles the rank's events before window_end.
  void run(RankState& s, int rank, TimeNs window_end) const;

 private:
  void start_rank(RankState& s, int rank) const;
  void allocate(RankState& s, int rank, TimeNs time, MemCategory c, double bytes) const;
  void apply_memory(RankState& s, int rank, TimeNs time, const EngineOp& e, bool at_end) const;
  void try_start(RankState& s, int rank, int stream, TimeNs now, bool pipeline_wait) const;
  TimeNs start_kernel(RankState& s, const EngineOp& e, TimeNs now) const;
  void chain_from(RankState& s, int op, TimeNs end) const;
  void advance_chain(RankState& s, int rank, TimeNs before, bool through_end) const;
  void retime_chain(RankState& s) const;
  void finish(RankState& s, int rank, const LocalEvent& ev) const;
  TimeNs kernel_time(const RankState& s, const EngineOp& e) const;

  const Program& program_;
  const std::vector<StageOps>& ops_;  // per stage
  double memory_bytes_;
  double comm_slowdown_;
  double two_hop_slowdown_;
  bool chains_;
};

}  // namespace dtsim

// Helpers shared by the program tests: a plan from its sizes, an op's dependencies, and the
// activation bytes a layer's forward ops allocate.
#pragma once
#include <set>

#include "workloads/program.hpp"

namespace dtsim::test {

inline ParallelPlan plan_of(int tp, int pp, int dp, int mb, int gb, Recompute r, int zero = 0) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.micro_batch = mb;
  p.global_batch = gb;
  p.recompute = r;
  p.zero_stage = zero;
  return p;
}

// The ops that op `op` of stage program `s` waits for.
inline std::set<int> deps_of(const StageProgram& s, int op) {
  return std::set<int>(s.deps.begin() + s.dep_begin[op], s.deps.begin() + s.dep_begin[op + 1]);
}

// Activation bytes allocated by the forward ops of one layer of micro-batch 0 on stage 0.
inline double layer_activation_bytes(const Program& prog, int layer) {
  const StageProgram& s = prog.stages[0];
  double bytes = 0;
  for (int i = 0; i < s.size(); ++i)
    if (s.layer[i] == layer && s.micro_batch[i] == 0 && s.phase[i] == Phase::forward)
      for (int c = s.mem_begin[i]; c < s.mem_begin[i + 1]; ++c)
        if (!s.mem_changes[c].at_end && s.mem_changes[c].category == MemCategory::activations)
          bytes += s.mem_changes[c].bytes;
  return bytes;
}

}  // namespace dtsim::test

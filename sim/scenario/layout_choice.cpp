// Choosing the parallel sizes a scenario leaves unset: see layout_choice.hpp.
#include "sim/scenario/layout_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "sim/base/error.hpp"
#include "sim/base/units.hpp"
#include "workloads/memory_fit.hpp"

namespace dtsim {

std::string choose_layout(ParallelPlan& plan, const ModelShape& model, const GpuSpec& gpu, int num_gpus,
                          int gpus_per_node) {
  const bool auto_tp = plan.tp == kAutoSize, auto_pp = plan.pp == kAutoSize, auto_dp = plan.dp == kAutoSize;
  if (!auto_tp && !auto_pp && !auto_dp) return "";
  std::vector<int> tps, pps;
  if (auto_tp)
    for (int tp = 1; tp <= std::max(1, gpus_per_node); tp *= 2) tps.push_back(tp);
  else
    tps.push_back(plan.tp);
  if (auto_pp)
    for (int pp = 1; pp <= model.layers; ++pp) pps.push_back(pp);
  else
    pps.push_back(plan.pp);
  // Candidates by fewest model-parallel GPUs, then the larger TP (Megatron's TP inside a node first).
  struct Candidate {
    int tp, pp, dp;
  };
  std::vector<Candidate> candidates;
  for (int tp : tps)
    for (int pp : pps) {
      const long long model_parallel = static_cast<long long>(tp) * pp * plan.cp;
      if (num_gpus % model_parallel != 0) continue;
      const int dp = static_cast<int>(num_gpus / model_parallel);
      if (!auto_dp && dp != plan.dp) continue;
      candidates.push_back({tp, pp, dp});
    }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.tp * a.pp != b.tp * b.pp ? a.tp * a.pp < b.tp * b.pp : a.tp > b.tp;
  });
  std::string first_error;
  const ParallelPlan* valid = nullptr;
  ParallelPlan first_valid;
  for (const Candidate& c : candidates) {
    ParallelPlan p = plan;
    p.tp = c.tp, p.pp = c.pp, p.dp = c.dp;
    try {
      validate_plan(p, model, num_gpus);
    } catch (const InputError& e) {
      if (first_error.empty()) first_error = e.what();
      continue;
    }
    const double need = training_memory(model, training_setup(p, model.seq_len), p.tp, p.pp, p.dp).total();
    const std::string sizes = fmt::format("tp {}, pp {}, dp {}", p.tp, p.pp, p.dp);
    if (need <= gpu.memory_bytes) {
      plan = p;
      return fmt::format("{} (parallel sizes left to auto: the fewest model-parallel GPUs whose memory, {:.1f} of "
                         "{:.1f} GiB, fits; set them to override)", sizes, need / kGiB, gpu.memory_bytes / kGiB);
    }
    if (valid == nullptr) first_valid = p, valid = &first_valid;
  }
  if (valid == nullptr)
    throw InputError(fmt::format("no parallel layout of {} GPUs passes the checks for the sizes left to auto{}{}",
                                 num_gpus, first_error.empty() ? "" : "; e.g. ", first_error));
  plan = first_valid;
  return fmt::format("tp {}, pp {}, dp {} (parallel sizes left to auto: no layout fits {:.1f} GiB; this is the first "
                     "valid one; more GPUs, ZeRO or recomputation would help)",
                     plan.tp, plan.pp, plan.dp, gpu.memory_bytes / kGiB);
}

}  // namespace dtsim

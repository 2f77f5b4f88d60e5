// The parallel layout and training setup of a job: TP x PP x DP, micro-batches, pipeline stage
// sizes, ZeRO stage, recomputation, precision, and the mapping of ranks onto GPUs.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model.hpp"

namespace dtsim {

enum class Recompute { none, full };
enum class Schedule { one_f_one_b, gpipe };

Recompute parse_recompute(std::string_view text, std::string_view key);
Schedule parse_schedule(std::string_view text, std::string_view key);
std::string_view recompute_name(Recompute r);
std::string_view schedule_name(Schedule s);

struct RankCoords {
  int dp = 0, tp = 0, pp = 0;
};

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1;
  int micro_batch = 1;               // sequences per micro-batch
  int global_batch = 1;              // sequences per step, = micro_batch x dp x micro-batches
  int zero_stage = 0;                // 0 (plain DP all-reduce) or 1 (optimizer state sharded)
  Recompute recompute = Recompute::none;
  Schedule schedule = Schedule::one_f_one_b;
  double weight_bytes = 2;           // bytes per parameter/activation element (bf16/fp16: 2)
  std::vector<int> stage_layers;     // transformer layers per pipeline stage (size pp)
  // Dimension order from innermost to outermost; default Megatron's tp, dp, pp.
  std::array<char, 3> order = {'t', 'd', 'p'};

  int num_ranks() const { return tp * pp * dp; }
  int micro_batches() const { return global_batch / (micro_batch * dp); }
  RankCoords coords(int rank) const;
  int rank_of(RankCoords c) const;
  int first_layer(int stage) const;  // global index of the stage's first transformer layer
};

// Parses "t,d,p"-style orders ("tp,dp,pp" innermost first); throws InputError naming the key.
std::array<char, 3> parse_rank_order(std::string_view text, std::string_view key);

// Checks the plan against the model and GPU count; throws InputError naming the key, the value
// and what would be valid. Fills stage_layers with an even split when it is empty.
void validate_plan(ParallelPlan& plan, const ModelShape& model, int num_gpus);

}  // namespace dtsim

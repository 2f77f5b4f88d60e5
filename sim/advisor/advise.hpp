// `dtsim advise`: for each GPU type, the training layouts (GPU count, TP, PP, DP, EP for MoE models, micro-batch,
// recomputation, ZeRO stage) that fit in 90 % of the memory by workloads/memory_fit, an analytic step
// time (layer_ops' kernels on a roofline, rings, 1F1B) to pick the promising ones, the simulation of
// those (the sweep runner, on TBB threads), all as one framework profile runs them,
// and the ranking by time to train and cost; then the best layout of each GPU type again with
// other node kinds (NVSwitch, NVLink pairs, PCIe) and NIC speeds.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "sim/sweep/runner.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// The settings of framework profile `name` (training.framework, sim/scenario/frameworks) that the
// memory model and the estimate take, as apply_framework gives them for `precision` (bf16 or
// fp16): attention kernel, dropout, fused kernels, sequence parallelism (on a split with tp > 1),
// the profile's ZeRO stage, and for the estimate gradient accumulation, TP and DP overlap and the
// gradient reduction's precision; the rest of the setup at its defaults. Throws find_framework's
// InputError for an unknown name.
struct FrameworkSetup {
  TrainingSetup training;
  TpOverlap tp_overlap = TpOverlap::none;
  bool dp_overlap = true;
};
FrameworkSetup framework_setup(const std::string& name, const std::string& precision = "bf16");

struct AdviseRequest {
  std::string model;                    // catalog name
  std::string framework = "megatron-core";  // training.framework of every simulated layout
  std::vector<std::string> gpus;        // catalog names or aliases
  int max_gpus = 256;
  double tokens = 0;                    // tokens to train; 0 = 20 per parameter (Chinchilla)
  int global_batch = 0;                 // sequences per step; 0 = 2^22 tokens / seq_len
  std::map<std::string, double> prices; // catalog GPU name -> USD per GPU-hour
  int top = 2;                          // extra layouts simulated at the largest GPU count
  int nics_per_node = 4;
  double nic_gbps = 200;                // InfiniBand HDR
  int jobs = 0;                         // threads; 0 = all cores
};

struct AdviseRow {
  std::string gpu, role;                // role: layout | variant
  int nodes = 1, gpus_per_node = 1, tp = 1, pp = 1, dp = 1, micro_batch = 1, zero_stage = 0;
  int ep = 1;                           // expert parallelism (MoE models), within dp
  Recompute recompute = Recompute::none;
  std::string stage_layers = "auto";    // parallel.stage_layers of the layout
  std::string node_kind;
  int nics_per_node = 0;
  double nic_gbps = 0;
  double fit_gib = 0;                   // memory model's per-GPU need
  double estimate_s = 0;                // analytic step-time estimate that chose it
  PointStatus status = PointStatus::ok;
  std::string message;
  Summary summary;
  double train_s = 0, gpu_hours = 0, cost_usd = 0;  // for `tokens`; cost NaN without a price
  int rank = -1;                        // 1 = best; -1 for variants and rows that did not run
  int num_gpus() const { return nodes * gpus_per_node; }
};

struct AdviseResult {
  std::string model;
  std::string framework;                     // the profile every layout ran with
  double tokens = 0;
  int global_batch = 0, seq_len = 0;
  std::size_t candidates = 0, fitting = 0;   // layouts built, and those that fit in memory
  std::string ranked_by;                     // "cost" or "time to train"
  std::vector<AdviseRow> rows;               // ranked layouts first, then the rest, then variants
  // When no layout fits: per GPU, what would (the smallest tensor x pipeline split with full
  // recompute that dtsim fit finds, and the --max-gpus it needs), in words.
  std::vector<std::string> what_would_fit;
};

// Throws InputError on bad input (unknown model or GPU, a price for a GPU not asked for).
AdviseResult advise(const AdviseRequest& request);

}  // namespace dtsim

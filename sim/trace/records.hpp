// The records a run produces: one per op execution, per memory change, per rank, per link, and
// the step summary. These are the rows of the HDF5 trace (see README "Trace format").
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/base/units.hpp"

namespace dtsim {

// One op execution on one rank.
struct EventRecord {
  std::int32_t rank = 0;
  std::int8_t stream = 0;       // Stream enum value (workloads/program.hpp)
  std::int8_t category = 0;     // 0 compute-bound, 1 memory-bound, 2 communication
  std::int8_t phase = 0;        // 0 forward, 1 backward, 2 recompute, 3 optimizer
  std::int16_t op = 0;          // OpKind enum value
  std::int32_t layer = -1;      // transformer layer (global index), -1 when none
  std::int32_t micro_batch = -1;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  double flops = 0;
  double bytes = 0;             // HBM bytes for compute ops, message bytes for communication
};

// Memory in use on one rank right after a change, by category (bytes).
struct MemoryRecord {
  std::int32_t rank = 0;
  TimeNs time_ns = 0;
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, buffers = 0;
};

struct RankRecord {
  std::int32_t rank = 0, node = 0, dp = 0, tp = 0, pp = 0, ep = 0, cp = 0;
  double peak_memory_bytes = 0;
  // Seconds of the step spent on the compute stream in each state; they sum to the step time.
  double compute_s = 0, memory_bound_s = 0, exposed_comm_s = 0, bubble_s = 0, idle_s = 0;
};

struct LinkRecord {
  std::int32_t id = 0;
  std::string source, target, kind;
  double bandwidth_bytes_per_s = 0;
  TimeNs latency_ns = 0;
  double bytes = 0;             // carried during the step
  double busy_s = 0;            // time with at least one transfer on it
};

struct DeviceRecord {
  std::string name, kind;
  std::int32_t node = -1, gpu_index = -1;
};

struct Summary {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;   // model FLOPs (no recompute) / (step time x GPUs)
  double hw_tflops_per_gpu = 0;      // executed FLOPs (with recompute) / (step time x GPUs)
  double mfu = 0;                    // model TFLOP/s per GPU / peak of the GPU at the precision
  double peak_memory_gib = 0;        // largest peak over ranks
  std::int32_t peak_memory_rank = 0;
  bool oom = false;                  // some rank needed more than its GPU memory
  std::int32_t oom_rank = -1;
  double oom_time_s = 0;
  double oom_needed_gib = 0;            // peak need of the OOM rank
  double oom_capacity_gib = 0;
  // The OOM rank: the memory category whose growth first went over the GPU (MemCategory, -1 when
  // none), and its memory by category at its peak (GiB). Text and JSON summaries only.
  std::int32_t oom_category = -1;
  std::array<double, 5> oom_peak_by_category_gib{};
  std::int32_t num_gpus = 0;
  std::int64_t events = 0;           // op executions simulated (all ranks)
  // Fractions of step time x GPUs; they sum to 1.
  double compute = 0, memory_bound = 0, exposed_comm = 0, bubble = 0, idle = 0;
};

// What the root of a trace says about the run.
struct RunInfo {
  std::string scenario_text;         // the resolved scenario (every key = value)
  std::string dtsim_version;
};

}  // namespace dtsim

// Compute model: the time of one op on one GPU by a roofline, max(FLOPs / (peak x efficiency),
// bytes / (HBM bandwidth x efficiency)) plus a launch overhead. GEMM efficiency is the GPU's
// measured best matmul rate over its peak, reduced by wave quantization of 128x128 output tiles
// over the SMs. Element-wise ops run on CUDA cores at the FP32 rate.
#pragma once
#include "sim/base/units.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/program.hpp"

namespace dtsim {

struct OpTiming {
  TimeNs duration_ns = 0;
  bool memory_bound = false;
};

class ComputeModel {
 public:
  ComputeModel(const GpuSpec& gpu, Precision precision);
  OpTiming time(const StageProgram& program, int op) const;
  double gemm_efficiency(int m, int n, int batch) const;
  double peak_flops() const { return peak_; }

  // Gap between dependent kernels on one stream (launch + scheduling), a typical CUDA figure.
  static constexpr TimeNs kLaunchOverheadNs = 2000;
  // Matmul efficiency used when the catalog has no measured matmul rate: the A100 (0.87), H100
  // (0.80) and B200 (0.78) measured-over-peak ratios of shared/validation/gpus.csv, rounded down.
  static constexpr double kDefaultMatmulEfficiency = 0.78;
  // HBM efficiency without a measured STREAM rate (A100: 1.61-1.75 of 2.04 TB/s measured).
  static constexpr double kDefaultHbmEfficiency = 0.82;

 private:
  const GpuSpec& gpu_;
  double peak_ = 0, matmul_efficiency_ = 0, hbm_rate_ = 0;
};

}  // namespace dtsim

// Compute model: the time of one op on one GPU by a roofline, max(FLOPs / (peak x efficiency),
// bytes / HBM rate) plus a launch overhead.
//
// GEMM efficiency depends on the shape (see gemm_efficiency): the kernel picks the output tile
// that finishes first, paying for padded tiles, for the last partial wave over the SMs and for
// the tile's operand traffic, and each tile pays a fixed prologue/epilogue worth kDepthOverhead
// steps of K. The scale is anchored on the GPU's measured best matmul rate (catalog), which is
// taken to be reached by a large, wave-aligned GEMM. A backward GEMM is timed as its two GEMMs
// (input gradient and weight gradient), each with its own shape. Fused (flash) attention runs
// at the GPU's published FlashAttention-2 fraction of peak, growing with the head dimension.
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
  // Fraction of the precision's peak that a [m x k] x [k x n] GEMM, `batch` times, reaches.
  double gemm_efficiency(double m, double n, double k, double batch) const;
  double peak_flops() const { return peak_; }

  // Gap between dependent kernels on one stream (launch + scheduling), a typical CUDA figure.
  static constexpr TimeNs kLaunchOverheadNs = 2000;
  // Matmul efficiency used when the catalog has no measured matmul rate: the A100 (0.87), H100
  // (0.80) and B200 (0.78) measured-over-peak ratios of shared/validation/gpus.csv, rounded down.
  static constexpr double kDefaultMatmulEfficiency = 0.78;
  // HBM efficiency without a measured STREAM rate (A100: 1.61-1.75 of 2.04 TB/s measured).
  static constexpr double kDefaultHbmEfficiency = 0.82;
  // Per-tile fixed cost in units of K: software-pipeline fill (3-4 stages of 32-deep slices)
  // plus the epilogue that writes the tile, ~128 on Ampere/Hopper CUTLASS/cuBLAS kernels.
  static constexpr double kDepthOverhead = 128;
  // Operand traffic of a tile: throughput falls as I / (I + kTileIntensityHalf), where
  // I = tm*tn / (tm + tn) is the tile's FLOPs per operand byte (normalised to the largest tile).
  static constexpr double kTileIntensityHalf = 16;
  // Shape at which the catalog's measured matmul rate is taken to hold (square, large).
  static constexpr double kReferenceDepth = 8192;

 private:
  double gemm_seconds(double m, double n, double k, double batch) const;
  double flash_attention_seconds(const StageProgram& p, int op) const;

  const GpuSpec& gpu_;
  double peak_ = 0, matmul_scale_ = 0, hbm_rate_ = 0;
};

}  // namespace dtsim

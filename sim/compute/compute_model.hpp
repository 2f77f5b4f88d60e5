// Compute model: the time of one op on one GPU by a roofline, max(FLOPs / (peak x efficiency),
// bytes / HBM rate) plus a launch overhead.
//
// GEMM efficiency depends on the shape (see gemm_efficiency): the kernel picks the output tile
// that finishes first, paying for padded tiles, for the last partial wave over the SMs and for
// the tile's operand traffic, and each tile pays a fixed prologue/epilogue worth kDepthOverhead
// steps of K. The scale is anchored on the GPU's sustained matmul rate: a 16384^3 GEMM measured
// under sustained load where the catalog has one, else kSustainedOverBest of its best measured
// rate over shapes (MAMF). A backward GEMM is timed as its two GEMMs
// (input gradient and weight gradient), each with its own shape. Fused (flash) attention runs
// at the GPU's published FlashAttention-2 fraction of peak, growing with the head dimension, or
// slower as the Triton kernel, or at its published cuDNN fraction as Transformer Engine's cuDNN
// attention. With FP8, the linear layers' GEMMs run at the FP8 rate after
// Transformer Engine's cast-transpose kernels; attention and the LM head stay in BF16. Dropout's
// forward runs at the HBM rate PyTorch's Philox dropout kernel reaches.
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
  // recipe: the FP8/FP4 recipe of the linear layers' GEMMs (precision is then its GEMM format;
  // fp8 without one is fp8_delayed, fp4 nvfp4); throws InputError when the GPU lacks what it needs.
  // launch_ns: the gap each kernel pays (kLaunchOverheadNs; 0 where a CUDA graph replays the
  // kernels, dtsim serve's inference.cuda_graphs).
  ComputeModel(const GpuSpec& gpu, Precision precision, Attention attention = Attention::standard,
               Recipe recipe = Recipe::none, TimeNs launch_ns = kLaunchOverheadNs);
  OpTiming time(const StageProgram& program, int op) const;
  // Fraction of the precision's peak that a [m x k] x [k x n] GEMM, `batch` times, reaches.
  double gemm_efficiency(double m, double n, double k, double batch) const;
  double peak_flops() const { return run_.peak; }
  double hbm_bytes_per_s() const { return hbm_rate_; }
  // Compute time of one GEMM kernel (no launch gap, no HBM bound): at the run's rate if
  // low_precision is set (a recipe's FP8/FP4 GEMMs), else at the BF16/FP16 rate.
  double gemm_seconds(double m, double n, double k, double batch, bool low_precision) const;
  // Slowdown of a kernel that runs while a NCCL collective's kernel is resident: the collective
  // holds one SM per channel, kNcclChannels of them on NVLink GPUs (and takes its share of HBM
  // bandwidth with them), kNcclPcieChannels on PCIe-only ones.
  double comm_overlap_slowdown() const;
  // The same while only DeepEP's dispatch or combine kernels are resident: they hold kDeepEpSms
  // SMs (at most a quarter of the GPU's, as NCCL's channels).
  double two_hop_overlap_slowdown() const;

  // Gap between dependent kernels on one stream (launch + scheduling), a typical CUDA figure.
  static constexpr TimeNs kLaunchOverheadNs = 2000;
  // Best-over-shapes matmul efficiency used when the catalog has no measured matmul rate: the
  // A100 (0.87), H100 (0.80) and B200 (0.78) MAMF-over-peak ratios of shared/validation/gpus.csv,
  // rounded down.
  static constexpr double kDefaultMatmulEfficiency = 0.78;
  // A best-over-shapes (MAMF) figure is a short burst at boost clocks; a large GEMM run back to
  // back, as in training, is power-limited. Sustained 16384^3 over MAMF in gpus.csv: A100 FP16
  // 256.5 / 271.2 = 0.946, H200 FP8 1366 / 1453.4 = 0.940.
  static constexpr double kSustainedOverBest = 0.94;
  // HBM efficiency without a measured STREAM rate (A100: 1.61-1.75 of 2.04 TB/s measured).
  static constexpr double kDefaultHbmEfficiency = 0.82;
  // Per-tile fixed cost in units of K: software-pipeline fill (3-4 stages of 32-deep slices)
  // plus the epilogue that writes the tile, ~128 on Ampere/Hopper CUTLASS/cuBLAS kernels.
  static constexpr double kDepthOverhead = 128;
  // Operand traffic of a tile: throughput falls as I / (I + kTileIntensityHalf), where
  // I = tm*tn / (tm + tn) is the tile's FLOPs per operand byte (normalised to the largest tile).
  static constexpr double kTileIntensityHalf = 16;
  // The square GEMM (m = n = k) at which the sustained matmul rate is measured.
  static constexpr double kReferenceSize = 16384;
  // NCCL channels of a collective: 24 on an 8-GPU NVSwitch A100 node (NCCL INFO "Channel 23/24",
  // nccl-tests issue #100); 2 on a PCIe system with one NIC (NCCL issue #689, maintainer's reply).
  static constexpr int kNcclChannels = 24;
  static constexpr int kNcclPcieChannels = 2;
  // SMs DeepEP's normal (high-throughput) kernels run on: deepseek-ai/DeepEP deep_ep/buffer.py
  // Buffer.num_sms = 20, Megatron-Core's moe_deepep_num_sms = 20 (transformer_config.py); the
  // DeepSeek-V3 report (Sec. 3.2.2) gives 20 of the H800's 132 SMs to communication.
  static constexpr int kDeepEpSms = 20;
  // PyTorch's dropout (Philox RNG per element) streams at 953 GB/s on an A100 against 1.61 TB/s
  // for a copy (FlagGems PR #85, torch column at 1e9 elements; Azure STREAM copy).
  static constexpr double kRandomKernelHbmFraction = 953.0 / 1610.0;
  // FlashAttention-2 on A100 (Dao 2023, Sec. 4.1): backward up to 63 % of peak against 73 % for
  // the forward; 1.3-1.5x faster than the Triton kernel forward (1.4 taken) and ~2x backward.
  static constexpr double kFlashBackwardOverForward = 0.85;
  static constexpr double kTritonForwardSlowdown = 1.4;
  static constexpr double kTritonBackwardSlowdown = 2.0;

 private:
  // Shape losses alone (tiles, waves, operand traffic, K prologue), before the GPU's scale.
  // depth: the tile's fixed prologue/epilogue in steps of K.
  double shape_efficiency(double m, double n, double k, double batch, double depth) const;
  // A precision's dense peak, the scale that anchors shape_efficiency on its sustained rate, and
  // the prologue in steps of K at that precision.
  struct MatmulRate {
    double peak = 0, scale = 0, depth = kDepthOverhead;
  };
  MatmulRate matmul_rate(Precision precision) const;
  double efficiency(const MatmulRate& rate, double m, double n, double k, double batch) const;
  double flash_attention_seconds(const StageProgram& p, int op) const;
  // Whether the recipe quantizes this GEMM (the linear layers'), and the quantizing passes' time.
  bool low_precision_gemm(OpKind kind) const;
  double quantize_seconds(const StageProgram& p, int op) const;

  const GpuSpec& gpu_;
  Precision precision_;
  Attention attention_;
  const RecipeSpec& recipe_;
  // run_: the run's precision; other_: the ops FP8 leaves in BF16 (run_ for other precisions).
  MatmulRate run_, other_;
  double hbm_rate_ = 0;
  TimeNs launch_ns_ = kLaunchOverheadNs;
};

}  // namespace dtsim

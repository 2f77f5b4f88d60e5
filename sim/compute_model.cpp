// Roofline timing of compute ops with shape-dependent GEMM efficiency.
#include "sim/compute_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace dtsim {
namespace {

struct Tile {
  double m, n;
};
// CUTLASS/cuBLAS tensor-core output tiles.
constexpr std::array<Tile, 6> kTiles = {{{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};

double tile_intensity(const Tile& t) { return t.m * t.n / (t.m + t.n); }

double depth_factor(double k) { return k / (k + ComputeModel::kDepthOverhead); }

}  // namespace

ComputeModel::ComputeModel(const GpuSpec& gpu, Precision precision, Attention attention)
    : gpu_(gpu), peak_(gpu.peak_flops(precision)), attention_(attention) {
  const bool tensor_16 = precision == Precision::bf16 || precision == Precision::fp16;
  double sustained = kDefaultMatmulEfficiency * kSustainedOverBest;
  if (tensor_16 && gpu.sustained_matmul_bf16_flops > 0) sustained = gpu.sustained_matmul_bf16_flops / gpu.bf16_flops;
  else if (tensor_16 && gpu.measured_matmul_bf16_flops > 0)
    sustained = gpu.measured_matmul_bf16_flops / gpu.bf16_flops * kSustainedOverBest;
  // The sustained rate is that of a large square GEMM, with its own (small) shape losses.
  matmul_scale_ = sustained / shape_efficiency(kReferenceSize, kReferenceSize, kReferenceSize, 1);
  hbm_rate_ = gpu.measured_hbm_bytes_per_s > 0 ? gpu.measured_hbm_bytes_per_s
                                               : gpu.hbm_bytes_per_s * kDefaultHbmEfficiency;
}

double ComputeModel::shape_efficiency(double m, double n, double k, double batch) const {
  const double sms = std::max(gpu_.sm_count, 1);
  const double best_intensity = tile_intensity(kTiles[0]);
  double best = 0;
  for (const Tile& t : kTiles) {
    const double tiles = std::ceil(m / t.m) * std::ceil(n / t.n) * std::max(batch, 1.0);
    const double waves = std::ceil(tiles / sms);
    // Useful fraction of the tile-slots the kernel occupies: padding and the partial last wave.
    const double occupancy = m * n * std::max(batch, 1.0) / (waves * sms * t.m * t.n);
    const double feed = (tile_intensity(t) / (tile_intensity(t) + kTileIntensityHalf)) /
                        (best_intensity / (best_intensity + kTileIntensityHalf));
    best = std::max(best, occupancy * feed);
  }
  return best * depth_factor(k);
}

double ComputeModel::gemm_efficiency(double m, double n, double k, double batch) const {
  return std::min(1.0, matmul_scale_ * shape_efficiency(m, n, k, batch));
}

double ComputeModel::gemm_seconds(double m, double n, double k, double batch) const {
  return 2 * m * n * k * batch / (peak_ * gemm_efficiency(m, n, k, batch));
}

double ComputeModel::flash_attention_seconds(const StageProgram& p, int op) const {
  // FlashAttention-2: the GPU's published forward fraction of peak at head dim 128 (or, without
  // one, 0.8 of its sustained matmul efficiency), scaled by d / (d + 32) relative to d = 128; the
  // backward pass at kFlashBackwardOverForward of the forward's efficiency, plus its
  // recomputation of QK^T (2.5 forward GEMMs instead of 2). Both run on the causal half of the
  // score FLOPs. The Triton kernel runs at FlashAttention-2's speed divided by
  // kTritonForwardSlowdown / kTritonBackwardSlowdown.
  const double d = p.gemm_k[op];
  const double at_128 = gpu_.flash_attention_fraction > 0
                            ? gpu_.flash_attention_fraction
                            : 0.8 * gemm_efficiency(kReferenceSize, kReferenceSize, kReferenceSize, 1);
  double eff = std::min(1.0, at_128 * (d / (d + 32)) / (128.0 / 160.0));
  double work = 0.5 * p.flops[op];
  const bool triton = attention_ == Attention::flash_triton;
  if (p.phase[op] == Phase::backward) {
    eff *= kFlashBackwardOverForward / (triton ? kTritonBackwardSlowdown : 1.0);
    work *= 1.25;
  } else if (triton) {
    eff /= kTritonForwardSlowdown;
  }
  return work / (peak_ * eff);
}

OpTiming ComputeModel::time(const StageProgram& p, int op) const {
  double compute_s = 0;
  if (p.kind[op] == OpKind::flash_attention) {
    compute_s = flash_attention_seconds(p, op);
  } else if (p.gemm_m[op] > 0) {
    const double m = p.gemm_m[op], n = p.gemm_n[op], k = p.gemm_k[op], b = p.gemm_batch[op];
    // Backward of C[m,n] = A[m,k] B[k,n]: dA = dC B^T is [m,n]x[n,k], dB = A^T dC is [k,m]x[m,n].
    if (p.phase[op] != Phase::backward) compute_s = gemm_seconds(m, n, k, b);
    else if (p.gemm_part[op] == GemmPart::input_grad) compute_s = gemm_seconds(m, k, n, b);
    else if (p.gemm_part[op] == GemmPart::weight_grad) compute_s = gemm_seconds(k, n, m, b);
    else compute_s = gemm_seconds(m, k, n, b) + gemm_seconds(k, n, m, b);
  } else {
    compute_s = p.flops[op] / gpu_.fp32_flops;
  }
  const double memory_s = p.bytes[op] / hbm_rate_;
  OpTiming t;
  t.memory_bound = memory_s > compute_s;
  t.duration_ns = seconds_to_ns(std::max(compute_s, memory_s)) + kLaunchOverheadNs;
  return t;
}

}  // namespace dtsim

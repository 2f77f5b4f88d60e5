// Roofline timing of compute ops with shape-dependent GEMM efficiency.
#include "sim/compute/compute_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "sim/base/error.hpp"

namespace dtsim {
namespace {

struct Tile {
  double m, n;
};
// CUTLASS/cuBLAS tensor-core output tiles.
constexpr std::array<Tile, 6> kTiles = {{{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};

double tile_intensity(const Tile& t) { return t.m * t.n / (t.m + t.n); }

}  // namespace

ComputeModel::ComputeModel(const GpuSpec& gpu, Precision precision, Attention attention, Recipe recipe,
                           TimeNs launch_ns)
    : gpu_(gpu),
      precision_(precision),
      attention_(attention),
      recipe_(recipe_spec(recipe != Recipe::none         ? recipe
                          : precision == Precision::fp8 ? Recipe::fp8_delayed
                          : precision == Precision::fp4 ? Recipe::nvfp4
                                                        : Recipe::none)),
      launch_ns_(launch_ns) {
  if (recipe_.block_scaled && gpu.fp4_flops <= 0)
    throw InputError(fmt::format("training.precision = {}: GPU '{}' has no block-scaled tensor cores (Blackwell-class "
                                 "parts, those with an FP4 rate in 'dtsim catalog gpus', have); use fp8_delayed or "
                                 "fp8_current", recipe_.name, gpu.name));
  hbm_rate_ = gpu.measured_hbm_bytes_per_s > 0 ? gpu.measured_hbm_bytes_per_s
                                               : gpu.hbm_bytes_per_s * kDefaultHbmEfficiency;
  // A recipe runs the linear layers' GEMMs in FP8 or FP4 (Transformer Engine); attention, the LM
  // head and the rest stay in BF16.
  run_ = matmul_rate(precision);
  other_ = recipe_.recipe != Recipe::none ? matmul_rate(Precision::bf16) : run_;
}

ComputeModel::MatmulRate ComputeModel::matmul_rate(Precision precision) const {
  double sustained = kDefaultMatmulEfficiency * kSustainedOverBest;
  if (precision == Precision::bf16 || precision == Precision::fp16) {
    if (gpu_.sustained_matmul_bf16_flops > 0) sustained = gpu_.sustained_matmul_bf16_flops / gpu_.bf16_flops;
    else if (gpu_.measured_matmul_bf16_flops > 0)
      sustained = gpu_.measured_matmul_bf16_flops / gpu_.bf16_flops * kSustainedOverBest;
  } else if (precision == Precision::fp8) {
    if (gpu_.sustained_matmul_fp8_flops > 0) sustained = gpu_.sustained_matmul_fp8_flops / gpu_.fp8_flops;
    else if (gpu_.measured_matmul_fp8_flops > 0)
      sustained = gpu_.measured_matmul_fp8_flops / gpu_.fp8_flops * kSustainedOverBest;
  }
  // The prologue is a fixed time, worth twice the K steps at FP8's doubled rate (four at FP4's).
  const double depth = precision == Precision::fp8   ? kDepthOverhead * gpu_.fp8_flops / gpu_.bf16_flops
                       : precision == Precision::fp4 ? kDepthOverhead * gpu_.fp4_flops / gpu_.bf16_flops
                                                     : kDepthOverhead;
  // The sustained rate is that of a large square GEMM, with its own (small) shape losses.
  return {gpu_.peak_flops(precision),
          sustained / shape_efficiency(kReferenceSize, kReferenceSize, kReferenceSize, 1, depth), depth};
}

double ComputeModel::comm_overlap_slowdown() const {
  const bool nvlink = gpu_.nvlink_gen > 0 && !gpu_.nvlink_bridge_only;
  const double sms = std::max(gpu_.sm_count, 1);
  // At most a quarter of a small GPU's SMs (NCCL scales its channels down with the SM count).
  return 1 / (1 - std::min<double>(nvlink ? kNcclChannels : kNcclPcieChannels, sms / 4) / sms);
}

double ComputeModel::two_hop_overlap_slowdown() const {
  const double sms = std::max(gpu_.sm_count, 1);
  return 1 / (1 - std::min<double>(kDeepEpSms, sms / 4) / sms);
}

double ComputeModel::shape_efficiency(double m, double n, double k, double batch, double depth) const {
  const double sms = std::max(gpu_.sm_count, 1);
  const double best_intensity = tile_intensity(kTiles[0]);
  batch = std::max(batch, 1.0);
  double best = 0;
  for (const Tile& t : kTiles) {
    const double feed = (tile_intensity(t) / (tile_intensity(t) + kTileIntensityHalf)) /
                        (best_intensity / (best_intensity + kTileIntensityHalf));
    const double tiles = std::ceil(m / t.m) * std::ceil(n / t.n) * batch;
    const double waves = std::ceil(tiles / sms);
    // Data-parallel: one block per tile. Useful fraction of the tile-slots the kernel occupies:
    // padding and the partial last wave; each tile pays the prologue once.
    const double padding = m * n * batch / (tiles * t.m * t.n);
    const double data_parallel = padding * tiles / (waves * sms) * k / (k + depth);
    best = std::max(best, feed * data_parallel);
    if (!gpu_.stream_k_gemm) continue;
    // Stream-K: the tiles' K iterations dealt evenly to the SMs, so no partial wave; each SM
    // pays the prologue for every tile segment it touches (its share in tiles, plus one).
    const double per_sm = tiles * k / sms;
    best = std::max(best, feed * padding / (1 + depth / k + depth / per_sm));
  }
  return best;
}

double ComputeModel::efficiency(const MatmulRate& rate, double m, double n, double k, double batch) const {
  return std::min(1.0, rate.scale * shape_efficiency(m, n, k, batch, rate.depth));
}

double ComputeModel::gemm_efficiency(double m, double n, double k, double batch) const {
  return efficiency(run_, m, n, k, batch);
}

double ComputeModel::gemm_seconds(double m, double n, double k, double batch, bool low_precision) const {
  const MatmulRate& rate = low_precision ? run_ : other_;
  const double flops = 2 * m * n * k * batch;
  // An empty GEMM (a dimension of 0) does no work; its efficiency is 0, and 0 / 0 is no time.
  return flops == 0 ? 0 : flops / (rate.peak * efficiency(rate, m, n, k, batch));
}

bool ComputeModel::low_precision_gemm(OpKind kind) const {
  return recipe_.recipe != Recipe::none && linear_layer_gemm(kind);
}

double ComputeModel::quantize_seconds(const StageProgram& p, int op) const {
  // Transformer Engine quantizes each low-precision GEMM's BF16 operands with fused kernels (the
  // recipe's cast bytes per element, after an amax pass with current scaling): the input and the
  // weight before the forward GEMM, the output gradient before the backward GEMMs. NVFP4 also
  // transforms the weight-gradient GEMM's operands (random Hadamard transform).
  const double m = p.gemm_m[op], n = p.gemm_n[op], k = p.gemm_k[op], b = std::max(1, p.gemm_batch[op]);
  double elements = 0, wgrad_operands = 0;
  if (p.phase[op] != Phase::backward) {
    elements = (m * k + k * n) * b;
  } else {
    if (p.gemm_part[op] != GemmPart::weight_grad) elements = m * n * b;
    if (p.gemm_part[op] != GemmPart::input_grad) wgrad_operands = (m * n + m * k) * b;
  }
  return ((recipe_.cast_bytes + recipe_.amax_bytes) * elements + recipe_.wgrad_extra_bytes * wgrad_operands) /
         hbm_rate_;
}

double ComputeModel::flash_attention_seconds(const StageProgram& p, int op) const {
  // FlashAttention-2: the GPU's published forward fraction of peak at head dim 128 (or, without
  // one, 0.8 of its sustained matmul efficiency), scaled by d / (d + 32) relative to d = 128; the
  // backward pass at kFlashBackwardOverForward of the forward's efficiency, plus its
  // recomputation of QK^T (2.5 forward GEMMs instead of 2). Both run on the causal half of the
  // score FLOPs. The Triton kernel runs at FlashAttention-2's speed divided by
  // kTritonForwardSlowdown / kTritonBackwardSlowdown. Transformer Engine's cuDNN attention runs at
  // the GPU's published cuDNN fraction instead, where the catalog has one (Hopper); elsewhere TE
  // runs FlashAttention-2 (before Hopper) or no cuDNN figure is published (the FlashAttention rate).
  const double d = p.gemm_k[op];
  const double at_128 = attention_ == Attention::cudnn && gpu_.cudnn_attention_fraction > 0
                            ? gpu_.cudnn_attention_fraction
                        : gpu_.flash_attention_fraction > 0
                            ? gpu_.flash_attention_fraction
                            : 0.8 * efficiency(other_, kReferenceSize, kReferenceSize, kReferenceSize, 1);
  double eff = std::min(1.0, at_128 * (d / (d + 32)) / (128.0 / 160.0));
  double work = 0.5 * p.flops[op];
  const bool triton = attention_ == Attention::flash_triton;
  if (p.phase[op] == Phase::backward) {
    eff *= kFlashBackwardOverForward / (triton ? kTritonBackwardSlowdown : 1.0);
    work *= 1.25;
  } else if (triton) {
    eff /= kTritonForwardSlowdown;
  }
  return work / (other_.peak * eff);
}

OpTiming ComputeModel::time(const StageProgram& p, int op) const {
  double compute_s = 0, serial_s = 0;
  int kernels = 1;
  if (p.kind[op] == OpKind::flash_attention) {
    compute_s = flash_attention_seconds(p, op);
  } else if (p.gemm_m[op] > 0) {
    const double m = p.gemm_m[op], n = p.gemm_n[op], k = p.gemm_k[op], b = p.gemm_batch[op];
    const bool low = low_precision_gemm(p.kind[op]);
    // Backward of C[m,n] = A[m,k] B[k,n]: dA = dC B^T is [m,n]x[n,k], dB = A^T dC is [k,m]x[m,n].
    if (p.phase[op] != Phase::backward) compute_s = gemm_seconds(m, n, k, b, low);
    else if (p.gemm_part[op] == GemmPart::input_grad) compute_s = gemm_seconds(m, k, n, b, low);
    else if (p.gemm_part[op] == GemmPart::weight_grad) compute_s = gemm_seconds(k, n, m, b, low);
    else compute_s = gemm_seconds(m, k, n, b, low) + gemm_seconds(k, n, m, b, low);
    // The quantizing kernels: one per operand (two with an amax pass first), and the Hadamard
    // transforms of the weight-gradient operands.
    if (low && (serial_s = quantize_seconds(p, op)) > 0)
      kernels += (p.phase[op] == Phase::backward ? 1 : 2) * (recipe_.amax_bytes > 0 ? 2 : 1) +
                 (p.phase[op] == Phase::backward && recipe_.wgrad_extra_bytes > 0 ? 2 : 0);
  } else {
    compute_s = p.flops[op] / gpu_.fp32_flops;
  }
  // Dropout draws a Philox random number per element in its forward pass (and when it is
  // recomputed); the backward only applies the saved mask.
  const bool draws_random = p.phase[op] != Phase::backward &&
                            (p.kind[op] == OpKind::attn_dropout || p.kind[op] == OpKind::dropout_residual);
  const double memory_s = p.bytes[op] / (hbm_rate_ * (draws_random ? kRandomKernelHbmFraction : 1.0));
  OpTiming t;
  t.memory_bound = memory_s > compute_s;
  t.duration_ns = seconds_to_ns(std::max(compute_s, memory_s) + serial_s) + kernels * launch_ns_;
  return t;
}

}  // namespace dtsim

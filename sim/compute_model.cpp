// Roofline timing of compute ops with wave-quantized GEMM efficiency.
#include "sim/compute_model.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

ComputeModel::ComputeModel(const GpuSpec& gpu, Precision precision) : gpu_(gpu), peak_(gpu.peak_flops(precision)) {
  const bool measured = gpu.measured_matmul_bf16_flops > 0 &&
                        (precision == Precision::bf16 || precision == Precision::fp16);
  matmul_efficiency_ = measured ? gpu.measured_matmul_bf16_flops / gpu.bf16_flops : kDefaultMatmulEfficiency;
  hbm_rate_ = gpu.measured_hbm_bytes_per_s > 0 ? gpu.measured_hbm_bytes_per_s
                                               : gpu.hbm_bytes_per_s * kDefaultHbmEfficiency;
}

double ComputeModel::gemm_efficiency(int m, int n, int batch) const {
  constexpr double kTile = 128;
  const double tiles = std::ceil(m / kTile) * std::ceil(n / kTile) * std::max(batch, 1);
  const double sms = std::max(gpu_.sm_count, 1);
  const double waves = std::ceil(tiles / sms);
  return matmul_efficiency_ * tiles / (waves * sms);
}

OpTiming ComputeModel::time(const StageProgram& p, int op) const {
  const bool gemm = p.gemm_m[op] > 0;
  const double rate = gemm ? peak_ * gemm_efficiency(p.gemm_m[op], p.gemm_n[op], p.gemm_batch[op])
                           : gpu_.fp32_flops * matmul_efficiency_;
  const double compute_s = p.flops[op] / rate;
  const double memory_s = p.bytes[op] / hbm_rate_;
  OpTiming t;
  t.memory_bound = memory_s > compute_s;
  t.duration_ns = seconds_to_ns(std::max(compute_s, memory_s)) + kLaunchOverheadNs;
  return t;
}

}  // namespace dtsim

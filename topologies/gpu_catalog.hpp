// The GPU catalog: peak rates, memory and links of the GPUs dtsim knows, each figure with its
// source (see gpu_catalog.cpp). The engine times ops on these numbers; builders size links.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

enum class Precision { fp32, tf32, fp16, bf16, fp8 };

// Parses "fp32|tf32|fp16|bf16|fp8"; throws InputError naming `key` and the valid values.
Precision parse_precision(std::string_view text, std::string_view key);
std::string_view precision_name(Precision p);
// Bytes per element of weights/activations stored in this precision (fp8 trains with bf16 storage).
double precision_bytes(Precision p);

struct GpuSpec {
  std::string name;                    // catalog key, e.g. "A100-SXM4-80GB"
  double memory_bytes = 0;             // HBM / GDDR capacity
  double hbm_bytes_per_s = 0;          // peak memory bandwidth
  double fp32_flops = 0;               // CUDA-core FP32 peak
  double tf32_flops = 0;               // tensor-core TF32 dense peak (0: none)
  double bf16_flops = 0;               // tensor-core FP16/BF16 dense peak with FP32 accumulate
  double fp8_flops = 0;                // tensor-core FP8 dense peak (0: none)
  double measured_matmul_bf16_flops = 0;  // best measured GEMM over shapes (MAMF), 0 if unknown
  // A 16384^3 BF16/FP16 GEMM measured under sustained load (power-limited clocks), 0 if unknown.
  double sustained_matmul_bf16_flops = 0;
  double measured_matmul_fp8_flops = 0;   // best measured FP8 GEMM over shapes (MAMF), 0 if unknown
  double sustained_matmul_fp8_flops = 0;  // a 16384^3 FP8 GEMM under sustained load, 0 if unknown
  double measured_hbm_bytes_per_s = 0;    // measured STREAM-like bandwidth, 0 if unknown
  // FlashAttention-2 forward at head dim 128 as a fraction of the dense BF16 peak, where
  // published (0 if unknown): its kernels use Ampere-style MMA, so Hopper reaches far less of
  // its (wgmma) peak than Ampere does.
  double flash_attention_fraction = 0;
  int sm_count = 0;                    // streaming multiprocessors (tile/wave quantization)
  // The vendor BLAS deals the K iterations of all tiles evenly to the SMs when tiles alone would
  // leave SMs idle (stream-K): cuBLAS on Hopper and newer, seen in tests/validation/h200_kernels.csv.
  bool stream_k_gemm = false;
  int nvlink_gen = 0;                  // 0: none
  double nvlink_bytes_per_s = 0;       // NVLink per GPU per direction (all links together)
  bool nvlink_bridge_only = false;     // NVLink only via a 2-GPU bridge (no NVSwitch parts)
  int pcie_gen = 4;
  std::string source;                  // where the figures come from

  // Peak dense FLOP/s for a precision; throws InputError when the GPU lacks it.
  double peak_flops(Precision p) const;
};

// Looks a GPU up by name (case-insensitive); throws InputError listing every valid name.
const GpuSpec& find_gpu(std::string_view name);
const std::vector<GpuSpec>& gpu_catalog();

}  // namespace dtsim

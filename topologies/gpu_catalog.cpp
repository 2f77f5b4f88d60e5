// The GPU catalog. Figures come from /work/shared/validation/gpus.csv (row named in each entry's
// comment; that row's `sources` column cites the datasheet/whitepaper/measurement), except the
// RTX 2080 Ti, which is not in the CSV (source: NVIDIA Turing TU102 whitepaper, appendix).
// Units: bytes, bytes/s (GB/s * 1e9), FLOP/s (TFLOPS * 1e12).
// Memory capacity: the marketed "GB" of every part here is physically binary (an "80GB" A100 has
// 80 GiB of HBM; nvidia-smi shows 81920 MiB), so memory_bytes = memory_GB * 2^30 throughout.
// bf16_flops is the CSV column bf16_fp16_tflops_dense_fp32acc (tensor cores, FP32 accumulate;
// consumer GeForce parts run it at half their FP16-accumulate rate). V100 and 2080 Ti have FP16
// tensor cores only (no BF16); their FP16 rate stands in for both.
// measured_hbm_bytes_per_s takes the lower end of a measured range.
#include "topologies/gpu_catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "sim/base/error.hpp"
#include "sim/base/units.hpp"

namespace dtsim {
namespace {

std::vector<GpuSpec> make_catalog() {
  return {
      // gpus.csv row "V100-SXM2 (16/32GB)" (32 GB variant); 80 SMs (GV100 in V100).
      {.name = "V100-SXM2-32GB", .memory_bytes = 32 * kGiB, .hbm_bytes_per_s = 900 * kGB,
       .fp32_flops = 15.7 * kTFLOP, .tf32_flops = 0, .bf16_flops = 125 * kTFLOP, .fp8_flops = 0,
       .sm_count = 80, .nvlink_gen = 2, .nvlink_bytes_per_s = 150 * kGB, .pcie_gen = 3,
       .source = "gpus.csv row \"V100-SXM2 (16/32GB)\" (GA100 whitepaper V100 column, V100 datasheet)"},
      // FlashAttention fractions: A100 forward up to 73 % of peak (Dao 2023, FlashAttention-2,
      // Sec. 4.1); FlashAttention-2 on H100 reaches 35 % (Shah et al. 2024, FlashAttention-3,
      // Sec. 1).
      // gpus.csv row "A100-SXM4-40GB"; 108 SMs.
      {.name = "A100-SXM4-40GB", .memory_bytes = 40 * kGiB, .hbm_bytes_per_s = 1555 * kGB,
       .fp32_flops = 19.5 * kTFLOP, .tf32_flops = 156 * kTFLOP, .bf16_flops = 312 * kTFLOP,
       .fp8_flops = 0, .flash_attention_fraction = 0.72, .sm_count = 108, .nvlink_gen = 3, .nvlink_bytes_per_s = 300 * kGB,
       .pcie_gen = 4,
       .source = "gpus.csv row \"A100-SXM4-40GB\" (A100 datasheet, GA100 whitepaper)"},
      // gpus.csv row "A100-SXM4-80GB" (MAMF 271.2 TF; cuBLASLt FP16 16384^3 256.5 TF and STREAM
      // 1.61-1.75 TB/s, Azure ND A100 v4).
      {.name = "A100-SXM4-80GB", .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 2039 * kGB,
       .fp32_flops = 19.5 * kTFLOP, .tf32_flops = 156 * kTFLOP, .bf16_flops = 312 * kTFLOP,
       .fp8_flops = 0, .measured_matmul_bf16_flops = 271.2 * kTFLOP, .sustained_matmul_bf16_flops = 256.5 * kTFLOP,
       .measured_hbm_bytes_per_s = 1.61e12, .flash_attention_fraction = 0.72, .sm_count = 108, .nvlink_gen = 3,
       .nvlink_bytes_per_s = 300 * kGB, .pcie_gen = 4,
       .source = "gpus.csv row \"A100-SXM4-80GB\" (A100 datasheet; MAMF and STREAM measurements)"},
      // gpus.csv row "A100-PCIe-80GB" (MAMF 252.9 TF); NVLink 3 bridge, 600 GB/s bidir = 300/dir.
      {.name = "A100-PCIe-80GB", .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 1935 * kGB,
       .fp32_flops = 19.5 * kTFLOP, .tf32_flops = 156 * kTFLOP, .bf16_flops = 312 * kTFLOP,
       .fp8_flops = 0, .measured_matmul_bf16_flops = 252.9 * kTFLOP, .flash_attention_fraction = 0.72, .sm_count = 108,
       .nvlink_gen = 3, .nvlink_bytes_per_s = 300 * kGB, .nvlink_bridge_only = true,
       .pcie_gen = 4,
       .source = "gpus.csv row \"A100-PCIe-80GB\" (A100 datasheet; MAMF measurement)"},
      // gpus.csv row "H100-SXM5-80GB" (MAMF 794.5 TF BF16, 1402.6 TF FP8); 132 SMs. Sustained BF16:
      // the H200's 16384^3 after 8 s (same GH100 die, SM clock and 700 W limit; h200_kernels.csv).
      {.name = "H100-SXM5-80GB", .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 3350 * kGB,
       .fp32_flops = 67 * kTFLOP, .tf32_flops = 494.5 * kTFLOP, .bf16_flops = 989.4 * kTFLOP,
       .fp8_flops = 1979 * kTFLOP, .measured_matmul_bf16_flops = 794.5 * kTFLOP,
       .sustained_matmul_bf16_flops = 668.0 * kTFLOP,
       .measured_matmul_fp8_flops = 1402.6 * kTFLOP, .flash_attention_fraction = 0.35, .sm_count = 132,
       .stream_k_gemm = true, .nvlink_gen = 4, .nvlink_bytes_per_s = 450 * kGB, .pcie_gen = 5,
       .source = "gpus.csv row \"H100-SXM5-80GB\" (H100 datasheet; MAMF measurement)"},
      // gpus.csv row "H100-PCIe-80GB"; 114 SMs; NVLink 4 bridge, 600 GB/s bidir = 300/dir.
      {.name = "H100-PCIe-80GB", .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 2000 * kGB,
       .fp32_flops = 51 * kTFLOP, .tf32_flops = 378 * kTFLOP, .bf16_flops = 756 * kTFLOP,
       .fp8_flops = 1513 * kTFLOP, .flash_attention_fraction = 0.35, .sm_count = 114,
       .stream_k_gemm = true, .nvlink_gen = 4,
       .nvlink_bytes_per_s = 300 * kGB, .nvlink_bridge_only = true, .pcie_gen = 5,
       .source = "gpus.csv row \"H100-PCIe-80GB\" (H100 datasheet)"},
      // gpus.csv row "H200-SXM-141GB" (STREAM 4.00-4.48 TB/s and cuBLASLt FP8 16384^3 1366 TF, Azure
      // ND H200 v5; FP8 MAMF 1453.4 TF); 132 SMs. BF16: best of 365 GEMM shapes 739.0 TF and
      // 16384^3 after 8 s 668.0 TF, measured here (tests/validation/h200_kernels.csv).
      {.name = "H200-SXM-141GB", .memory_bytes = 141 * kGiB, .hbm_bytes_per_s = 4800 * kGB,
       .fp32_flops = 67 * kTFLOP, .tf32_flops = 494.5 * kTFLOP, .bf16_flops = 989.4 * kTFLOP,
       .fp8_flops = 1979 * kTFLOP, .measured_matmul_bf16_flops = 739.0 * kTFLOP,
       .sustained_matmul_bf16_flops = 668.0 * kTFLOP, .measured_matmul_fp8_flops = 1453.4 * kTFLOP,
       .sustained_matmul_fp8_flops = 1366 * kTFLOP, .measured_hbm_bytes_per_s = 4.00e12,
       .flash_attention_fraction = 0.35, .sm_count = 132, .stream_k_gemm = true,
       .nvlink_gen = 4, .nvlink_bytes_per_s = 450 * kGB, .pcie_gen = 5,
       .source = "gpus.csv row \"H200-SXM-141GB\" (H200 datasheet; STREAM, Azure ND H200 v5); BF16 GEMMs "
                 "measured on one H200 (tests/validation/h200_kernels.csv)"},
      // gpus.csv row "B200 (HGX/DGX B200)" (MAMF 1745.0 TF BF16, 3432.5 TF FP8); 148 SMs.
      {.name = "B200", .memory_bytes = 180 * kGiB, .hbm_bytes_per_s = 8000 * kGB,
       .fp32_flops = 80 * kTFLOP, .tf32_flops = 1125 * kTFLOP, .bf16_flops = 2250 * kTFLOP,
       .fp8_flops = 4500 * kTFLOP, .measured_matmul_bf16_flops = 1745.0 * kTFLOP,
       .measured_matmul_fp8_flops = 3432.5 * kTFLOP, .sm_count = 148,
       .stream_k_gemm = true, .nvlink_gen = 5, .nvlink_bytes_per_s = 900 * kGB, .pcie_gen = 5,
       .source = "gpus.csv row \"B200 (HGX/DGX B200)\" (DGX B200 datasheet; MAMF measurement)"},
      // gpus.csv row "L40S"; 142 SMs; no NVLink.
      {.name = "L40S", .memory_bytes = 48 * kGiB, .hbm_bytes_per_s = 864 * kGB,
       .fp32_flops = 91.6 * kTFLOP, .tf32_flops = 183 * kTFLOP, .bf16_flops = 362 * kTFLOP,
       .fp8_flops = 733 * kTFLOP, .sm_count = 142, .nvlink_gen = 0, .pcie_gen = 4,
       .source = "gpus.csv row \"L40S\" (L40S datasheet)"},
      // gpus.csv rows "RTX 3090 24GB" and "RTX 3090 NVLink bridge" (56.25 GB/s/dir); 82 SMs.
      {.name = "RTX-3090", .memory_bytes = 24 * kGiB, .hbm_bytes_per_s = 936 * kGB,
       .fp32_flops = 35.6 * kTFLOP, .tf32_flops = 35.6 * kTFLOP, .bf16_flops = 71 * kTFLOP,
       .fp8_flops = 0, .sm_count = 82, .nvlink_gen = 3, .nvlink_bytes_per_s = 56.25 * kGB,
       .nvlink_bridge_only = true, .pcie_gen = 4,
       .source = "gpus.csv rows \"RTX 3090 24GB\", \"RTX 3090 NVLink bridge\" (GA102 whitepaper)"},
      // gpus.csv row "RTX 4090 24GB" (fp8 = FP8 w/ FP32 accumulate); 128 SMs; no NVLink.
      {.name = "RTX-4090", .memory_bytes = 24 * kGiB, .hbm_bytes_per_s = 1008 * kGB,
       .fp32_flops = 82.6 * kTFLOP, .tf32_flops = 82.6 * kTFLOP, .bf16_flops = 165.2 * kTFLOP,
       .fp8_flops = 330.3 * kTFLOP, .sm_count = 128, .nvlink_gen = 0, .pcie_gen = 4,
       .source = "gpus.csv row \"RTX 4090 24GB\" (Ada AD102 whitepaper)"},
      // Not in gpus.csv. Turing TU102 whitepaper appendix (RTX 2080 Ti reference clocks): 11 GB
      // GDDR6 616 GB/s, 13.4 TF FP32, 53.8 TF FP16 tensor w/ FP32 accumulate, 68 SMs, no TF32;
      // NVLink 2 bridge (2 x8 links, 100 GB/s bidir = 50/dir); PCIe Gen3.
      {.name = "RTX-2080Ti", .memory_bytes = 11 * kGiB, .hbm_bytes_per_s = 616 * kGB,
       .fp32_flops = 13.4 * kTFLOP, .tf32_flops = 0, .bf16_flops = 53.8 * kTFLOP,
       .fp8_flops = 0, .sm_count = 68, .nvlink_gen = 2, .nvlink_bytes_per_s = 50 * kGB,
       .nvlink_bridge_only = true, .pcie_gen = 3,
       .source = "NVIDIA Turing TU102 whitepaper appendix (not in gpus.csv)"},
      // gpus.csv row "AMD MI300X" (MAMF 668.4 TF, ROCm 6.3); 304 CUs; xGMI is not NVLink.
      {.name = "MI300X", .memory_bytes = 192 * kGiB, .hbm_bytes_per_s = 5300 * kGB,
       .fp32_flops = 163.4 * kTFLOP, .tf32_flops = 653.7 * kTFLOP, .bf16_flops = 1307.4 * kTFLOP,
       .fp8_flops = 2614.9 * kTFLOP, .measured_matmul_bf16_flops = 668.4 * kTFLOP,
       .sm_count = 304, .nvlink_gen = 0, .pcie_gen = 5,
       .source = "gpus.csv row \"AMD MI300X\" (AMD datasheet; MAMF measurement, ROCm 6.3)"},
  };
}

// Extra accepted spellings (compared case-insensitively) -> catalog name.
const std::vector<std::pair<std::string_view, std::string_view>> kAliases = {
    {"V100", "V100-SXM2-32GB"},      {"A100", "A100-SXM4-80GB"},
    {"A100-80GB", "A100-SXM4-80GB"}, {"A100-40GB", "A100-SXM4-40GB"},
    {"H100", "H100-SXM5-80GB"},      {"H100-80GB", "H100-SXM5-80GB"},
    {"H200", "H200-SXM-141GB"},      {"RTX3090", "RTX-3090"},
    {"3090", "RTX-3090"},            {"RTX4090", "RTX-4090"},
    {"4090", "RTX-4090"},            {"RTX2080Ti", "RTX-2080Ti"},
    {"RTX-2080-Ti", "RTX-2080Ti"},   {"2080Ti", "RTX-2080Ti"},
};

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

constexpr std::pair<Precision, std::string_view> kPrecisionNames[] = {
    {Precision::fp32, "fp32"}, {Precision::tf32, "tf32"}, {Precision::fp16, "fp16"},
    {Precision::bf16, "bf16"}, {Precision::fp8, "fp8"}};

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = make_catalog();
  return catalog;
}

const GpuSpec& find_gpu(std::string_view name) {
  std::string_view wanted = name;
  for (const auto& [alias, target] : kAliases) {
    if (iequals(alias, name)) wanted = target;
  }
  for (const GpuSpec& spec : gpu_catalog()) {
    if (iequals(spec.name, wanted)) return spec;
  }
  std::vector<std::string_view> names;
  for (const GpuSpec& spec : gpu_catalog()) names.push_back(spec.name);
  throw InputError(fmt::format("unknown GPU '{}'; valid names: {}", name, fmt::join(names, ", ")));
}

double GpuSpec::peak_flops(Precision p) const {
  switch (p) {
    case Precision::fp32: return fp32_flops;
    case Precision::tf32: return tf32_flops > 0 ? tf32_flops : fp32_flops;
    case Precision::fp16:
    case Precision::bf16: return bf16_flops;
    case Precision::fp8:
      if (fp8_flops <= 0) {
        throw InputError(fmt::format("GPU '{}' has no FP8 tensor cores; use bf16", name));
      }
      return fp8_flops;
  }
  return fp32_flops;
}

Precision parse_precision(std::string_view text, std::string_view key) {
  for (const auto& [p, pname] : kPrecisionNames) {
    if (iequals(pname, text)) return p;
  }
  throw InputError(
      fmt::format("{} = '{}': unknown precision; valid values: fp32, tf32, fp16, bf16, fp8", key, text));
}

std::string_view precision_name(Precision p) {
  for (const auto& [q, pname] : kPrecisionNames) {
    if (q == p) return pname;
  }
  return "?";
}

double precision_bytes(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32: return 4;
    case Precision::fp16:
    case Precision::bf16:
    case Precision::fp8: return 2;  // fp8 trains with bf16 storage
  }
  return 4;
}

}  // namespace dtsim

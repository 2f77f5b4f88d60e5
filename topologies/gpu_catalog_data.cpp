// The GPU catalog's parts (gpu_catalog.hpp), each with the documents behind its figures
// (gpu_documents.cpp). Figures of the parts in /work/shared/validation/gpus.csv come from their
// row there; the others from the documents named in `sources`.
// Units: bytes, bytes/s (GB/s * 1e9), FLOP/s (TFLOPS * 1e12), watts.
// Rates are dense (no 2:4 sparsity): a vendor's "with sparsity" figure is halved.
// Memory capacity: the marketed "GB" of every part here is physically binary (an "80GB" A100 has
// 80 GiB of HBM; nvidia-smi shows 81920 MiB), so memory_bytes = memory_GB * 2^30 throughout;
// where a system's total is the vendor's figure (13.4 TB for 72 GB200), its per-GPU share is used.
// bf16_flops is gpus.csv's bf16_fp16_tflops_dense_fp32acc (tensor cores, FP32 accumulate;
// consumer GeForce parts run it, and FP8/FP4, at half their FP16-accumulate rate). V100 and
// 2080 Ti have FP16 tensor cores only (no BF16); their FP16 rate stands in for both.
// measured_hbm_bytes_per_s takes the lower end of a measured range. Per-GPU figures of a rack or
// board are its total over its GPUs. AMD's Infinity Fabric is not NVLink: AMD parts have
// nvlink_gen 0 and no NVLink domain (their 8-GPU boards are in form_factor).
#include "topologies/gpu_catalog.hpp"

#include "sim/base/units.hpp"

namespace dtsim {
namespace {

// A source list where one document gives every group.
constexpr GpuSources all_from(std::string_view key) { return {key, key, key, key, key}; }
// gpus.csv's figures, with the eight GPUs of a DGX/HGX board as their NVLink domain.
constexpr GpuSources kCsvOnDgxBoard = {"gpus-csv", "gpus-csv", "gpus-csv", "gpus-csv, nv-dgx", "gpus-csv"};

std::vector<GpuSpec> make_catalog() {
  return {
      // gpus.csv row "V100-SXM2 (16/32GB)" (32 GB variant); 80 SMs (GV100 in V100).
      {.name = "V100-SXM2-32GB", .aliases = {"V100"}, .form_factor = "SXM2, DGX-1 board of 8",
       .memory_bytes = 32 * kGiB, .hbm_bytes_per_s = 900 * kGB,
       .fp32_flops = 15.7 * kTFLOP, .tf32_flops = 0, .bf16_flops = 125 * kTFLOP, .fp8_flops = 0,
       .sm_count = 80, .nvlink_gen = 2, .nvlink_bytes_per_s = 150 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 3,
       .tdp_watts = 300,
       .source = "gpus.csv row \"V100-SXM2 (16/32GB)\" (GA100 whitepaper V100 column, V100 datasheet)",
       .sources = kCsvOnDgxBoard},
      // FlashAttention fractions: A100 forward up to 73 % of peak (Dao 2023, FlashAttention-2,
      // Sec. 4.1); FlashAttention-2 on H100 reaches 35 % (Shah et al. 2024, FlashAttention-3,
      // Sec. 1). Transformer Engine's cuDNN attention, which it prefers on Hopper: 1.59-1.60x
      // flash-attn over a forward and backward pass on an H100 at head dim 128, causal, 2K and 8K
      // tokens (TransformerEngine docs/examples/attention/attention.ipynb), so 0.35 x 1.59 = 0.56;
      // the FlashAttention-3 paper's Fig. 5 has cuDNN at 529 TFLOP/s (0.53), causal, 8K.
      // gpus.csv row "A100-SXM4-40GB"; 108 SMs.
      {.name = "A100-SXM4-40GB", .aliases = {"A100-40GB"}, .form_factor = "SXM4, HGX board of 8",
       .memory_bytes = 40 * kGiB, .hbm_bytes_per_s = 1555 * kGB,
       .fp32_flops = 19.5 * kTFLOP, .tf32_flops = 156 * kTFLOP, .bf16_flops = 312 * kTFLOP,
       .fp8_flops = 0, .flash_attention_fraction = 0.72, .sm_count = 108, .nvlink_gen = 3, .nvlink_bytes_per_s = 300 * kGB,
       .nvlink_domain_gpus = 8, .pcie_gen = 4, .tdp_watts = 400,
       .source = "gpus.csv row \"A100-SXM4-40GB\" (A100 datasheet, GA100 whitepaper)",
       .sources = kCsvOnDgxBoard},
      // gpus.csv row "A100-SXM4-80GB" (MAMF 271.2 TF; cuBLASLt FP16 16384^3 256.5 TF and STREAM
      // 1.61-1.75 TB/s, Azure ND A100 v4).
      {.name = "A100-SXM4-80GB", .aliases = {"A100", "A100-80GB"}, .form_factor = "SXM4, HGX board of 8",
       .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 2039 * kGB,
       .fp32_flops = 19.5 * kTFLOP, .tf32_flops = 156 * kTFLOP, .bf16_flops = 312 * kTFLOP,
       .fp8_flops = 0, .measured_matmul_bf16_flops = 271.2 * kTFLOP, .sustained_matmul_bf16_flops = 256.5 * kTFLOP,
       .measured_hbm_bytes_per_s = 1.61e12, .flash_attention_fraction = 0.72, .sm_count = 108, .nvlink_gen = 3,
       .nvlink_bytes_per_s = 300 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 4, .tdp_watts = 400,
       .source = "gpus.csv row \"A100-SXM4-80GB\" (A100 datasheet; MAMF and STREAM measurements)",
       .sources = kCsvOnDgxBoard},
      // gpus.csv row "A100-PCIe-80GB" (MAMF 252.9 TF); NVLink 3 bridge, 600 GB/s bidir = 300/dir.
      {.name = "A100-PCIe-80GB", .aliases = {"A100 PCIe"}, .form_factor = "PCIe dual-slot, NVLink-bridged pairs",
       .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 1935 * kGB,
       .fp32_flops = 19.5 * kTFLOP, .tf32_flops = 156 * kTFLOP, .bf16_flops = 312 * kTFLOP,
       .fp8_flops = 0, .measured_matmul_bf16_flops = 252.9 * kTFLOP, .flash_attention_fraction = 0.72, .sm_count = 108,
       .nvlink_gen = 3, .nvlink_bytes_per_s = 300 * kGB, .nvlink_bridge_only = true, .nvlink_domain_gpus = 2,
       .pcie_gen = 4, .tdp_watts = 300,
       .source = "gpus.csv row \"A100-PCIe-80GB\" (A100 datasheet; MAMF measurement)",
       .sources = all_from("gpus-csv")},
      // gpus.csv row "H100-SXM5-80GB" (MAMF 794.5 TF BF16, 1402.6 TF FP8); 132 SMs. Sustained BF16:
      // the H200's 16384^3 after 8 s (same GH100 die, SM clock and 700 W limit; h200_kernels.csv).
      {.name = "H100-SXM5-80GB", .aliases = {"H100", "H100-80GB", "H100 SXM"}, .form_factor = "SXM5, HGX board of 8",
       .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 3350 * kGB,
       .fp32_flops = 67 * kTFLOP, .tf32_flops = 494.5 * kTFLOP, .bf16_flops = 989.4 * kTFLOP,
       .fp8_flops = 1979 * kTFLOP, .measured_matmul_bf16_flops = 794.5 * kTFLOP,
       .sustained_matmul_bf16_flops = 668.0 * kTFLOP,
       .measured_matmul_fp8_flops = 1402.6 * kTFLOP, .flash_attention_fraction = 0.35, .cudnn_attention_fraction = 0.56, .sm_count = 132,
       .stream_k_gemm = true, .nvlink_gen = 4, .nvlink_bytes_per_s = 450 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 5,
       .tdp_watts = 700,
       .source = "gpus.csv row \"H100-SXM5-80GB\" (H100 datasheet; MAMF measurement)",
       .sources = kCsvOnDgxBoard},
      // gpus.csv row "H100-PCIe-80GB"; 114 SMs; NVLink 4 bridge, 600 GB/s bidir = 300/dir.
      {.name = "H100-PCIe-80GB", .aliases = {"H100 PCIe"}, .form_factor = "PCIe dual-slot, NVLink-bridged pairs",
       .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 2000 * kGB,
       .fp32_flops = 51 * kTFLOP, .tf32_flops = 378 * kTFLOP, .bf16_flops = 756 * kTFLOP,
       .fp8_flops = 1513 * kTFLOP, .flash_attention_fraction = 0.35, .cudnn_attention_fraction = 0.56, .sm_count = 114,
       .stream_k_gemm = true, .nvlink_gen = 4,
       .nvlink_bytes_per_s = 300 * kGB, .nvlink_bridge_only = true, .nvlink_domain_gpus = 2, .pcie_gen = 5,
       .tdp_watts = 350,
       .source = "gpus.csv row \"H100-PCIe-80GB\" (H100 datasheet; TDP 300-350 W configurable)",
       .sources = all_from("gpus-csv")},
      // The H100 NVL column of NVIDIA's H100 page (per GPU since 2024; first sold as a pair).
      {.name = "H100-NVL-94GB", .aliases = {"H100 NVL"}, .form_factor = "PCIe dual-slot, NVLink-bridged pairs",
       .memory_bytes = 94 * kGiB, .hbm_bytes_per_s = 3900 * kGB,
       .fp32_flops = 60 * kTFLOP, .tf32_flops = 417.5 * kTFLOP, .bf16_flops = 835.5 * kTFLOP,
       .fp8_flops = 1670.5 * kTFLOP, .sm_count = 132, .stream_k_gemm = true, .nvlink_gen = 4,
       .nvlink_bytes_per_s = 300 * kGB, .nvlink_bridge_only = true, .nvlink_domain_gpus = 2, .pcie_gen = 5,
       .tdp_watts = 400,
       .source = "H100 NVL: sparse rates halved; TDP the top of its 350-400 W range; 132 SMs from its MIG slices",
       .sources = {"nv-h100", "nv-h100", "nv-h100, nv-mig-h100nvl", "nv-h100", "nv-h100"}},
      // "H100 96GB" is the GPU of a GH200 superchip (N8 CIR's Bede lists its GH200 nodes' GPU so).
      {.name = "GH200-96GB", .aliases = {"GH200", "H100-96GB"},
       .form_factor = "Grace Hopper superchip, GH200 NVL2 pairs",
       .memory_bytes = 96 * kGiB, .hbm_bytes_per_s = 4000 * kGB,
       .fp32_flops = 67 * kTFLOP, .tf32_flops = 494.5 * kTFLOP, .bf16_flops = 989.4 * kTFLOP,
       .fp8_flops = 1979 * kTFLOP, .sm_count = 132, .stream_k_gemm = true, .nvlink_gen = 4,
       .nvlink_bytes_per_s = 450 * kGB, .nvlink_domain_gpus = 2, .pcie_gen = 5, .tdp_watts = 1000,
       .source = "what 'H100 96GB' names: the H100 of a GH200 (96 GB HBM3, 4 TB/s); no H100 with 96 GB HBM2e at 500 W "
                 "was found in any vendor document. TDP: the superchip's 1000 W maximum (Grace CPU included)",
       .sources = {"nv-gh200, mleng-accel", "nv-gh200, mleng-accel", "nv-gh200", "nv-gh200", "nv-gh200"}},
      // The export H100 for China (2023): H100 SXM compute and memory, NVLink cut to 400 GB/s. The
      // same GH100 die, SM clock and 700 W limit as the H100 SXM, so its measured kernel rates (the
      // row above) are the H800's: the catalog has no H800 measurement of its own.
      {.name = "H800-SXM5-80GB", .aliases = {"H800", "H800 SXM"}, .form_factor = "SXM5, HGX board of 8",
       .memory_bytes = 80 * kGiB, .hbm_bytes_per_s = 3350 * kGB,
       .fp32_flops = 67 * kTFLOP, .tf32_flops = 494.5 * kTFLOP, .bf16_flops = 989.4 * kTFLOP,
       .fp8_flops = 1979 * kTFLOP, .measured_matmul_bf16_flops = 794.5 * kTFLOP,
       .sustained_matmul_bf16_flops = 668.0 * kTFLOP, .measured_matmul_fp8_flops = 1402.6 * kTFLOP,
       .flash_attention_fraction = 0.35, .cudnn_attention_fraction = 0.56, .sm_count = 132, .stream_k_gemm = true, .nvlink_gen = 4,
       .nvlink_bytes_per_s = 200 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 5, .tdp_watts = 700,
       .source = "H800 SXM: secondary sources only (no NVIDIA page found); NVLink 400 GB/s both directions = 200/dir; "
                 "kernel rates those of the H100 SXM (same die, clock and power limit)",
       .sources = {"h800-2nd", "h800-2nd", "h800-2nd", "h800-2nd, deepseek-v3", "h800-2nd"}},
      // The export Hopper for China after Oct 2023: full NVLink, 78 SMs, low tensor rates.
      {.name = "H20", .aliases = {"H20-96GB"}, .form_factor = "SXM5, HGX board of 8",
       .memory_bytes = 96 * kGiB, .hbm_bytes_per_s = 4000 * kGB,
       .fp32_flops = 44 * kTFLOP, .tf32_flops = 74 * kTFLOP, .bf16_flops = 148 * kTFLOP,
       .fp8_flops = 296 * kTFLOP, .sm_count = 78, .stream_k_gemm = true, .nvlink_gen = 4,
       .nvlink_bytes_per_s = 450 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 5, .tdp_watts = 400,
       .source = "H20: secondary sources only (NVIDIA published no product page); NVLink 900 GB/s both directions",
       .sources = all_from("h20-2nd")},
      // gpus.csv row "H200-SXM-141GB" (STREAM 4.00-4.48 TB/s and cuBLASLt FP8 16384^3 1366 TF, Azure
      // ND H200 v5; FP8 MAMF 1453.4 TF); 132 SMs. BF16: best of 365 GEMM shapes 739.0 TF and
      // 16384^3 after 8 s 668.0 TF, measured here (tests/validation/h200_kernels.csv).
      {.name = "H200-SXM-141GB", .aliases = {"H200", "H200 SXM"}, .form_factor = "SXM5, HGX board of 8",
       .memory_bytes = 141 * kGiB, .hbm_bytes_per_s = 4800 * kGB,
       .fp32_flops = 67 * kTFLOP, .tf32_flops = 494.5 * kTFLOP, .bf16_flops = 989.4 * kTFLOP,
       .fp8_flops = 1979 * kTFLOP, .measured_matmul_bf16_flops = 739.0 * kTFLOP,
       .sustained_matmul_bf16_flops = 668.0 * kTFLOP, .measured_matmul_fp8_flops = 1453.4 * kTFLOP,
       .sustained_matmul_fp8_flops = 1366 * kTFLOP, .measured_hbm_bytes_per_s = 4.00e12,
       .flash_attention_fraction = 0.35, .cudnn_attention_fraction = 0.56, .sm_count = 132, .stream_k_gemm = true,
       .nvlink_gen = 4, .nvlink_bytes_per_s = 450 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 5, .tdp_watts = 700,
       .source = "gpus.csv row \"H200-SXM-141GB\" (H200 datasheet; STREAM, Azure ND H200 v5); BF16 GEMMs "
                 "measured on one H200 (tests/validation/h200_kernels.csv)",
       .sources = kCsvOnDgxBoard},
      // gpus.csv row "B200 (HGX/DGX B200)" (MAMF 1745.0 TF BF16, 3432.5 TF FP8; FP4 9000 dense); 148 SMs.
      {.name = "B200", .aliases = {"HGX B200", "DGX B200"}, .form_factor = "SXM, HGX board of 8",
       .memory_bytes = 180 * kGiB, .hbm_bytes_per_s = 8000 * kGB,
       .fp32_flops = 80 * kTFLOP, .tf32_flops = 1125 * kTFLOP, .bf16_flops = 2250 * kTFLOP,
       .fp8_flops = 4500 * kTFLOP, .fp4_flops = 9000 * kTFLOP, .measured_matmul_bf16_flops = 1745.0 * kTFLOP,
       .measured_matmul_fp8_flops = 3432.5 * kTFLOP, .sm_count = 148,
       .stream_k_gemm = true, .nvlink_gen = 5, .nvlink_bytes_per_s = 900 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 5,
       .tdp_watts = 1000,
       .source = "gpus.csv row \"B200 (HGX/DGX B200)\" (DGX B200 datasheet; MAMF measurement; ~1000 W and PCIe gen "
                 "not re-verified there)",
       .sources = kCsvOnDgxBoard},
      // Blackwell Ultra on an HGX B300 board: the board's totals over its 8 GPUs.
      {.name = "B300", .aliases = {"HGX B300", "DGX B300"}, .form_factor = "SXM, HGX board of 8",
       .memory_bytes = 288 * kGiB, .hbm_bytes_per_s = 8000 * kGB,
       .fp32_flops = 75 * kTFLOP, .tf32_flops = 1125 * kTFLOP, .bf16_flops = 2250 * kTFLOP,
       .fp8_flops = 4500 * kTFLOP, .fp4_flops = 13500 * kTFLOP, .sm_count = 148, .stream_k_gemm = true,
       .nvlink_gen = 5, .nvlink_bytes_per_s = 900 * kGB, .nvlink_domain_gpus = 8, .pcie_gen = 6, .tdp_watts = 1100,
       .source = "B300: HGX B300 totals / 8 (FP4 108 PFLOPS dense / 8 = 13.5); 148 SMs and 1100 W from secondary "
                 "sources only",
       .sources = {"nv-hgx-b300, nv-bwu-blog", "nv-bwu-blog", "nv-hgx-b300, cuda-sms", "nv-hgx-b300", "verda-bw"}},
      // One Blackwell GPU of a GB200 NVL72 rack (two per Grace Blackwell superchip).
      {.name = "GB200", .aliases = {"GB200 NVL72"}, .form_factor = "Grace Blackwell superchip, NVL72 rack of 72",
       .memory_bytes = 186 * kGiB, .hbm_bytes_per_s = 8000 * kGB,
       .fp32_flops = 80 * kTFLOP, .tf32_flops = 1250 * kTFLOP, .bf16_flops = 2500 * kTFLOP,
       .fp8_flops = 5000 * kTFLOP, .fp4_flops = 10000 * kTFLOP, .sm_count = 152, .stream_k_gemm = true,
       .nvlink_gen = 5, .nvlink_bytes_per_s = 900 * kGB, .nvlink_domain_gpus = 72, .pcie_gen = 5, .tdp_watts = 1200,
       .source = "GB200: NVL72 rack totals / 72, sparse rates halved (FP32 and TF32 from ml-engineering); 152 SMs "
                 "from secondary sources only",
       .sources = {"nv-gb200-nvl72", "nv-gb200-nvl72", "nv-gb200-nvl72, mleng-accel, cuda-sms", "nv-gb200-nvl72",
                   "mleng-accel, verda-bw"}},
      // One Blackwell Ultra GPU of a GB300 NVL72 rack.
      {.name = "GB300", .aliases = {"GB300 NVL72"}, .form_factor = "Grace Blackwell Ultra superchip, NVL72 rack of 72",
       .memory_bytes = 288 * kGiB, .hbm_bytes_per_s = 8000 * kGB,
       .fp32_flops = 80 * kTFLOP, .tf32_flops = 1250 * kTFLOP, .bf16_flops = 2500 * kTFLOP,
       .fp8_flops = 5000 * kTFLOP, .fp4_flops = 15000 * kTFLOP, .sm_count = 152, .stream_k_gemm = true,
       .nvlink_gen = 5, .nvlink_bytes_per_s = 900 * kGB, .nvlink_domain_gpus = 72, .pcie_gen = 6, .tdp_watts = 1400,
       .source = "GB300: FP4 and memory from NVIDIA's Blackwell Ultra blog, FP8 = 360 PFLOPS / 72; BF16, TF32, FP32 "
                 "and 1400 W from a secondary table; 152 SMs from secondary sources only",
       .sources = {"nv-bwu-blog", "nv-bwu-blog", "nv-bwu-blog, nv-gb300-nvl72, verda-bw, cuda-sms",
                   "nv-gb300-nvl72, nv-bwu-blog", "verda-bw, mleng-accel"}},
      // Data-center Ada: L4 (AD104) and L40 (AD102) run FP16/BF16 with FP32 accumulate at the
      // rates their datasheets list.
      {.name = "L4", .form_factor = "PCIe low-profile single-slot",
       .memory_bytes = 24 * kGiB, .hbm_bytes_per_s = 300 * kGB,
       .fp32_flops = 30.3 * kTFLOP, .tf32_flops = 60 * kTFLOP, .bf16_flops = 121 * kTFLOP,
       .fp8_flops = 242.5 * kTFLOP, .sm_count = 58, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 72,
       .source = "L4 datasheet, sparse rates halved", .sources = all_from("nv-l4")},
      {.name = "L40", .form_factor = "PCIe dual-slot",
       .memory_bytes = 48 * kGiB, .hbm_bytes_per_s = 864 * kGB,
       .fp32_flops = 90.5 * kTFLOP, .tf32_flops = 90.5 * kTFLOP, .bf16_flops = 181.05 * kTFLOP,
       .fp8_flops = 362 * kTFLOP, .sm_count = 142, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 300,
       .source = "L40 datasheet (dense figures)", .sources = all_from("nv-l40")},
      // gpus.csv row "L40S"; 142 SMs; no NVLink.
      {.name = "L40S", .form_factor = "PCIe dual-slot",
       .memory_bytes = 48 * kGiB, .hbm_bytes_per_s = 864 * kGB,
       .fp32_flops = 91.6 * kTFLOP, .tf32_flops = 183 * kTFLOP, .bf16_flops = 362 * kTFLOP,
       .fp8_flops = 733 * kTFLOP, .sm_count = 142, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 350,
       .source = "gpus.csv row \"L40S\" (L40S datasheet)", .sources = all_from("gpus-csv")},
      // Not in gpus.csv. Turing TU102 whitepaper appendix (RTX 2080 Ti reference clocks): 11 GB
      // GDDR6 616 GB/s, 13.4 TF FP32, 53.8 TF FP16 tensor w/ FP32 accumulate, 68 SMs, no TF32;
      // NVLink 2 bridge (2 x8 links, 100 GB/s bidir = 50/dir); PCIe Gen3.
      {.name = "RTX-2080Ti", .aliases = {"2080Ti"}, .form_factor = "PCIe consumer, NVLink-bridged pairs",
       .memory_bytes = 11 * kGiB, .hbm_bytes_per_s = 616 * kGB,
       .fp32_flops = 13.4 * kTFLOP, .tf32_flops = 0, .bf16_flops = 53.8 * kTFLOP,
       .fp8_flops = 0, .sm_count = 68, .nvlink_gen = 2, .nvlink_bytes_per_s = 50 * kGB,
       .nvlink_bridge_only = true, .nvlink_domain_gpus = 2, .pcie_gen = 3, .tdp_watts = 250,
       .source = "NVIDIA Turing TU102 whitepaper appendix (not in gpus.csv)", .sources = all_from("tu102-wp")},
      // gpus.csv rows "RTX 3060 12GB", "RTX 3070 8GB", "RTX 3080 10GB" (derived: SMs x boost clock x
      // 512 dense FP16 FLOP/clock/SM with FP32 accumulate); no NVLink.
      {.name = "RTX-3060-12GB", .aliases = {"RTX 3060", "3060"}, .form_factor = "PCIe consumer",
       .memory_bytes = 12 * kGiB, .hbm_bytes_per_s = 360 * kGB,
       .fp32_flops = 12.7 * kTFLOP, .tf32_flops = 12.7 * kTFLOP, .bf16_flops = 25.5 * kTFLOP,
       .fp8_flops = 0, .sm_count = 28, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 170,
       .source = "gpus.csv row \"RTX 3060 12GB\" (derived: 28 SMs x 1.777 GHz)", .sources = all_from("gpus-csv")},
      {.name = "RTX-3070-8GB", .aliases = {"RTX 3070", "3070"}, .form_factor = "PCIe consumer",
       .memory_bytes = 8 * kGiB, .hbm_bytes_per_s = 448 * kGB,
       .fp32_flops = 20.3 * kTFLOP, .tf32_flops = 20.3 * kTFLOP, .bf16_flops = 40.6 * kTFLOP,
       .fp8_flops = 0, .sm_count = 46, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 220,
       .source = "gpus.csv row \"RTX 3070 8GB\" (recalled from the GA102 whitepaper, re-derived: 46 SMs x 1.725 GHz)",
       .sources = all_from("gpus-csv")},
      {.name = "RTX-3080-10GB", .aliases = {"RTX 3080", "3080"}, .form_factor = "PCIe consumer",
       .memory_bytes = 10 * kGiB, .hbm_bytes_per_s = 760 * kGB,
       .fp32_flops = 29.8 * kTFLOP, .tf32_flops = 29.8 * kTFLOP, .bf16_flops = 59.5 * kTFLOP,
       .fp8_flops = 0, .sm_count = 68, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 320,
       .source = "gpus.csv row \"RTX 3080 10GB\" (recalled from the GA102 whitepaper, re-derived: 68 SMs x 1.71 GHz)",
       .sources = all_from("gpus-csv")},
      // gpus.csv rows "RTX 3090 24GB" and "RTX 3090 NVLink bridge" (56.25 GB/s/dir); 82 SMs.
      {.name = "RTX-3090", .aliases = {"3090", "RTX 3090 24GB"}, .form_factor = "PCIe consumer, NVLink-bridged pairs",
       .memory_bytes = 24 * kGiB, .hbm_bytes_per_s = 936 * kGB,
       .fp32_flops = 35.6 * kTFLOP, .tf32_flops = 35.6 * kTFLOP, .bf16_flops = 71 * kTFLOP,
       .fp8_flops = 0, .sm_count = 82, .nvlink_gen = 3, .nvlink_bytes_per_s = 56.25 * kGB,
       .nvlink_bridge_only = true, .nvlink_domain_gpus = 2, .pcie_gen = 4, .tdp_watts = 350,
       .source = "gpus.csv rows \"RTX 3090 24GB\", \"RTX 3090 NVLink bridge\" (GA102 whitepaper)",
       .sources = all_from("gpus-csv")},
      // gpus.csv row "RTX 4090 24GB" (fp8 = FP8 w/ FP32 accumulate); 128 SMs; no NVLink.
      {.name = "RTX-4090", .aliases = {"4090", "RTX 4090 24GB"}, .form_factor = "PCIe consumer",
       .memory_bytes = 24 * kGiB, .hbm_bytes_per_s = 1008 * kGB,
       .fp32_flops = 82.6 * kTFLOP, .tf32_flops = 82.6 * kTFLOP, .bf16_flops = 165.2 * kTFLOP,
       .fp8_flops = 330.3 * kTFLOP, .sm_count = 128, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 450,
       .source = "gpus.csv row \"RTX 4090 24GB\" (Ada AD102 whitepaper)", .sources = all_from("gpus-csv")},
      // GeForce Blackwell (GB202, sm_120: Ada-style MMA, no tcgen05, so no stream-K assumed).
      {.name = "RTX-5090", .aliases = {"5090", "RTX 5090 32GB"}, .form_factor = "PCIe consumer",
       .memory_bytes = 32 * kGiB, .hbm_bytes_per_s = 1792 * kGB,
       .fp32_flops = 104.8 * kTFLOP, .tf32_flops = 104.8 * kTFLOP, .bf16_flops = 209.5 * kTFLOP,
       .fp8_flops = 419 * kTFLOP, .fp4_flops = 838 * kTFLOP, .sm_count = 170, .nvlink_gen = 0, .pcie_gen = 5,
       .tdp_watts = 575,
       .source = "RTX 5090: BF16 209.5 with FP32 accumulate (forum thread); FP8 419 and FP4 838 derived at the same "
                 "half rate of FP16 accumulate (838 / 1,676)",
       .sources = all_from("nv-rtx-bw")},
      // gpus.csv row "AMD MI250X" lists both GCDs; ROCm runs a rank on one GCD, so the figures here
      // are one GCD's (half of each): 110 CUs; xGMI is not NVLink.
      {.name = "MI250X", .form_factor = "OAM, 2 GCDs: one GCD (one device) here, 8 GCDs per board",
       .memory_bytes = 64 * kGiB, .hbm_bytes_per_s = 1638.5 * kGB,
       .fp32_flops = 23.95 * kTFLOP, .tf32_flops = 0, .bf16_flops = 191.5 * kTFLOP,
       .fp8_flops = 0, .sm_count = 110, .nvlink_gen = 0, .pcie_gen = 4, .tdp_watts = 250,
       .source = "gpus.csv row \"AMD MI250X\" halved: one of its two GCDs (TDP: half of the 500 W module)",
       .sources = {"gpus-csv", "gpus-csv", "gpus-csv, amd-mi250x", "gpus-csv", "gpus-csv"}},
      // gpus.csv row "AMD MI300X" (MAMF 668.4 TF, ROCm 6.3); 304 CUs; xGMI is not NVLink.
      {.name = "MI300X", .form_factor = "OAM, Infinity Fabric board of 8",
       .memory_bytes = 192 * kGiB, .hbm_bytes_per_s = 5300 * kGB,
       .fp32_flops = 163.4 * kTFLOP, .tf32_flops = 653.7 * kTFLOP, .bf16_flops = 1307.4 * kTFLOP,
       .fp8_flops = 2614.9 * kTFLOP, .measured_matmul_bf16_flops = 668.4 * kTFLOP,
       .sm_count = 304, .nvlink_gen = 0, .pcie_gen = 5, .tdp_watts = 750,
       .source = "gpus.csv row \"AMD MI300X\" (AMD datasheet; MAMF measurement, ROCm 6.3)",
       .sources = all_from("gpus-csv")},
      // MI300X compute with 256 GB HBM3E at 6 TB/s and 1000 W (MAMF 784.9 TF, ml-engineering).
      {.name = "MI325X", .form_factor = "OAM, Infinity Fabric board of 8",
       .memory_bytes = 256 * kGiB, .hbm_bytes_per_s = 6000 * kGB,
       .fp32_flops = 163.4 * kTFLOP, .tf32_flops = 653.7 * kTFLOP, .bf16_flops = 1307.4 * kTFLOP,
       .fp8_flops = 2614.9 * kTFLOP, .measured_matmul_bf16_flops = 784.9 * kTFLOP,
       .sm_count = 304, .nvlink_gen = 0, .pcie_gen = 5, .tdp_watts = 1000,
       .source = "MI325X datasheet; MAMF 784.9 TFLOPS BF16 (ml-engineering, 1000 W, ROCm 6.2)",
       .sources = {"amd-mi325x", "amd-mi325x", "amd-mi325x, mleng-accel", "amd-mi325x", "amd-mi325x"}},
      // CDNA 4: 256 CUs at 2.4 GHz; no TF32 rate listed (peak_flops(tf32) falls back to FP32).
      {.name = "MI355X", .form_factor = "OAM, Infinity Fabric board of 8",
       .memory_bytes = 288 * kGiB, .hbm_bytes_per_s = 8000 * kGB,
       .fp32_flops = 157.3 * kTFLOP, .tf32_flops = 0, .bf16_flops = 2516.6 * kTFLOP,
       .fp8_flops = 5033.2 * kTFLOP, .fp4_flops = 10066.3 * kTFLOP, .sm_count = 256, .nvlink_gen = 0, .pcie_gen = 5,
       .tdp_watts = 1400,
       .source = "MI355X: 256 CUs x 2.4 GHz x 4,096 / 8,192 / 16,384 FLOP per clock (BF16 / FP8 / FP4), AMD's 2.5 / "
                 "5 / 10 PFLOPS; TF32 not listed",
       .sources = all_from("amd-mi355x")},
  };
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = make_catalog();
  return catalog;
}

}  // namespace dtsim

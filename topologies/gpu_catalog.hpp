// The GPU catalog: peak rates, memory, links and power of the GPUs dtsim knows, each group of
// figures tied to the public documents it comes from. The engine times ops on these numbers;
// builders size links. The parts are in gpu_catalog_data.cpp, the documents in gpu_documents.cpp.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// fp4: the GEMM rate of the NVFP4 recipe (workloads/precision_recipe), never a storage format.
enum class Precision { fp32, tf32, fp16, bf16, fp8, fp4 };

// Parses "fp32|tf32|fp16|bf16|fp8"; throws InputError naming `key` and the valid values.
Precision parse_precision(std::string_view text, std::string_view key);
std::string_view precision_name(Precision p);
// Bytes per element of weights/activations stored in this precision (fp8 and fp4 train with bf16 storage).
double precision_bytes(Precision p);

// Where each group of a part's figures comes from: keys of gpu_documents(), separated by ", "
// when a group draws on several. Every group of every part names at least one (tests check).
struct GpuSources {
  std::string_view memory;     // capacity
  std::string_view bandwidth;  // memory bandwidth
  std::string_view rates;      // FP32/TF32/BF16/FP8/FP4 peaks, SM count, measured rates
  std::string_view links;      // NVLink generation, rate and domain; PCIe generation
  std::string_view power;      // TDP
};

// A public document the catalog cites: a short key and the reference (publisher, title, date and
// what was read from it; "secondary" where it reports a vendor's figures second-hand).
struct GpuDocument {
  std::string_view key;
  std::string_view reference;
};

struct GpuSpec {
  std::string name;                    // catalog key, e.g. "A100-SXM4-80GB"
  std::vector<std::string> aliases = {};  // other names a user would type, e.g. "A100", "3090"
  std::string form_factor;             // package and the system it is sold in, e.g. "SXM5, HGX board"
  double memory_bytes = 0;             // HBM / GDDR capacity
  double hbm_bytes_per_s = 0;          // peak memory bandwidth
  double fp32_flops = 0;               // CUDA-core FP32 peak
  double tf32_flops = 0;               // tensor-core TF32 dense peak (0: none)
  double bf16_flops = 0;               // tensor-core FP16/BF16 dense peak with FP32 accumulate
  double fp8_flops = 0;                // tensor-core FP8 dense peak (0: none)
  double fp4_flops = 0;                // tensor-core FP4 dense peak (0: none); listed, not simulated
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
  // cuDNN's fused attention (Transformer Engine's FusedAttention) forward at head dim 128 as a
  // fraction of the dense BF16 peak, where published (0: the GPU's FlashAttention-2 rate).
  double cudnn_attention_fraction = 0;
  int sm_count = 0;                    // streaming multiprocessors (tile/wave quantization)
  // The vendor BLAS deals the K iterations of all tiles evenly to the SMs when tiles alone would
  // leave SMs idle (stream-K): cuBLAS on Hopper and newer, seen in tests/validation/h200_kernels.csv.
  bool stream_k_gemm = false;
  int nvlink_gen = 0;                  // 0: none
  double nvlink_bytes_per_s = 0;       // NVLink per GPU per direction (all links together)
  bool nvlink_bridge_only = false;     // NVLink only via a 2-GPU bridge (no NVSwitch parts)
  // GPUs in one NVLink domain as the part is sold: 8 on an HGX/DGX board, 72 in an NVL72 rack,
  // 2 for bridged pairs; 0 without NVLink.
  int nvlink_domain_gpus = 0;
  int pcie_gen = 4;
  int tdp_watts = 0;                   // power limit: TDP, or the board/module power the vendor states
  std::string source;                  // one line: what the figures are, derivations and caveats
  GpuSources sources;                  // the documents behind each group of figures

  // Peak dense FLOP/s for a precision; throws InputError when the GPU lacks it.
  double peak_flops(Precision p) const;
};

// Looks a GPU up by its name or an alias, ignoring case, spaces, hyphens and underscores and a
// leading vendor or brand word ("NVIDIA RTX 3060 12GB" is RTX-3060-12GB); throws InputError
// naming the value, the nearest name and every valid name.
const GpuSpec& find_gpu(std::string_view name);
const std::vector<GpuSpec>& gpu_catalog();
// Every document a part's sources name, in the order they are listed.
const std::vector<GpuDocument>& gpu_documents();
// The keys a GpuSources group names ("a, b" gives "a", "b").
std::vector<std::string_view> source_keys(std::string_view group);

}  // namespace dtsim

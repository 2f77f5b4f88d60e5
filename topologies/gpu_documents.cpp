// The public documents the GPU catalog cites (gpu_catalog.hpp): each part's GpuSources name these
// keys, and `dtsim catalog gpus` prints the list. Dense rates are the vendor's "with sparsity"
// figures halved wherever a document gives only those.
#include "topologies/gpu_catalog.hpp"

namespace dtsim {

const std::vector<GpuDocument>& gpu_documents() {
  static const std::vector<GpuDocument> documents = {
      {"gpus-csv",
       "shared/validation/gpus.csv, the part's row: its `sources` column cites the vendor datasheet, product page or "
       "whitepaper (most via the stas00/ml-engineering tables) and its `confidence` column marks recalled or derived "
       "values (RTX 3060/3070/3080: derived from SM count x boost clock)"},
      {"mleng-accel",
       "stas00/ml-engineering, compute/accelerator/README.md at commit b9e2972 (2025), secondary, each row citing the "
       "vendor page: TFLOPS table (GB200 per GPU 80 FP32, 1250 TF32, 2500 BF16, 5000 FP8, 10000 FP4, dense), memory "
       "table (GH200 96 GB HBM3 at 4.00 TB/s), power table (GB200 1200 W), MAMF table (MI325X 784.9 TFLOPS BF16 at "
       "1000 W, ROCm 6.2)"},
      {"nv-dgx",
       "NVIDIA DGX datasheets: DGX-1 with Tesla V100 (2017), DGX A100 (2020), DGX H100 (2022), DGX B200 (2024): eight "
       "SXM GPUs joined by NVLink (NVSwitch from A100 on), as on the HGX boards OEMs build on"},
      {"tu102-wp",
       "NVIDIA Turing GPU Architecture whitepaper (2018), Appendix A, RTX 2080 Ti at reference clocks: 68 SMs, 11 GB "
       "GDDR6 at 616 GB/s, 13.4 TFLOPS FP32, 53.8 TFLOPS FP16 tensor with FP32 accumulate, NVLink 2 bridge (2 x8 "
       "links, 100 GB/s both directions), 250 W"},
      {"nv-h100",
       "NVIDIA H100 Tensor Core GPU product page, specifications table, H100 NVL column (nvidia.com/en-us/data-center/"
       "h100, 2024): 94 GB HBM3 at 3.9 TB/s, FP32 60 TFLOPS, TF32 835 / BF16 1,671 / FP8 3,341 TFLOPS with sparsity, "
       "NVLink bridge 600 GB/s (pairs), PCIe Gen5 128 GB/s, max TDP 350-400 W (configurable)"},
      {"nv-mig-h100nvl",
       "NVIDIA/gpu-operator pull request #903 (2024-08), nvidia-smi mig -lgip of an H100 NVL: the MIG slices (1g: 16 "
       "SMs, 7 instances) are those of the 132-SM H100 SXM (the 114-SM H100 PCIe has 14); secondary"},
      {"nv-gh200",
       "NVIDIA GH200 Grace Hopper Superchip product page and datasheet (2023-2024): the Hopper GPU with 96 GB HBM3 at "
       "4 TB/s (or 144 GB HBM3e), H100 SXM compute (FP8 3,958 / BF16 1,979 / TF32 989 TFLOPS with sparsity, 67 "
       "TFLOPS FP32), NVLink-C2C 900 GB/s to Grace, NVLink 4 at 900 GB/s between the two superchips of a GH200 NVL2, "
       "module power 450-1000 W for CPU, GPU and memory together"},
      {"h800-2nd",
       "secondary descriptions of the NVIDIA H800 SXM (aiwiki.ai \"NVIDIA H800\", 2026; Philisun \"NVIDIA H800 vs "
       "H100\", 2025): the H100 SXM5's GH100 die with its 132 SMs, 80 GB HBM3 at 3.35 TB/s, tensor rates and 700 W, "
       "NVLink cut to 400 GB/s both directions and FP64 to 1 TFLOPS; NVIDIA's own H800 page was not found"},
      {"deepseek-v3",
       "DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv:2412.19437, Dec 2024), Sec. 3.1 and 3.2.2: H800 nodes of 8 "
       "GPUs joined by NVLink and NVSwitch, NVLink 160 GB/s reached against InfiniBand's 50 GB/s"},
      {"h20-2nd",
       "secondary reports of the NVIDIA H20 (the specification table circulated in Nov 2023, e.g. willitrunai.com "
       "\"H20 96GB\"; a Geekbench 6 listing reported by Wccftech for its 78 SMs): 96 GB HBM3 at 4.0 TB/s, FP8 296 / "
       "BF16 148 / TF32 74 / FP32 44 TFLOPS dense, NVLink 900 GB/s on 8-GPU HGX boards, PCIe Gen5, 400 W; NVIDIA "
       "published no product page"},
      {"nv-hgx-b300",
       "NVIDIA HGX platform page, HGX B300 column (nvidia.com/en-us/data-center/hgx, 2025), as transcribed by FiberMall "
       "(2025) and G. Lockwood's B300 notes: eight Blackwell Ultra GPUs, FP4 144 | 108 PFLOPS (sparse | dense), FP8 "
       "72, BF16 36, TF32 18 PFLOPS with sparsity, FP32 600 TFLOPS, up to 2.3 TB HBM3e, NVLink 5 at 1.8 TB/s per GPU, "
       "PCIe Gen6 to the host; per GPU: / 8"},
      {"nv-bwu-blog",
       "NVIDIA Technical Blog, \"Inside NVIDIA Blackwell Ultra: The Chip Powering the AI Factory Era\" (Aug 2025): 160 "
       "SMs in the full GPU, 15 PFLOPS dense NVFP4, 288 GB HBM3e at 8 TB/s per GPU, NVLink 5 at 1.8 TB/s both "
       "directions"},
      {"verda-bw",
       "Verda (formerly DataCrunch) blog, \"NVIDIA GB300 NVL72: GPU Architecture & Performance\" (2025), per-GPU dense "
       "table for GB300 / GB200 / B300 / B200, secondary: GB300 5 PFLOPS FP8, 2.5 BF16, 1.25 TF32, 0.080 FP32, max "
       "TDP 1.4 kW; B300 1.1 kW; GB200 1.2 kW"},
      {"nv-gb200-nvl72",
       "NVIDIA GB200 NVL72 product page, specifications table (nvidia.com/en-us/data-center/gb200-nvl72, 2024-2025): "
       "72 Blackwell GPUs in one NVLink domain (130 TB/s, 1.8 TB/s per GPU), up to 13.4 TB HBM3e at 576 TB/s (186 GB "
       "and 8 TB/s per GPU), FP4 1,440 / FP8 720 / BF16 360 PFLOPS with sparsity (per GPU: / 72, halved)"},
      {"nv-gb300-nvl72",
       "NVIDIA GB300 NVL72 product page (nvidia.com/en-us/data-center/gb300-nvl72, 2025), as summarised by G. "
       "Lockwood's notes: 72 Blackwell Ultra GPUs in one NVLink domain (130 TB/s), 1.1 EFLOPS dense FP4 and 360 "
       "PFLOPS FP8 per rack, HBM3e at 576 TB/s"},
      {"cuda-sms",
       "secondary, not vendor-published: CUDA's multiProcessorCount quoted in public kernel code and its notes "
       "(2025-2026): GB200 152, GB300 152, B300 148 (B200 148); NVIDIA states only the full Blackwell Ultra's 160 "
       "(nv-bwu-blog). GB200's MIG slices are larger than B200's (NVIDIA/gpu-operator #1303 and #1242, 2025: 2g "
       "38 SMs against 36)"},
      {"amd-mi250x",
       "AMD Instinct MI250X product page (2021), via ml-engineering: two GCDs of 110 CUs each (220), 128 GB HBM2e at "
       "3.2 TB/s, 47.9 TFLOPS FP32 and 383 TFLOPS FP16/BF16 for both GCDs, 500 W (560 W peak); ROCm shows each GCD "
       "as its own device"},
      {"amd-mi325x",
       "AMD Instinct MI325X product page and datasheet (Oct 2024): 256 GB HBM3E at 6 TB/s, 304 CUs, FP16/BF16 1,307.4 "
       "/ FP8 2,614.9 / TF32 653.7 / FP32 163.4 TFLOPS dense, 1000 W, PCIe Gen5, eight GPUs per platform joined by 7 "
       "Infinity Fabric links each (not NVLink)"},
      {"amd-mi355x",
       "AMD Instinct MI355X product page and CDNA 4 whitepaper (Jun 2025): 288 GB HBM3E at 8 TB/s, 256 CUs at 2.4 "
       "GHz, 157.3 TFLOPS FP32 vector, FP16/BF16 2.5, FP8 5.0, MXFP4 10 PFLOPS dense (20 quoted with sparsity), "
       "PCIe Gen5, eight GPUs per platform on Infinity Fabric (not NVLink); 1,400 W per Tom's Hardware (Jun 2025, "
       "from AMD's ISC 2025 talk). Dense rates as CUs x clock x FLOP/clock/CU (4,096 BF16, 8,192 FP8 as AMD's ISSCC "
       "2026 paper gives it, 16,384 FP4)"},
      {"nv-l4",
       "NVIDIA L4 Tensor Core GPU datasheet (2023): 24 GB GDDR6 at 300 GB/s, FP32 30.3 TFLOPS, TF32 120 / BF16 242 / "
       "FP8 485 TFLOPS with sparsity, 72 W, PCIe Gen4 x16, no NVLink; AD104 with 7,424 CUDA cores (58 SMs)"},
      {"nv-l40",
       "NVIDIA L40 datasheet (2022): 48 GB GDDR6 with ECC at 864 GB/s, 18,176 CUDA cores (142 SMs), FP32 90.5, TF32 "
       "90.5, BF16 181.05, FP8 362 TFLOPS dense (double with sparsity), 300 W, PCIe Gen4 x16, no NVLink"},
      {"nv-rtx-bw",
       "NVIDIA RTX Blackwell GPU Architecture whitepaper (2025), RTX 5090: 170 SMs at 2,407 MHz boost, 32 GB GDDR7 on "
       "512 bits (1,792 GB/s), 104.8 TFLOPS FP32, 575 W, PCIe Gen5, no NVLink; and the NVIDIA developer forum thread "
       "\"RTX 5090 peak BF16 tensor TFLOPS\" (2025): 209.5 dense with FP32 accumulate, 419 with FP16 accumulate"},
  };
  return documents;
}

}  // namespace dtsim

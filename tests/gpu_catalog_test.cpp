// The GPU catalog's 2026 parts: figures pinned to their documents, the names users type, a
// document behind every group of figures of every part, and the did-you-mean of unknown names.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "sim/base/error.hpp"
#include "sim/base/units.hpp"
#include "topologies/gpu_catalog.hpp"

using namespace dtsim;

namespace {

std::string error_of(std::string_view name) {
  try {
    find_gpu(name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("new parts carry their documents' figures", "[catalog]") {
  const struct {
    const char* name;
    double gib, bf16_tflops, fp8_tflops, fp4_tflops;
    int sms, domain, tdp, pcie;
  } parts[] = {
      // NVL72 page: 13.4 TB / 72, 360 PFLOPS BF16 with sparsity / 72 / 2; 1200 W (ml-engineering).
      {"GB200", 186, 2500, 5000, 10000, 152, 72, 1200, 5},
      // Blackwell Ultra blog: 288 GB, 15 PFLOPS dense NVFP4; 360 PFLOPS FP8 per rack / 72.
      {"GB300", 288, 2500, 5000, 15000, 152, 72, 1400, 6},
      // HGX B300: 36 PFLOPS BF16 sparse / 8 / 2, 108 PFLOPS dense FP4 / 8.
      {"B300", 288, 2250, 4500, 13500, 148, 8, 1100, 6},
      {"B200", 180, 2250, 4500, 9000, 148, 8, 1000, 5},
      // H100 page, NVL column: BF16 1,671 and FP8 3,341 TFLOPS with sparsity, halved.
      {"H100-NVL-94GB", 94, 835.5, 1670.5, 0, 132, 2, 400, 5},
      {"GH200-96GB", 96, 989.4, 1979, 0, 132, 2, 1000, 5},
      {"H800-SXM5-80GB", 80, 989.4, 1979, 0, 132, 8, 700, 5},
      {"H20", 96, 148, 296, 0, 78, 8, 400, 5},
      {"MI325X", 256, 1307.4, 2614.9, 0, 304, 0, 1000, 5},
      // 256 CUs x 2.4 GHz x 4,096 / 8,192 / 16,384 FLOP per clock.
      {"MI355X", 288, 2516.6, 5033.2, 10066.3, 256, 0, 1400, 5},
      // One of the MI250X's two GCDs: half of gpus.csv's 128 GB and 383 TFLOPS.
      {"MI250X", 64, 191.5, 0, 0, 110, 0, 250, 4},
      {"L4", 24, 121, 242.5, 0, 58, 0, 72, 4},
      {"L40", 48, 181.05, 362, 0, 142, 0, 300, 4},
      {"RTX-5090", 32, 209.5, 419, 838, 170, 0, 575, 5},
      {"RTX-3060-12GB", 12, 25.5, 0, 0, 28, 0, 170, 4},
      {"RTX-3070-8GB", 8, 40.6, 0, 0, 46, 0, 220, 4},
      {"RTX-3080-10GB", 10, 59.5, 0, 0, 68, 0, 320, 4},
  };
  for (const auto& p : parts) {
    INFO(p.name);
    const GpuSpec& g = find_gpu(p.name);
    CHECK(g.memory_bytes == Approx(p.gib * kGiB));
    CHECK(g.bf16_flops == Approx(p.bf16_tflops * kTFLOP));
    CHECK(g.fp8_flops == Approx(p.fp8_tflops * kTFLOP));
    CHECK(g.fp4_flops == Approx(p.fp4_tflops * kTFLOP));
    CHECK(g.sm_count == p.sms);
    CHECK(g.nvlink_domain_gpus == p.domain);
    CHECK(g.tdp_watts == p.tdp);
    CHECK(g.pcie_gen == p.pcie);
  }
  // NVLink 5 at 1.8 TB/s both directions; the H800's cut to 400 GB/s; the H100 NVL's bridge.
  CHECK(find_gpu("GB200").nvlink_bytes_per_s == 900 * kGB);
  CHECK(find_gpu("H800").nvlink_bytes_per_s == 200 * kGB);
  CHECK(find_gpu("H100 NVL").nvlink_bridge_only);
  CHECK(find_gpu("GB300").hbm_bytes_per_s == 8000 * kGB);
  // No FP8 on Ampere GeForce: simulating it is refused; no TF32 rate on MI355X: FP32 stands in.
  CHECK_THROWS_AS(find_gpu("RTX 3060").peak_flops(Precision::fp8), InputError);
  CHECK(find_gpu("MI355X").peak_flops(Precision::tf32) == Approx(157.3 * kTFLOP));
}

TEST_CASE("the names users type find their part", "[catalog]") {
  const std::pair<const char*, const char*> typed[] = {
      {"GB200", "GB200"}, {"gb200 nvl72", "GB200"}, {"GB300", "GB300"}, {"B300", "B300"},
      {"H100 NVL", "H100-NVL-94GB"}, {"H100-NVL", "H100-NVL-94GB"}, {"h100nvl", "H100-NVL-94GB"},
      {"H100 96GB", "GH200-96GB"}, {"H800", "H800-SXM5-80GB"}, {"H20", "H20"}, {"MI325X", "MI325X"},
      {"AMD Instinct MI355X", "MI355X"}, {"RTX 3060", "RTX-3060-12GB"}, {"RTX 3060 12GB", "RTX-3060-12GB"},
      {"3060", "RTX-3060-12GB"}, {"RTX 5090", "RTX-5090"}, {"5090", "RTX-5090"}, {"L4", "L4"}, {"L40", "L40"},
      {"rtx_3070", "RTX-3070-8GB"}, {"GeForce RTX 3080", "RTX-3080-10GB"},
      // The claimed_gpu column of the GPU guide's table, as printed.
      {"NVIDIA A100 80GB", "A100-SXM4-80GB"}, {"NVIDIA RTX 3060 12GB", "RTX-3060-12GB"},
      {"NVIDIA RTX 3070 8GB", "RTX-3070-8GB"}, {"NVIDIA RTX 3080 10GB", "RTX-3080-10GB"},
      {"NVIDIA RTX 4090 24GB", "RTX-4090"}, {"NVIDIA RTX 3090", "RTX-3090"},
      // Names that worked before keep working.
      {"a100-80gb", "A100-SXM4-80GB"}, {"H100", "H100-SXM5-80GB"}, {"RTX-2080-Ti", "RTX-2080Ti"}};
  for (const auto& [name, part] : typed) {
    INFO(name);
    CHECK(find_gpu(name).name == part);
  }
}

TEST_CASE("every name and alias finds its own part, never another", "[catalog]") {
  std::set<std::string> seen;
  for (const GpuSpec& g : gpu_catalog()) {
    CHECK(find_gpu(g.name).name == g.name);
    for (const std::string& alias : g.aliases) {
      INFO(g.name << " alias " << alias);
      CHECK(find_gpu(alias).name == g.name);
    }
    CHECK(seen.insert(g.name).second);
  }
}

TEST_CASE("unknown GPU names are refused with the nearest name and the valid ones", "[catalog]") {
  const std::string swapped = error_of("H100-SMX5-80GB");
  CHECK_THAT(swapped, Catch::Contains("unknown GPU 'H100-SMX5-80GB' (did you mean 'H100-SXM5-80GB'?)"));
  CHECK_THAT(swapped, Catch::Contains("GB300") && Catch::Contains("RTX-3060-12GB"));
  CHECK_THAT(error_of("GB2000"), Catch::Contains("did you mean 'GB200'?"));
  CHECK_THAT(error_of("NVIDIA"), Catch::Contains("unknown GPU 'NVIDIA'"));
}

TEST_CASE("every group of figures of every part names documents the catalog lists", "[catalog]") {
  std::set<std::string_view> listed, cited;
  for (const GpuDocument& d : gpu_documents()) {
    CHECK(listed.insert(d.key).second);
    CHECK(d.reference.size() > 40);
  }
  for (const GpuSpec& g : gpu_catalog()) {
    const GpuSources& s = g.sources;
    for (const std::string_view group : {s.memory, s.bandwidth, s.rates, s.links, s.power}) {
      INFO(g.name << ": '" << group << "'");
      REQUIRE_FALSE(source_keys(group).empty());
      for (const std::string_view key : source_keys(group)) {
        CHECK(listed.count(key) == 1);
        cited.insert(key);
      }
    }
    CHECK_FALSE(g.source.empty());
    CHECK_FALSE(g.form_factor.empty());
    CHECK(g.tdp_watts > 0);
  }
  CHECK(cited == listed);  // no document that no part cites
  CHECK(source_keys("nv-h100, nv-mig-h100nvl") == std::vector<std::string_view>{"nv-h100", "nv-mig-h100nvl"});
}

// `dtsim catalog`: prints the model, GPU or link catalog (see catalog_command.hpp).
#include "sim/commands/catalog_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/network/comm_model.hpp"
#include "sim/network/nccl_profile.hpp"
#include "sim/base/error.hpp"
#include "sim/base/nearest.hpp"
#include "sim/base/units.hpp"
#include "sim/scenario/frameworks.hpp"
#include "topologies/gpu_catalog.hpp"
#include "topologies/link_catalog.hpp"
#include "workloads/model.hpp"

namespace dtsim {
namespace {

void print_models() {
  std::cout << fmt::format("{:<30} {:>9} {:>9} {:>4} {:>6} {:>5} {:>4} {:>6} {:>6} {:>7} {:>6}  {}\n", "model", "params B",
                           "active B", "L", "h", "a", "kv", "ffn", "kind", "vocab", "seq", "source");
  for (const ModelShape& m : model_catalog()) {
    const std::string ffn = m.is_moe() ? fmt::format("{}+{}x{}", m.active_experts, m.shared_experts, m.expert_ffn_hidden)
                                       : std::to_string(m.ffn_or_default());
    const std::string kind = m.is_moe() ? fmt::format("moe{}", m.experts) : std::string(ffn_kind_name(m.ffn));
    std::cout << fmt::format("{:<30} {:>9.2f} {:>9.2f} {:>4} {:>6} {:>5} {:>4} {:>6} {:>6} {:>7} {:>6}  {}\n", m.name,
                             m.total_params() / 1e9, m.active_params() / 1e9, m.layers, m.hidden, m.heads,
                             m.is_mla() ? std::string("mla") : std::to_string(m.kv_heads_or_heads()), ffn, kind, m.vocab,
                             m.seq_len, m.source);
  }
  std::cout << "(active: parameters one token uses; moe: routed experts, ffn = active + shared x expert size; mla: "
               "latent attention)\n";
}

// "memory, bandwidth: a; rates: a, b" -- the groups that name the same documents, together.
std::string sources_text(const GpuSources& s) {
  const std::pair<const char*, std::string_view> groups[] = {
      {"memory", s.memory}, {"bandwidth", s.bandwidth}, {"rates", s.rates}, {"links", s.links}, {"power", s.power}};
  std::vector<std::pair<std::string, std::string_view>> merged;
  for (const auto& [group, keys] : groups) {
    const auto same = std::find_if(merged.begin(), merged.end(), [&](const auto& m) { return m.second == keys; });
    if (same == merged.end()) merged.emplace_back(group, keys);
    else same->first += std::string(", ") + group;
  }
  std::vector<std::string> parts;
  for (const auto& [group, keys] : merged) parts.push_back(fmt::format("{}: {}", group, keys));
  return fmt::format("{}", fmt::join(parts, "; "));
}

void print_gpus() {
  const auto dash = [](double v, const char* f) { return v > 0 ? fmt::format(fmt::runtime(f), v) : std::string("-"); };
  std::cout << fmt::format("{:<15} {:>4} {:>8} {:>6} {:>7} {:>7} {:>7} {:>7} {:>4} {:>6} {:>7} {:>6} {:>4} {:>5}  {}\n",
                           "GPU", "GiB", "mem GB/s", "FP32", "BF16", "FP8", "FP4", "MAMF", "SMs", "NVLink", "GB/s",
                           "domain", "PCIe", "TDP W", "form factor");
  for (const GpuSpec& g : gpu_catalog())
    std::cout << fmt::format("{:<15} {:>4.0f} {:>8.0f} {:>6.1f} {:>7.1f} {:>7} {:>7} {:>7} {:>4} {:>6} {:>7} {:>6} {:>4} {:>5}  {}\n",
                             g.name, g.memory_bytes / kGiB, g.hbm_bytes_per_s / 1e9, g.fp32_flops / 1e12,
                             g.bf16_flops / 1e12, dash(g.fp8_flops / 1e12, "{:.1f}"), dash(g.fp4_flops / 1e12, "{:.1f}"),
                             dash(g.measured_matmul_bf16_flops / 1e12, "{:.1f}"), g.sm_count,
                             g.nvlink_gen == 0 ? std::string("-")
                                               : fmt::format("{}{}", g.nvlink_gen, g.nvlink_bridge_only ? " br" : ""),
                             dash(g.nvlink_bytes_per_s / 1e9, "{:.2f}"), dash(g.nvlink_domain_gpus, "{:.0f}"),
                             g.pcie_gen, g.tdp_watts, g.form_factor);
  std::cout << "(TFLOP/s, dense: FP32 on CUDA cores; BF16, FP8, FP4 on tensor cores with FP32 accumulate; MAMF: best "
               "measured BF16 GEMM; SMs: AMD compute units; NVLink: generation, br = 2-GPU bridges only, GB/s per GPU "
               "per direction, domain = GPUs in one NVLink domain as sold; -: none or unknown)\n\n";
  std::cout << "Names and sources (the documents below; aliases are matched ignoring case, spaces and hyphens):\n";
  for (const GpuSpec& g : gpu_catalog()) {
    std::cout << g.name;
    if (!g.aliases.empty()) std::cout << fmt::format(" (also {})", fmt::join(g.aliases, ", "));
    std::cout << fmt::format("\n  {}\n  {}\n", sources_text(g.sources), g.source);
  }
  std::cout << "\nDocuments:\n";
  for (const GpuDocument& d : gpu_documents()) std::cout << fmt::format("  {:<15} {}\n", d.key, d.reference);
}

void print_links() {
  std::cout << fmt::format("{:<14} {:>12} {:>11} {:>10}  {:<42} {}\n", "kind", "GB/s per dir", "latency ns", "achievable",
                           "rate", "source");
  for (const LinkFact& f : link_catalog())
    std::cout << fmt::format("{:<14} {:>12} {:>11} {:>10.3f}  {:<42} {}\n", link_kind_name(f.kind),
                             f.bytes_per_s > 0 ? fmt::format("{:.2f}", f.bytes_per_s / 1e9) : std::string("-"),
                             f.latency_ns, achievable_fraction(f.kind), f.rate, f.source);
  std::cout << "(achievable: the fraction of the wire rate collectives reach, calibrated in sim/network/comm_model.cpp on "
               "shared/validation/collectives.csv; Omni-Path on BigScience's all-reduce benchmark on Jean Zay)\n";
}

// Each profile: its title and summary, then each key it sets with the value and the source.
void print_frameworks() {
  for (const FrameworkProfile& p : framework_profiles()) {
    std::cout << fmt::format("{}: {}\n  {}\n", p.name, p.title, p.summary);
    for (const FrameworkSetting& s : p.settings) {
      const char* when = s.when == Condition::fp16               ? " (fp16)"
                         : s.when == Condition::not_fp16         ? " (not fp16)"
                         : s.when == Condition::tensor_parallel  ? " (tp > 1)"
                         : s.when == Condition::no_tensor_parallel ? " (tp = 1)"
                                                                   : "";
      std::cout << fmt::format("  {:<38} {:<12} {}\n", fmt::format("{}{}", s.key, when), s.value, s.source);
    }
    std::cout << "\n";
  }
  std::cout << "(training.framework = NAME selects one; keys given in the scenario or on the command line win; the "
               "default is megatron-core)\n";
}

}  // namespace

int catalog_command(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "--help" || what == "-h" || what == "help") {
    std::cout << "usage: dtsim catalog models|gpus|links|frameworks|nccl\n"
                 "  models      the model catalog (name, shape, parameters, source)\n"
                 "  gpus        the GPU catalog (memory, rates, NVLink domain, PCIe, TDP, form factor, aliases, sources)\n"
                 "  links       the link catalog (NVLink, PCIe, NICs: bandwidth, latency, source)\n"
                 "  frameworks  the framework profiles (training.framework) with each setting's source\n"
                 "  nccl        the NCCL version profiles (cluster.nccl_version): latencies, NVLS, sources\n";
    return 0;
  }
  if (argc > 2) throw InputError(fmt::format("dtsim catalog {}: unexpected argument '{}'", what, argv[2]));
  if (what == "models") print_models();
  else if (what == "gpus") print_gpus();
  else if (what == "links") print_links();
  else if (what == "frameworks") print_frameworks();
  else if (what == "nccl") std::cout << format_nccl_profiles();
  else throw InputError(fmt::format("dtsim catalog '{}'{}: valid catalogs are models, gpus, links, frameworks, nccl",
                                    what, did_you_mean(what, {"models", "gpus", "links", "frameworks", "nccl"})));
  return 0;
}

}  // namespace dtsim

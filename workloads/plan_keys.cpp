// The parallel plan's keys as text: the parsers of their values (each error names the key and
// the valid values) and the names the resolved scenario and the trace print.
#include "workloads/parallel_plan.hpp"

#include <fmt/format.h>

#include <utility>

#include "sim/base/error.hpp"

namespace dtsim {

Recompute parse_recompute(std::string_view text, std::string_view key) {
  if (text == "none") return Recompute::none;
  if (text == "selective") return Recompute::selective;
  if (text == "full") return Recompute::full;
  if (text == "selective_op") return Recompute::selective_op;
  throw InputError(fmt::format("{} = '{}': valid values are none, selective, full, selective_op", key, text));
}

namespace {
constexpr std::pair<RecomputeModule, const char*> kRecomputeModules[] = {
    {RecomputeModule::core_attn, "core_attn"}, {RecomputeModule::layernorm, "layernorm"},
    {RecomputeModule::mla_up_proj, "mla_up_proj"}, {RecomputeModule::moe_act, "moe_act"}};
}  // namespace

unsigned parse_recompute_modules(std::string_view text, std::string_view key) {
  unsigned modules = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    const std::string_view part = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const auto* found = std::find_if(std::begin(kRecomputeModules), std::end(kRecomputeModules),
                                     [&](const auto& m) { return part == m.second; });
    if (found == std::end(kRecomputeModules))
      throw InputError(fmt::format("{} = '{}': '{}' is not a module dtsim recomputes; valid: core_attn, layernorm, "
                                   "mla_up_proj, moe_act (comma-separated)", key, text, part));
    modules |= module_bit(found->first);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return modules;
}

std::string recompute_modules_name(unsigned modules) {
  std::string out;
  for (const auto& [m, name] : kRecomputeModules)
    if (modules & module_bit(m)) {
      if (!out.empty()) out += ',';
      out += name;
    }
  return out;
}

Schedule parse_schedule(std::string_view text, std::string_view key) {
  if (text == "1f1b") return Schedule::one_f_one_b;
  if (text == "gpipe") return Schedule::gpipe;
  if (text == "interleaved") return Schedule::interleaved;
  if (text == "dualpipe") return Schedule::dualpipe;
  if (text == "dualpipev") return Schedule::dualpipev;
  if (text == "zbh1") return Schedule::zbh1;
  throw InputError(
      fmt::format("{} = '{}': valid values are 1f1b, gpipe, interleaved, dualpipe, dualpipev, zbh1", key, text));
}

Attention parse_attention(std::string_view text, std::string_view key) {
  if (text == "standard") return Attention::standard;
  if (text == "flash") return Attention::flash;
  if (text == "flash_triton") return Attention::flash_triton;
  if (text == "cudnn") return Attention::cudnn;
  throw InputError(fmt::format("{} = '{}': valid values are standard, flash, flash_triton, cudnn", key, text));
}

GradAccumulation parse_grad_accumulation(std::string_view text, std::string_view key) {
  if (text == "fused") return GradAccumulation::fused;
  if (text == "separate") return GradAccumulation::separate;
  if (text == "fp32_buffer") return GradAccumulation::fp32_buffer;
  throw InputError(fmt::format("{} = '{}': valid values are fused, separate, fp32_buffer", key, text));
}

TpOverlap parse_tp_overlap(std::string_view text, std::string_view key) {
  if (text == "false") return TpOverlap::none;
  if (text == "true") return TpOverlap::backward;
  if (text == "userbuffers") return TpOverlap::userbuffers;
  throw InputError(fmt::format("{} = '{}': valid values are false, true (the backward pass's TP communication beside "
                               "its GEMMs) and userbuffers (Transformer Engine's comm-GEMM overlap, forward and "
                               "backward)", key, text));
}

std::string_view tp_overlap_name(TpOverlap t) {
  return t == TpOverlap::none ? "false" : t == TpOverlap::backward ? "true" : "userbuffers";
}

double parse_optimizer_moments(std::string_view text, std::string_view key) {
  if (text == "fp32") return 4;
  if (text == "bf16") return 2;
  throw InputError(fmt::format("{} = '{}': valid values are fp32 and bf16 (Adam's moments)", key, text));
}

std::string_view recompute_name(Recompute r) {
  return r == Recompute::none        ? "none"
         : r == Recompute::selective ? "selective"
         : r == Recompute::full      ? "full"
                                     : "selective_op";
}
std::string_view schedule_name(Schedule s) {
  return s == Schedule::one_f_one_b   ? "1f1b"
         : s == Schedule::gpipe       ? "gpipe"
         : s == Schedule::interleaved ? "interleaved"
         : s == Schedule::dualpipe    ? "dualpipe"
         : s == Schedule::dualpipev   ? "dualpipev"
                                      : "zbh1";
}
std::string_view attention_name(Attention a) {
  return a == Attention::standard       ? "standard"
         : a == Attention::flash        ? "flash"
         : a == Attention::flash_triton ? "flash_triton"
                                        : "cudnn";
}
bool fused_attention(Attention a) { return a != Attention::standard; }
CpComm parse_cp_comm(std::string_view text, std::string_view key) {
  if (text == "p2p") return CpComm::p2p;
  if (text == "all_gather") return CpComm::all_gather;
  throw InputError(fmt::format("{} = '{}': valid values are p2p, all_gather", key, text));
}
std::string_view cp_comm_name(CpComm c) { return c == CpComm::p2p ? "p2p" : "all_gather"; }
std::string_view grad_accumulation_name(GradAccumulation g) {
  return g == GradAccumulation::fused ? "fused" : g == GradAccumulation::separate ? "separate" : "fp32_buffer";
}

std::array<char, 4> parse_rank_order(std::string_view text, std::string_view key) {
  const auto invalid = [&] {
    return InputError(fmt::format("{} = '{}': give tp, cp, dp and pp once each, innermost first (e.g. tp,cp,dp,pp; "
                                  "without cp, it goes right outside tp)", key, text));
  };
  std::array<char, 4> order{};
  int n = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    const std::string_view part = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const char dim = part == "tp" ? 't' : part == "cp" ? 'c' : part == "dp" ? 'd' : part == "pp" ? 'p' : '?';
    if (dim == '?' || n == 4 || std::find(order.begin(), order.begin() + n, dim) != order.begin() + n) throw invalid();
    order[n++] = dim;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (n == 3 && std::find(order.begin(), order.begin() + 3, 'c') == order.begin() + 3) {
    const auto t = std::find(order.begin(), order.begin() + 3, 't');
    std::copy_backward(t + 1, order.begin() + 3, order.end());
    *(t + 1) = 'c';
    n = 4;
  }
  if (n != 4) throw invalid();
  return order;
}

}  // namespace dtsim

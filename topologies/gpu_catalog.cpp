// Looking GPUs up by the names users type, their peak rates per precision, and the precisions
// themselves (gpu_catalog.hpp). The parts are in gpu_catalog_data.cpp.
#include "topologies/gpu_catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "sim/base/error.hpp"
#include "sim/base/nearest.hpp"

namespace dtsim {
namespace {

// Vendor and brand words a user may put before a name ("NVIDIA GeForce RTX 3060").
constexpr std::string_view kBrandWords[] = {"nvidia", "geforce", "tesla", "amd", "instinct"};

// A name folded for comparison: lower case, without spaces, hyphens and underscores, and
// without leading brand words ("NVIDIA RTX-3060 12GB" -> "rtx306012gb").
std::string folded(std::string_view name) {
  std::string out;
  for (const char c : name)
    if (c != ' ' && c != '-' && c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const std::string_view word : kBrandWords)
      if (out.size() > word.size() && out.starts_with(word)) out.erase(0, word.size()), stripped = true;
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

constexpr std::pair<Precision, std::string_view> kPrecisionNames[] = {
    {Precision::fp32, "fp32"}, {Precision::tf32, "tf32"}, {Precision::fp16, "fp16"},
    {Precision::bf16, "bf16"}, {Precision::fp8, "fp8"}};

}  // namespace

const GpuSpec& find_gpu(std::string_view name) {
  const std::string wanted = folded(name);
  for (const GpuSpec& spec : gpu_catalog()) {
    if (folded(spec.name) == wanted) return spec;
    for (const std::string& alias : spec.aliases)
      if (folded(alias) == wanted) return spec;
  }
  std::vector<std::string> names, typable;
  for (const GpuSpec& spec : gpu_catalog()) {
    names.push_back(spec.name);
    typable.push_back(spec.name);
    typable.insert(typable.end(), spec.aliases.begin(), spec.aliases.end());
  }
  throw InputError(fmt::format("unknown GPU '{}'{}; valid names: {} (or an alias: dtsim catalog gpus)", name,
                               did_you_mean(std::string(name), typable), fmt::join(names, ", ")));
}

std::vector<std::string_view> source_keys(std::string_view group) {
  std::vector<std::string_view> keys;
  while (!group.empty()) {
    const std::size_t comma = group.find(", ");
    keys.push_back(group.substr(0, comma));
    group = comma == std::string_view::npos ? std::string_view() : group.substr(comma + 2);
  }
  return keys;
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
    case Precision::fp4:
      if (fp4_flops <= 0) throw InputError(fmt::format("GPU '{}' has no FP4 tensor cores (Blackwell-class parts have)", name));
      return fp4_flops;
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
  if (p == Precision::fp4) return "fp4";
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
    case Precision::fp8:
    case Precision::fp4: return 2;  // low-precision GEMMs, bf16 storage
  }
  return 4;
}

}  // namespace dtsim

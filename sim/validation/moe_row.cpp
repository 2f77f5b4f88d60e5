// A published run's row as a mixture-of-experts model, or the reason it cannot be one (see
// moe_row.hpp).
#include "sim/validation/moe_row.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <regex>
#include <string_view>

#include "sim/base/limits.hpp"

namespace dtsim {
namespace {

// Lower-case letters and digits only: "Mixtral 8x7B" and "mixtral-8x7b" both read "mixtral8x7b".
std::string folded(const std::string& text) {
  std::string out;
  for (unsigned char ch : text)
    if (std::isalnum(ch)) out += static_cast<char>(std::tolower(ch));
  return out;
}

// The catalog model the text names: the longest catalog name inside it (so "DeepSeek-R1-Distill-
// Llama-70B" is the dense distill, not deepseek-r1), else the only name the text begins ("Llama 4
// Maverick"); nullptr when none or several.
const ModelShape* catalog_match(const std::string& text) {
  const std::string t = folded(text);
  const ModelShape* inside = nullptr;
  for (const ModelShape& m : model_catalog())
    if (t.find(folded(m.name)) != std::string::npos && (!inside || m.name.size() > inside->name.size())) inside = &m;
  if (inside || t.empty()) return inside;
  const ModelShape* begun = nullptr;
  for (const ModelShape& m : model_catalog()) {
    if (folded(m.name).rfind(t, 0) != 0) continue;
    if (begun) return nullptr;
    begun = &m;
  }
  return begun;
}

// Names of mixture-of-experts families (folded): Mixtral, DeepSeek-V2/V3/R1, Llama 4, GPT-OSS,
// DBRX, anything called MoE, experts x size ("8x22b") and Qwen's total-active names ("30ba3b").
bool names_moe_family(const std::string& text) {
  static const std::regex family("mixtral|deepseekv[23]|deepseekr1|llama4|gptoss|dbrx|moe|\\d+x\\d+b|\\d+ba\\d+b");
  return std::regex_search(folded(text), family);
}

// DeepSeek's multi-head latent attention: only the catalog's shapes carry it.
bool names_mla_family(const std::string& text) {
  static const std::regex mla("deepseekv[23]|deepseekr1");
  return std::regex_search(folded(text), mla);
}

// Column `key` as a whole number from `min` to the GPU limit, or the reason it is not one.
std::string bad_count(const CsvRow& r, const char* key, int min) {
  const std::string& text = r.at(key);
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size() && value >= min && value <= limits::kMaxGpus) return "";
  return fmt::format("column {} = '{}': must be an integer from {} to {}", key, text, min, limits::kMaxGpus);
}

}  // namespace

MoeRow moe_row(const CsvRow& r) {
  MoeRow out;
  const std::string& model = r.at("model");
  const ModelShape* named = catalog_match(model);
  bool expert_columns = false;
  for (const char* k : kMoeColumns) expert_columns = expert_columns || !r.at(k).empty();
  out.catalog = named && named->is_moe() ? named : nullptr;
  out.moe = out.catalog || expert_columns || (!named && names_moe_family(model));
  if (!out.moe) return out;

  if (!out.catalog && names_mla_family(model)) {
    out.unsupported = fmt::format("model '{}' is a DeepSeek mixture of experts with MLA attention, which only the "
                                  "catalog's deepseek-r1 and deepseek-v3 carry; no catalog model matches its name",
                                  model);
    return out;
  }
  // The columns an MoE run needs: the EP size always; without a catalog model, the whole expert
  // layout too (an empty shared_experts or dense_layers is not taken as 0).
  std::vector<std::string> missing;
  for (const char* k : kMoeColumns)
    if (r.at(k).empty() && (!out.catalog || std::string_view(k) == "ep")) missing.push_back(k);
  if (!missing.empty()) {
    out.unsupported = fmt::format("model '{}' is a mixture of experts{}; the row lacks column{} {}", model,
                                  out.catalog ? fmt::format(" ({} in the catalog)", out.catalog->name) : "",
                                  missing.size() > 1 ? "s" : "", fmt::join(missing, ", "));
    return out;
  }
  for (const char* k : kMoeColumns) {
    if (r.at(k).empty()) continue;
    const std::string_view key = k;
    const std::string reason = bad_count(r, k, key == "shared_experts" || key == "dense_layers" ? 0 : 1);
    if (!reason.empty()) {
      out.unsupported = reason;
      return out;
    }
    out.overrides.push_back(fmt::format("--{}.{}={}", key == "ep" ? "parallel" : "model", k, r.at(k)));
  }
  for (const char* k : kMoeExecutionColumns)
    if (!r.at(k).empty()) out.overrides.push_back(fmt::format("--parallel.{}={}", k, r.at(k)));
  return out;
}

}  // namespace dtsim

// The nearest valid name to a mistyped one (nearest.hpp).
#include "sim/base/nearest.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace dtsim {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      const std::size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& candidates) {
  if (typed.empty()) return "";
  const std::size_t allowed = std::max<std::size_t>(2, typed.size() / 3);
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    const std::size_t dot = c.rfind('.');
    std::size_t d = edit_distance(typed, c);
    if (dot != std::string::npos) d = std::min(d, edit_distance(typed, c.substr(dot + 1)));
    if (d < best_distance) best_distance = d, best = c;
  }
  return best;
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates) {
  const std::string best = nearest_name(typed, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace dtsim

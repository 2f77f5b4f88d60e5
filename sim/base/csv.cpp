// CSV parsing (see csv.hpp).
#include "sim/base/csv.hpp"

namespace dtsim {

std::vector<std::vector<std::string>> parse_csv(std::istream& in) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  char c;
  while (in.get(c)) {
    if (quoted) {
      if (c == '"' && in.peek() == '"') rows.back().back() += static_cast<char>(in.get());
      else if (c == '"') quoted = false;
      else rows.back().back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else if (c != '\r') {
      rows.back().back() += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

}  // namespace dtsim

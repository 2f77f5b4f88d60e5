// Reading CSV files (RFC 4180) into records of fields.
#pragma once
#include <istream>
#include <string>
#include <vector>

namespace dtsim {

// Splits CSV text into records of fields (quoted fields may hold commas, quotes doubled, newlines).
std::vector<std::vector<std::string>> parse_csv(std::istream& in);

}  // namespace dtsim

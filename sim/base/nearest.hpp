// "Did you mean": the valid name closest to a mistyped one (edit distance, case-insensitive), for
// the messages that refuse an unknown key, option or catalog entry.
#pragma once
#include <string>
#include <vector>

namespace dtsim {

// Levenshtein distance between `a` and `b`, ignoring ASCII case.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `typed`, or "" when none is within a third of its length (at least 2
// edits); a candidate that ends with `typed` after a dot ("tp" for "parallel.tp") also counts.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& candidates);

// " (did you mean 'NAME'?)" for the nearest candidate, or "" when there is none.
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace dtsim

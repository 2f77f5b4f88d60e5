// Printing a step summary: a readable block for people, one JSON object for scripts.
#pragma once
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "sim/trace/records.hpp"

namespace dtsim {

// The network the scenario's cluster runs on, in words (the summaries echo it).
std::string network_text(const Scenario& scenario);

// The link with the most bytes relative to its bandwidth (the longest time at full rate; first by
// id on ties). links must not be empty.
const LinkRecord& most_loaded_link(const std::vector<LinkRecord>& links);

// The readable block; `ranks` gives the per-stage busy times (the slowest stage, and the split
// that evens the stages when they differ by more than 10 %).
std::string format_summary_text(const Scenario& scenario, const Summary& summary,
                                const std::vector<LinkRecord>& links, const std::vector<RankRecord>& ranks);
// The summary's figures and the scenario's framework profile as one JSON object.
std::string format_summary_json(const Scenario& scenario, const Summary& summary, const std::vector<LinkRecord>& links);

}  // namespace dtsim

// Printing a step summary: a readable block for people, one JSON object for scripts.
#pragma once
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/trace/records.hpp"

namespace dtsim {

#include <vector>

// The link with the most bytes relative to its bandwidth (the longest time at full rate; first by
// id on ties). links must not be empty.
const LinkRecord& most_loaded_link(const std::vector<LinkRecord>& links);

std::string format_summary_text(const Scenario& scenario, const Summary& summary,
                                const std::vector<LinkRecord>& links);
// The summary's figures and the scenario's framework profile as one JSON object.
std::string format_summary_json(const Scenario& scenario, const Summary& summary, const std::vector<LinkRecord>& links);

}  // namespace dtsim

// Printing a step summary: a readable block for people, one JSON object for scripts.
#pragma once
#include <string>

#include "sim/scenario.hpp"
#include "sim/trace_records.hpp"

namespace dtsim {

std::string format_summary_text(const Scenario& scenario, const Summary& summary);
std::string format_summary_json(const Summary& summary);

}  // namespace dtsim

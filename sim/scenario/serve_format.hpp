// Printing a dtsim serve result: a readable block for people, one JSON object for scripts.
#pragma once
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serve.hpp"

namespace dtsim {

std::string format_serve_text(const Scenario& scenario, const ServeResult& result);
std::string format_serve_json(const Scenario& scenario, const ServeResult& result);

}  // namespace dtsim

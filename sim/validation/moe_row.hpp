// The mixture-of-experts side of a published run's row: the optional columns named after the
// scenario keys (ep, experts, active_experts, shared_experts, expert_ffn_hidden, dense_layers;
// etp, moe_dispatcher, moe_a2a_overlap on how they ran),
// the catalog MoE model the model column names (forgivingly: "Mixtral 8x7B", "Qwen3-235B-A22B"),
// and, for a row that looks like an MoE model without being one of the catalog's, the columns it
// lacks. A row is never built as a dense stand-in for an MoE model.
#pragma once
#include <string>
#include <vector>

#include "sim/validation/row_scenario.hpp"
#include "workloads/model.hpp"

namespace dtsim {

inline constexpr const char* kMoeColumns[] = {"ep",  "experts", "active_experts", "shared_experts", "expert_ffn_hidden",
                                              "dense_layers"};

// Optional columns on how the MoE layers ran, named after (and passed as) the parallel.* keys.
inline constexpr const char* kMoeExecutionColumns[] = {"etp", "moe_dispatcher", "moe_a2a_overlap"};

struct MoeRow {
  bool moe = false;                     // the row describes an MoE model (catalog, family name or expert columns)
  const ModelShape* catalog = nullptr;  // the catalog MoE model the model column names
  std::string unsupported;              // why the row cannot be built as an MoE run ("": it can)
  std::vector<std::string> overrides;   // --parallel.ep, the expert and execution columns given, as scenario keys
};

// What the row's model column and expert columns say. An expert column that is not a whole
// number in range makes the row unsupported, with the column and value named.
MoeRow moe_row(const CsvRow& row);

}  // namespace dtsim

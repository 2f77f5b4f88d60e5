// The memory estimate of a simulation and its budget (memory_budget.hpp).
#include "sim/scenario/memory_budget.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "sim/base/error.hpp"

namespace dtsim {

double estimated_run_bytes(const Scenario& sc, double gpus) {
  return kFootprintBaseBytes + kFootprintBytesPerGpu * gpus +
         kFootprintBytesPerOp * estimated_program_ops(sc.plan, sc.model);
}

double default_memory_budget_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 8.0 * 1024 * 1024 * 1024;  // unknown: assume a 16 GiB machine
  return 0.5 * static_cast<double>(pages) * static_cast<double>(page);
}

void check_memory_budget(const Scenario& sc, double gpus, double budget_bytes) {
  const bool given = budget_bytes > 0;
  const double budget = given ? budget_bytes : default_memory_budget_bytes();
  const double need = estimated_run_bytes(sc, gpus);
  if (need <= budget) return;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  throw InputError(fmt::format(
      "{}: simulating {:.0f} GPUs and about {:.3g} million ops needs about {:.3g} GiB of memory, above the budget of "
      "{:.3g} GiB ({}); give a larger --max-memory if the machine has it, or simulate fewer GPUs, layers or "
      "micro-batches",
      sc.source, gpus, estimated_program_ops(sc.plan, sc.model) / 1e6, need / kGiB, budget / kGiB,
      given ? "--max-memory" : "half of this machine's memory"));
}

}  // namespace dtsim

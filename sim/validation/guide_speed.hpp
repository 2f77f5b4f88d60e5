// Decode speed for the GPU buying guide's inference rows (`dtsim fit --seed-table`): how fast the
// guide's recommended cards answer one user, and the cheapest set of priced catalog cards that
// reaches a stated speed. Each figure is a `dtsim serve` run of one sequence.
#pragma once
#include <map>
#include <string>

#include "workloads/memory_fit.hpp"

namespace dtsim {

// The request each speed is measured on: one sequence, a prompt that fills the guide's 4096-token
// context with the output.
constexpr int kGuidePromptTokens = 3840;
constexpr int kGuideOutputTokens = 256;

// A serving setup on `gpus` cards of one kind in one machine, and its decode speed.
struct GuideServing {
  bool modelled = false;       // false: serve cannot run the model (reason says why)
  bool fits = false;           // some weight format fits on the cards
  std::string gpu;             // catalog name
  int gpus = 0, tp = 1, pp = 1;
  WeightFormat weights = WeightFormat::bf16;
  double decode_tokens_per_s = 0;  // one sequence
  double usd = 0;              // gpus x the card's price (0: unpriced)
  std::string reason;          // why there is no speed (not modelled, does not fit)
};

// Launch prices (USD per card) from `path` (columns gpu, usd, source; gpu a catalog name or
// alias), with `extra` (catalog name or alias -> USD) added over them. Throws InputError naming
// the file, row and column, or the --price entry, on bad input.
std::map<std::string, double> read_gpu_prices(const std::string& path, const std::map<std::string, double>& extra);
std::string default_prices_path();

// Decode speed of `model` on `gpus` x `gpu` in the widest weight format that fits (bf16, int8,
// int4): TP over the cards of a machine (at most 8), pipeline stages over machines, or split by
// layers where TP cannot divide the heads.
GuideServing guide_speed(const std::string& model, const std::string& gpu, int gpus);

// The same in weight format `f`; fits = false (no run) when it does not fit.
GuideServing guide_speed_in(const std::string& model, const std::string& gpu, int gpus, WeightFormat f);

// The cheapest priced set (1, 2, 4 or 8 of one card, any format that fits) whose decode speed
// reaches `tokens_per_s`; modelled = false with the reason when none does or serve cannot run it.
GuideServing cheapest_for_speed(const std::string& model, double tokens_per_s, const std::map<std::string, double>& prices);

}  // namespace dtsim

// `dtsim fit --seed-table`: checks a GPU buying guide's VRAM table (scenarios/guide/
// gpu_guide_claims.csv: the guide's columns as printed, plus the catalog model, mode, the catalog
// card the guide names (or one standing for a series) and the card count) against dtsim's memory
// model. Each row gets dtsim's figure (bf16, or mixed-precision Adam for training), a verdict
// (matches within 10 %, underestimates, overestimates), what simple formula the claim equals, and
// whether the claimed cards, with their capacity from the GPU catalog, hold it.
#pragma once
#include <string>
#include <vector>

namespace dtsim {

struct GuideRow {
  std::string model, claimed_vram, claimed_gpu;   // as printed
  std::string dtsim_model, mode, note;
  std::string dtsim_gpu;        // the catalog card (GpuSpec::name) the claimed GPUs are checked on
  int gpu_count = 0;            // the guide's card count, 0 when it gives none
  double claimed_gb = 0;        // the first number of claimed_vram, GB = 1e9 B
  double dtsim_gb = 0;          // dtsim's total at bf16 (one copy of the model), GB
  std::string verdict;          // matches | underestimates | overestimates
  std::string explanation;      // what the claim equals and what the claimed GPUs hold
};

// The default claims file, in the source tree.
std::string default_claims_path();
// Context (tokens) and batch of the inference rows.
constexpr int kGuideContext = 4096;

// Reads and checks every row; throws InputError naming the file, row and column on bad input.
std::vector<GuideRow> check_guide(const std::string& csv_path);

}  // namespace dtsim

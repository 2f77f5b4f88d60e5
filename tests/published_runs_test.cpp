// The fidelity bounds on published, measured training runs (tests/validation/published_runs.csv:
// the rows of shared/validation/runs.csv for Narayanan et al. 2021 Table 1, Korthikanti et al.
// 2022 Table 5 with the 530B DP-8 runs, and the MPT/llm-foundry benchmarks, with their source
// columns). Table 1 + Table 5: median |error| <= 5 %, max <= 10 %; MPT: median <= 10 %;
// Megatron-Bridge's Qwen3-235B-A22B on H100 (an MoE run with parallel folding): 10 %; its dense
// Llama 3 rows on H100 (Transformer Engine's cuDNN attention): each within 12 %. Prints
// each row. The tests simulate thousands of GPUs (minutes), so they are hidden from the default
// run and from the sanitized suite; CMake runs them as their own CTests on the release build.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "sim/validation/validate.hpp"

using namespace dtsim;

namespace {

const std::string kRuns = std::string(DTSIM_SOURCE_DIR) + "/tests/validation/published_runs.csv";

struct ErrorStats {
  std::size_t built = 0;
  double median = 0, max = 0;
};

// Prints the simulated rows and returns the median and max |error| in percent.
ErrorStats report(const std::vector<ValidationRow>& rows) {
  std::vector<double> errors;
  std::cout << fmt::format("{:<70} {:>10} {:>10} {:>8}\n", "row", "measured s", "dtsim s", "error %");
  for (const ValidationRow& r : rows) {
    if (!r.built) continue;
    std::cout << fmt::format("{:<70} {:>10.3f} {:>10.3f} {:>8.1f}\n", r.id, r.measured_s, r.predicted_s, r.error_pct);
    errors.push_back(std::abs(r.error_pct));
  }
  ErrorStats s;
  s.built = errors.size();
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  s.median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  s.max = errors.back();
  std::cout << fmt::format("{} rows: median |error| {:.1f} %, max {:.1f} %\n", n, s.median, s.max);
  return s;
}

}  // namespace

TEST_CASE("Megatron Table 1 and Table 5 runs within 5 % median and 10 % max", "[.published][megatron]") {
  const ErrorStats s = report(validate_runs(kRuns, {"NARAYANAN21", "KORTHIKANTI22"}));
  // Table 1's 10 rows, Table 5's 8 and the two 530B DP-8 runs (the full-recompute one with the
  // micro-batch of 1 that Megatron's scripts use, listed as an assumption).
  CHECK(s.built == 20);
  CHECK(s.median <= 5.0);
  CHECK(s.max <= 10.0);
}

TEST_CASE("MPT llm-foundry runs within 10 % median", "[.published][mpt]") {
  const ErrorStats s = report(validate_runs(kRuns, {"MPT_BENCH"}));
  CHECK(s.built == 138);
  CHECK(s.median <= 10.0);
}

TEST_CASE("Megatron-Bridge's Qwen3-235B-A22B on 256 H100 within 10 %", "[.published][moe]") {
  // The 26.04.01 row: TP 2, PP 8 interleaved (VP 4), EP 32 folded over TP x DP (expert TP 1),
  // the EP-overlapped 1F1B, FP8 current scaling; compared on its tokens/s per GPU.
  std::ifstream in(kRuns);
  std::string line, rows;
  std::getline(in, line);
  rows = line + "\n";
  while (std::getline(in, line))
    if (line.rfind("mbridge_26.04.01_h100_qwen3_235b", 0) == 0) rows += line + "\n";
  const std::string path = fmt::format("{}/dtsim_moe_rows_{}.csv", std::filesystem::temp_directory_path().string(), ::getpid());
  std::ofstream(path) << rows;
  const std::vector<ValidationRow> result = validate_runs(path, {});
  std::filesystem::remove(path);
  const ErrorStats s = report(result);
  REQUIRE(s.built == 1);
  CHECK(s.max <= 10.0);
}

TEST_CASE("Megatron-Bridge's dense Llama 3 rows on H100 each within 12 %", "[.published][dense]") {
  // Llama 3 8B on 8, 70B on 64 and 405B on 1,024 H100 (FP8 current scaling, TE attention); the
  // B200 and GB200 rows of the same table are printed, not bound (dtsim is 7-20 % fast there).
  const std::vector<ValidationRow> rows = validate_runs(kRuns, {"MBRIDGE_PERF_DENSE"});
  report(rows);
  std::vector<ValidationRow> h100;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(h100),
               [](const ValidationRow& r) { return r.id.find("_h100_") != std::string::npos; });
  const ErrorStats s = report(h100);
  REQUIRE(s.built == 3);
  CHECK(s.max <= 12.0);
}

// dtsim serve --sweep: the points run one after another, each loaded and served as a scenario of
// its own; refused points keep their reason.
#include "sim/commands/serve_sweep.hpp"

#include <fmt/format.h>

#include "sim/base/error.hpp"
#include "sim/base/json.hpp"
#include "sim/scenario/serve.hpp"
#include "sim/sweep/runner.hpp"

namespace dtsim {

std::string run_serve_sweep(const ServeSweep& sweep) {
  std::string table;
  for (const SweepAxis& a : sweep.spec.axes) table += fmt::format("{:>24} ", a.key);
  table += fmt::format("{:>10} {:>9} {:>10} {:>12} {:>10} {:>5}\n", "ttft_ms", "tpot_ms", "tokens/s", "tokens/s/GPU",
                       "kv_seqs", "fits");
  JsonList points;
  for (std::int64_t p = 0; p < sweep.spec.num_points(); ++p) {
    const std::vector<std::string> values = sweep.spec.values_at(p);
    std::string json_values;
    for (std::size_t i = 0; i < values.size(); ++i) {
      table += fmt::format("{:>24} ", values[i]);
      json_values += fmt::format("{}: {}, ", json_string(sweep.spec.axes[i].key), json_string(values[i]));
    }
    try {
      Scenario sc = load_scenario(sweep.scenario_path, point_values(sweep.spec, sweep.fixed, values), SweepSection::refuse,
                                  Workload::inference);
      const ServeResult r = run_serve(sc, "", sweep.threads);
      table += fmt::format("{:>10.1f} {:>9.2f} {:>10.1f} {:>12.1f} {:>10.0f} {:>5}\n", r.ttft_s * 1e3,
                           r.tpot.total_s * 1e3, r.decode_tokens_per_s, r.decode_tokens_per_s / r.gpus,
                           r.kv_capacity_sequences, r.fits ? "yes" : "no");
      points.add(fmt::format("{{{}\"status\": \"ok\", \"ttft_ms\": {}, \"tpot_ms\": {}, \"decode_tokens_per_s\": {}, "
                             "\"decode_tokens_per_s_per_gpu\": {}, \"kv_capacity_sequences\": {}, \"fits\": {}}}",
                             json_values, JsonNumber{r.ttft_s * 1e3}, JsonNumber{r.tpot.total_s * 1e3},
                             JsonNumber{r.decode_tokens_per_s}, JsonNumber{r.decode_tokens_per_s / r.gpus},
                             JsonNumber{r.kv_capacity_sequences}, r.fits));
    } catch (const InputError& e) {
      table += fmt::format("refused: {}\n", e.what());
      points.add(fmt::format("{{{}\"status\": \"refused\", \"reason\": {}}}", json_values, json_string(e.what())));
    }
  }
  if (sweep.json)
    return fmt::format("{{\"scenario\": {}, \"axes\": {}, \"points\": {}}}\n", json_string(sweep.scenario_path),
                       json_string(sweep.spec.axis_keys()), points.str());
  return table;
}

}  // namespace dtsim

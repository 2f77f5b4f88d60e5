// Runs the points of a sweep: each point is the scenario file with the command line's fixed keys
// and the point's axis values, loaded, checked and simulated on its own (own Scenario, cluster
// graph, program and engine), so points run concurrently on TBB threads. A point whose input is
// rejected (layout that does not divide, GPU without NVSwitch, ...) is `invalid` with the
// InputError text; one that runs out of GPU memory is `oom`, its memory figures kept and its
// timing (step time, throughput, MFU, time fractions) NaN; neither stops the sweep.
#pragma once
#include <boost/program_options/variables_map.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/sweep/axes.hpp"
#include "sim/trace/records.hpp"

namespace dtsim {

enum class PointStatus { ok, oom, invalid };
std::string_view point_status_name(PointStatus s);

struct PointResult {
  std::int64_t point = 0;           // index in the whole sweep
  std::vector<std::string> values;  // one per axis, as text
  PointStatus status = PointStatus::ok;
  std::string message;              // "" for ok
  Summary summary;                  // invalid points: invalid_summary()
};

// The metrics of a point that did not run: every float64 NaN, the integers as in Summary{}
// (0, oom_rank -1), oom false.
Summary invalid_summary();

// What every point shares.
struct SweepPlan {
  std::string scenario_path;                                // "" = built-in default
  std::vector<std::pair<std::string, std::string>> fixed;   // --section.key=value of the command line
  SweepSpec spec;
  std::string traces_dir;                                   // "" = no traces; else DIR/point-NNNNNN.h5
  bool fold_tp = false;                                     // run_scenario's fold_tp (same results)
};

// The scenario values of a point: its axis values (none for the base), then the command line's
// fixed keys (never the same keys). Throws InputError when the keys refuse a value.
boost::program_options::variables_map point_values(const SweepSpec& spec,
                                                   const std::vector<std::pair<std::string, std::string>>& fixed,
                                                   const std::vector<std::string>& values);

// The resolved base scenario: the file with the fixed keys, the axis keys at their file values.
// Throws InputError when the file cannot be read or has unknown keys.
std::string base_scenario_text(const SweepPlan& plan);

// Simulates point `point` of the plan. Only unexpected failures (not bad input) throw.
PointResult run_point(const SweepPlan& plan, std::int64_t point);

// Runs `points` on at most `jobs` threads (>= 1); the results are in the order of `points`
// whatever the thread timing. `on_done` is called with each point's result as it finishes,
// possibly concurrently; an exception it throws stops the sweep and is rethrown.
using PointDone = std::function<void(const PointResult&)>;
std::vector<PointResult> run_points(const SweepPlan& plan, const std::vector<std::int64_t>& points, int jobs,
                                    const PointDone& on_done);

}  // namespace dtsim

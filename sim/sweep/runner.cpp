// The sweep's point runner (see runner.hpp).
#include "sim/sweep/runner.hpp"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <boost/program_options/parsers.hpp>
#include <cmath>
#include <filesystem>
#include <limits>

#include "sim/base/error.hpp"
#include "sim/trace/hdf5_sink.hpp"
#include "sim/scenario/run.hpp"

namespace po = boost::program_options;

namespace dtsim {

std::string_view point_status_name(PointStatus s) {
  return s == PointStatus::ok ? "ok" : s == PointStatus::oom ? "oom" : "invalid";
}

Summary invalid_summary() {
  Summary s;
  trace_h5::visit_summary(s, [](const char*, auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, double>) value = std::nan("");
  });
  return s;
}

po::variables_map point_values(const SweepSpec& spec, const std::vector<std::pair<std::string, std::string>>& fixed,
                               const std::vector<std::string>& values) {
  std::vector<std::string> args;
  for (std::size_t i = 0; i < values.size(); ++i)
    args.push_back(fmt::format("--{}={}", spec.axes[i].key, values[i]));
  for (const auto& [key, value] : fixed) args.push_back(fmt::format("--{}={}", key, value));
  const po::options_description keys = scenario_options();
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(keys).run(), vm);
  } catch (const po::error& e) {
    throw InputError(e.what());
  }
  return vm;
}

std::string base_scenario_text(const SweepPlan& plan) {
  return resolved_scenario_text(plan.scenario_path, point_values(plan.spec, plan.fixed, {}));
}

PointResult run_point(const SweepPlan& plan, std::int64_t point) {
  PointResult r;
  r.point = point;
  r.values = plan.spec.values_at(point);
  try {
    Scenario sc = load_scenario(plan.scenario_path, point_values(plan.spec, plan.fixed, r.values), SweepSection::accept);
    const std::string trace = plan.traces_dir.empty()
                                  ? ""
                                  : (std::filesystem::path(plan.traces_dir) / fmt::format("point-{:06}.h5", point)).string();
    r.summary = run_scenario(sc, trace, 1, plan.fold_tp).summary;
    if (r.summary.oom) {
      r.status = PointStatus::oom;
      r.message = fmt::format("rank {} needs {:.2f} GiB ({:.0f} bytes) but the GPU holds {:.2f} GiB ({:.0f} bytes); "
                              "first over at {:.6f} s, as its {} grew",
                              r.summary.oom_rank, r.summary.oom_needed_gib, r.summary.oom_needed_gib * kGiB,
                              r.summary.oom_capacity_gib, r.summary.oom_capacity_gib * kGiB, r.summary.oom_time_s,
                              mem_category_name(static_cast<MemCategory>(std::max(0, r.summary.oom_category))));
      // A step that does not fit has no time to compare: only its memory figures stay.
      for (double* timing : {&r.summary.step_time_s, &r.summary.tokens_per_s, &r.summary.model_tflops_per_gpu,
                             &r.summary.hw_tflops_per_gpu, &r.summary.mfu, &r.summary.compute, &r.summary.memory_bound,
                             &r.summary.exposed_comm, &r.summary.bubble, &r.summary.idle})
        *timing = std::nan("");
    }
  } catch (const InputError& e) {
    r.status = PointStatus::invalid;
    r.message = e.what();
    r.summary = invalid_summary();
  }
  return r;
}

std::vector<PointResult> run_points(const SweepPlan& plan, const std::vector<std::int64_t>& points, int jobs,
                                    const PointDone& on_done) {
  std::vector<PointResult> results(points.size());
  tbb::task_arena arena(jobs);
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, points.size(), 1),
        [&](const tbb::blocked_range<std::size_t>& range) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) {
            results[i] = run_point(plan, points[i]);
            on_done(results[i]);
          }
        },
        tbb::simple_partitioner());
  });
  return results;
}

}  // namespace dtsim

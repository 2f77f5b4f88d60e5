// run_sweep and run_merge (see sweep_command.hpp).
#include "sim/commands/sweep_command.hpp"

#include <fmt/format.h>
#include <tbb/info.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "sim/base/error.hpp"
#include "sim/base/safe_write.hpp"
#include "sim/sweep/journal.hpp"
#include "sim/sweep/merge.hpp"
#include "sim/sweep/progress.hpp"
#include "sim/sweep/table.hpp"
#ifdef DTSIM_MPI
#include "sim/sweep/mpi.hpp"
#endif

namespace dtsim {
namespace {

void report(const SweepTable& table, const std::string& output, const std::string& csv, const std::string& note) {
  if (output.empty() && csv.empty()) {
    std::cout << sweep_csv(table);
    return;
  }
  int counts[3] = {0, 0, 0};
  for (const PointResult& r : table.rows) ++counts[static_cast<int>(r.status)];
  std::string files = output;
  if (!csv.empty()) files += (files.empty() ? "" : " and ") + csv;
  std::cout << fmt::format("wrote {}: {} points ({} ok, {} oom, {} invalid){}\n", files, table.rows.size(), counts[0],
                           counts[1], counts[2], note);
}

// Refuses an output whose folder does not exist before any point runs, not after.
// Before any work: the output's folder exists, the path is a file dtsim may write (not a folder,
// FIFO or device, nor one of `inputs`), and the table and the CSV are two files.
void check_outputs(const std::string& output, const std::string& csv, const std::vector<std::string>& inputs) {
  for (const auto& [option, path] : {std::pair("--output", output), std::pair("--csv", csv)}) {
    if (path.empty()) continue;
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder))
      throw InputError(fmt::format("{} {}: the folder '{}' does not exist", option, path, folder.string()));
    check_output_path(path, fmt::format("{} {}", option, path), inputs);
  }
  std::error_code ec;
  if (!output.empty() && !csv.empty() &&
      (output == csv || std::filesystem::equivalent(output, csv, ec)))
    throw InputError(fmt::format("--csv {}: the same file as the table (OUT.h5 {}); name another CSV file", csv, output));
}

}  // namespace

std::string sweep_journal_path(const std::string& output, const std::string& csv) {
  return !output.empty() ? output + ".progress" : !csv.empty() ? csv + ".progress" : "";
}

int run_sweep(const SweepRequest& request) {
  const SweepPlan& plan = request.plan;
  check_outputs(request.output, request.csv, {plan.scenario_path});
  SweepTable table;
  table.scenario = base_scenario_text(plan);
  table.definition = sweep_definition(plan.spec);
  for (const SweepAxis& a : plan.spec.axes) table.axes.push_back(a.key);
  table.total_points = plan.spec.num_points();
  table.shard = fmt::format("{}/{}", request.shard.index, request.shard.count);
  std::vector<std::int64_t> points = shard_points(table.total_points, request.shard);
  if (!plan.traces_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(plan.traces_dir, error);
    if (error) throw InputError(fmt::format("--traces {}: cannot create the folder: {}", plan.traces_dir, error.message()));
  }
  const int jobs = request.jobs > 0 ? request.jobs : tbb::info::default_concurrency();
  const SweepProgress::Style style = request.quiet             ? SweepProgress::Style::quiet
                                     : isatty(fileno(stderr)) ? SweepProgress::Style::bar
                                                              : SweepProgress::Style::lines;
  bool writer = true;  // the process that shows progress and writes the table
  std::string note;
#ifdef DTSIM_MPI
  MpiSession mpi;
  writer = mpi.rank() == 0;
  if (mpi.size() > 1) note = fmt::format(", simulated by {} MPI ranks", mpi.size() - 1);
#endif
  // The journal of finished points: read back with --resume (their points are skipped), and
  // appended by the writer as points finish.
  const std::string journal_path = sweep_journal_path(request.output, request.csv);
  if (request.resume && journal_path.empty())
    throw InputError("--resume needs --output or --csv: the finished points are kept in FILE.progress next to them");
#ifdef DTSIM_MPI
  if (request.resume && mpi.size() > 1)
    throw InputError("--resume is not supported across MPI ranks yet; resume the sweep in one process or rerun it");
#endif
  const std::string fingerprint = sweep_fingerprint(table);
  std::vector<PointResult> finished;
  if (request.resume) {
    const std::set<std::int64_t> wanted(points.begin(), points.end());
    std::set<std::int64_t> done_points;
    for (PointResult& r : read_sweep_journal(journal_path, fingerprint, table.axes.size()))
      if (wanted.count(r.point) && done_points.insert(r.point).second) finished.push_back(std::move(r));
    std::erase_if(points, [&](std::int64_t p) { return done_points.count(p) > 0; });
    if (writer && !request.quiet)
      std::cerr << fmt::format("resuming from {}: {} of {} points already done\n", journal_path, finished.size(),
                               finished.size() + points.size());
  }
  std::unique_ptr<SweepJournal> journal;
  if (writer && !journal_path.empty()) {
    journal = std::make_unique<SweepJournal>(journal_path, fingerprint,
                                             request.resume ? SweepJournal::Mode::resume : SweepJournal::Mode::fresh);
  }
  SweepProgress progress(static_cast<std::int64_t>(points.size()), std::cerr,
                         writer ? style : SweepProgress::Style::quiet);
  const auto done = [&](const PointResult& r) {
    if (journal) journal->record(r);
    progress.point_done();
  };
#ifdef DTSIM_MPI
  if (mpi.size() > 1)
    table.rows = run_points_mpi(mpi, plan, points, done);
  else
#endif
    table.rows = run_points(plan, points, jobs, done);
  if (!writer) return 0;
  progress.finish();
  table.rows.insert(table.rows.end(), std::make_move_iterator(finished.begin()), std::make_move_iterator(finished.end()));
  std::sort(table.rows.begin(), table.rows.end(),
            [](const PointResult& a, const PointResult& b) { return a.point < b.point; });
  save_sweep_table(table, request.output, request.csv);
  if (journal) journal->remove();
  report(table, request.output, request.csv, note);
  return 0;
}

int run_merge(const std::string& output, const std::string& csv, const std::vector<std::string>& parts) {
  check_outputs(output, csv, parts);
  const SweepTable table = merge_sweep_tables(parts);
  save_sweep_table(table, output, csv);
  report(table, output, csv, "");
  return 0;
}

}  // namespace dtsim

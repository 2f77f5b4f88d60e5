// merge_sweep_tables (see merge.hpp).
#include "sim/sweep/merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/base/error.hpp"

namespace dtsim {

SweepTable merge_sweep_tables(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("dtsim merge: give the part files, e.g. dtsim merge all.h5 part-*.h5");
  SweepTable out = read_sweep_table(paths.front());
  std::map<std::int64_t, std::string> owner;  // point -> the part it came from
  const auto record = [&](const PointResult& row, const std::string& path) {
    if (row.point < 0 || row.point >= out.total_points)
      throw InputError(fmt::format("dtsim merge: '{}' has point {}, outside the sweep's {} points", path, row.point,
                                   out.total_points));
    const auto [it, fresh] = owner.emplace(row.point, path);
    if (!fresh)
      throw InputError(fmt::format("dtsim merge: point {} is in both '{}' and '{}'; give each shard once",
                                   row.point, it->second, path));
  };
  for (const PointResult& row : out.rows) record(row, paths.front());
  for (std::size_t i = 1; i < paths.size(); ++i) {
    SweepTable part = read_sweep_table(paths[i]);
    const char* differs = part.scenario != out.scenario ? "scenarios"
                          : part.axes != out.axes       ? "axes"
                          : part.definition != out.definition || part.total_points != out.total_points
                              ? "axis values"
                              : nullptr;
    if (differs != nullptr)
      throw InputError(fmt::format("dtsim merge: '{}' and '{}' are parts of different sweeps (their {} differ)",
                                   paths.front(), paths[i], differs));
    for (PointResult& row : part.rows) {
      record(row, paths[i]);
      out.rows.push_back(std::move(row));
    }
  }
  std::vector<std::int64_t> missing;
  for (std::int64_t p = 0; p < out.total_points && missing.size() < 10; ++p)
    if (!owner.count(p)) missing.push_back(p);
  if (!missing.empty()) {
    const auto absent = out.total_points - static_cast<std::int64_t>(owner.size());
    throw InputError(fmt::format("dtsim merge: {} of the sweep's {} points are in no part (first: {}); give every "
                                 "shard K/N of the sweep",
                                 absent, out.total_points, fmt::join(missing, ", ")));
  }
  std::sort(out.rows.begin(), out.rows.end(),
            [](const PointResult& a, const PointResult& b) { return a.point < b.point; });
  out.shard = "1/1";
  return out;
}

}  // namespace dtsim

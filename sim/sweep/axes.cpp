// Parsing of sweep axes, the point enumeration (product or zip) and shard slicing.
#include "sim/sweep/axes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/base/error.hpp"
#include "sim/base/nearest.hpp"

namespace dtsim {
namespace {

constexpr std::int64_t kMaxAxisValues = 1'000'000;
constexpr std::int64_t kMaxPoints = std::numeric_limits<std::int32_t>::max();  // `point` is int32

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.emplace_back();
  return out;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

bool as_integer(const std::string& s, long long& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

bool as_real(const std::string& s, double& out) {
  std::size_t used = 0;
  try {
    out = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size() && std::isfinite(out);
}

std::vector<std::string> parse_range(const std::string& where, const std::string& key, const std::string& text) {
  const std::vector<std::string> parts = split(text, ':');
  const std::string self = fmt::format("{} {} = '{}'", where, key, text);
  if (parts.size() != 3)
    throw InputError(fmt::format("{}: a range is START:STOP:STEP (e.g. 1:8:1), a list V1,V2,...", self));
  long long a = 0, b = 0, s = 0;
  std::vector<std::string> out;
  const auto too_many = [&] {
    return InputError(fmt::format("{}: more than {} values", self, kMaxAxisValues));
  };
  if (as_integer(trim(parts[0]), a) && as_integer(trim(parts[1]), b) && as_integer(trim(parts[2]), s)) {
    if (s == 0) throw InputError(fmt::format("{}: STEP must not be 0", self));
    if ((s > 0 && b < a) || (s < 0 && b > a)) throw InputError(fmt::format("{}: STEP {} never goes from {} to {}", self, s, a, b));
    // In 128 bits: STOP - START and the last START + i * STEP may not fit 64 (near INT64_MAX).
    const __int128 count = (static_cast<__int128>(b) - a) / s + 1;
    if (count > kMaxAxisValues) throw too_many();
    for (__int128 i = 0; i < count; ++i) out.push_back(std::to_string(static_cast<long long>(a + i * s)));
    return out;
  }
  double x = 0, y = 0, d = 0;
  if (!as_real(trim(parts[0]), x) || !as_real(trim(parts[1]), y) || !as_real(trim(parts[2]), d))
    throw InputError(fmt::format("{}: START, STOP and STEP must be numbers", self));
  if (d == 0) throw InputError(fmt::format("{}: STEP must not be 0", self));
  const double steps = (y - x) / d;
  if (steps < -1e-9) throw InputError(fmt::format("{}: STEP {} never goes from {} to {}", self, d, x, y));
  if (steps >= kMaxAxisValues) throw too_many();
  const auto n = static_cast<std::int64_t>(std::floor(steps + 1e-9)) + 1;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(fmt::format("{:.12g}", x + static_cast<double>(i) * d));
  return out;
}

void check_key(const std::string& where, const std::string& key) {
  const auto options = scenario_options();
  if (options.find_nothrow(key, false) == nullptr)
    throw InputError(fmt::format("{} {}: unknown scenario key{}; valid axes are the scenario keys of "
                                 "'dtsim run --help' (e.g. cluster.nics_per_node)", where, key,
                                 did_you_mean(key, scenario_key_names())));
  if (key == "output.trace")
    throw InputError(fmt::format("{} {}: not an axis; keep each point's trace with --traces DIR", where, key));
}

void add_axis(std::vector<SweepAxis>& axes, SweepAxis axis, bool replace, const std::string& where) {
  auto same = std::find_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.key == axis.key; });
  if (same == axes.end()) {
    axes.push_back(std::move(axis));
  } else if (replace) {
    *same = std::move(axis);
  } else {
    throw InputError(fmt::format("{} {}: the axis is given twice", where, axis.key));
  }
}

}  // namespace

std::int64_t SweepSpec::num_points() const {
  if (axes.empty()) return 0;
  if (mode == SweepMode::zip) return static_cast<std::int64_t>(axes.front().values.size());
  std::int64_t n = 1;
  for (const SweepAxis& a : axes) n *= static_cast<std::int64_t>(a.values.size());
  return n;
}

std::vector<std::string> SweepSpec::values_at(std::int64_t index) const {
  std::vector<std::string> out(axes.size());
  for (std::size_t i = axes.size(); i-- > 0;) {
    const auto n = static_cast<std::int64_t>(axes[i].values.size());
    out[i] = axes[i].values[static_cast<std::size_t>(mode == SweepMode::zip ? index : index % n)];
    if (mode == SweepMode::product) index /= n;
  }
  return out;
}

std::string SweepSpec::axis_keys() const {
  std::string out;
  for (const SweepAxis& a : axes) out += (out.empty() ? "" : ",") + a.key;
  return out;
}

SweepAxis parse_axis(const std::string& key, const std::string& values, const std::string& where) {
  check_key(where, key);
  SweepAxis axis{key, {}};
  const std::string text = trim(values);
  if (text.empty()) throw InputError(fmt::format("{} {}: no values; give V1,V2,... or START:STOP:STEP", where, key));
  const char sep = text.find(';') != std::string::npos ? ';' : ',';
  if (sep == ',' && text.find(':') != std::string::npos && text.find(',') == std::string::npos) {
    axis.values = parse_range(where, key, text);
  } else {
    for (const std::string& item : split(text, sep)) {
      const std::string v = trim(item);
      if (v.empty())
        throw InputError(fmt::format("{} {} = '{}': an empty value in the list", where, key, values));
      if (std::find(axis.values.begin(), axis.values.end(), v) != axis.values.end())
        throw InputError(fmt::format("{} {} = '{}': the value '{}' is given twice", where, key, values, v));
      axis.values.push_back(v);
    }
  }
  if (static_cast<std::int64_t>(axis.values.size()) > kMaxAxisValues)
    throw InputError(fmt::format("{} {}: more than {} values", where, key, kMaxAxisValues));
  return axis;
}

SweepSpec make_sweep_spec(const std::string& path, const std::vector<SweepLine>& file_lines,
                          const std::vector<std::string>& cli_axes, bool cli_zip,
                          const std::vector<std::string>& fixed_keys) {
  SweepSpec spec;
  bool zip = cli_zip;
  const std::string file_where = fmt::format("{}: [sweep]", path);
  for (const SweepLine& line : file_lines) {
    if (line.key == "zip") {
      if (line.value != "true" && line.value != "false")
        throw InputError(fmt::format("{} zip = '{}': valid values are true, false", file_where, line.value));
      zip = zip || line.value == "true";
      continue;
    }
    add_axis(spec.axes, parse_axis(line.key, line.value, file_where), false, file_where);
  }
  std::vector<std::string> given;
  for (const std::string& option : cli_axes) {
    const auto eq = option.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("--sweep '{}': give KEY=V1,V2,... or KEY=START:STOP:STEP", option));
    const std::string key = trim(option.substr(0, eq));
    if (std::find(given.begin(), given.end(), key) != given.end())
      throw InputError(fmt::format("--sweep {}: the axis is given twice", key));
    given.push_back(key);
    add_axis(spec.axes, parse_axis(key, option.substr(eq + 1), "--sweep"), true, "--sweep");
  }
  if (spec.axes.empty())
    throw InputError(fmt::format("{}: no sweep axes; give --sweep KEY=V1,V2,... or a [sweep] section",
                                 path.empty() ? "dtsim sweep" : path));
  for (const SweepAxis& a : spec.axes)
    if (std::find(fixed_keys.begin(), fixed_keys.end(), a.key) != fixed_keys.end())
      throw InputError(fmt::format("{} is both a sweep axis and fixed by --{}; keep one of them", a.key, a.key));
  if (zip) {
    spec.mode = SweepMode::zip;
    for (const SweepAxis& a : spec.axes)
      if (a.values.size() != spec.axes.front().values.size())
        throw InputError(fmt::format("--zip pairs axes of equal length: {} has {} values, {} has {}",
                                     spec.axes.front().key, spec.axes.front().values.size(), a.key, a.values.size()));
  } else {
    std::int64_t n = 1;
    for (const SweepAxis& a : spec.axes) {
      n *= static_cast<std::int64_t>(a.values.size());
      if (n > kMaxPoints)
        throw InputError(fmt::format("the sweep has more than {} points (axes {})", kMaxPoints, spec.axis_keys()));
    }
  }
  return spec;
}

SweepShard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  long long k = 0, n = 0;
  if (slash == std::string::npos || !as_integer(text.substr(0, slash), k) || !as_integer(text.substr(slash + 1), n))
    throw InputError(fmt::format("--shard '{}': give K/N, e.g. 2/4 for the second of four slices", text));
  if (n < 1 || n > kMaxPoints) throw InputError(fmt::format("--shard {}: N must be >= 1", text));
  if (k < 1 || k > n) throw InputError(fmt::format("--shard {}: K must be between 1 and {}", text, n));
  return SweepShard{static_cast<int>(k), static_cast<int>(n)};
}

std::vector<std::int64_t> shard_points(std::int64_t total, SweepShard shard) {
  std::vector<std::int64_t> out;
  for (std::int64_t p = shard.index - 1; p < total; p += shard.count) out.push_back(p);
  return out;
}

}  // namespace dtsim

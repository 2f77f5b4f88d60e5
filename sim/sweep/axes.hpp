// Sweep axes: what `dtsim sweep` varies. An axis is a scenario key with a list of values
// ("KEY=V1,V2,...", or ';' between values that contain commas) or an inclusive numeric range
// ("KEY=START:STOP:STEP", integers when all three are, else reals). Axes come from the scenario
// file's [sweep] section and from --sweep options (which replace a file axis of the same key).
// Points are the cartesian product of the axes (the last axis varies fastest), or with zip the
// i-th values of axes of equal length. A shard K/N is the points p with p mod N = K-1, so N
// shards cover every point exactly once whatever the machines. Bad axes throw InputError.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace dtsim {

struct SweepAxis {
  std::string key;                  // a scenario key, e.g. cluster.nics_per_node
  std::vector<std::string> values;  // as text, in order
};

enum class SweepMode { product, zip };

struct SweepSpec {
  std::vector<SweepAxis> axes;
  SweepMode mode = SweepMode::product;

  std::int64_t num_points() const;
  // The value of every axis at point `index`, 0 <= index < num_points().
  std::vector<std::string> values_at(std::int64_t index) const;
  std::string axis_keys() const;    // comma-separated, in axis order
};

// Parses the values of one axis; `where` names the origin in messages (e.g. "--sweep").
SweepAxis parse_axis(const std::string& key, const std::string& values, const std::string& where);

// The sweep of scenario file `path`: its [sweep] lines (axes and `zip = true|false`), then
// the --sweep KEY=VALUES options in `cli_axes`; `cli_zip` is --zip. `fixed_keys` are the keys
// the command line fixes (--section.key=value); none of them may be an axis.
SweepSpec make_sweep_spec(const std::string& path, const std::vector<SweepLine>& file_lines,
                          const std::vector<std::string>& cli_axes, bool cli_zip,
                          const std::vector<std::string>& fixed_keys);

struct SweepShard {
  int index = 1;  // K, 1-based
  int count = 1;  // N
};

SweepShard parse_shard(const std::string& text);  // "K/N" with 1 <= K <= N
// The points of `shard` out of `total`, in increasing order.
std::vector<std::int64_t> shard_points(std::int64_t total, SweepShard shard);

}  // namespace dtsim

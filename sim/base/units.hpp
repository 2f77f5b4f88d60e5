// Units used across dtsim: integer nanoseconds for time, bytes and bytes/s as doubles.
#pragma once
#include <cmath>
#include <cstdint>

namespace dtsim {

using TimeNs = std::int64_t;  // simulated time, nanoseconds

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;       // bandwidths are GB/s = 1e9 B/s (nccl-tests convention)
constexpr double kTFLOP = 1e12;

inline TimeNs seconds_to_ns(double seconds) { return static_cast<TimeNs>(std::llround(seconds * 1e9)); }
inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace dtsim

// SweepProgress: the sweep's progress on stderr. On a terminal, one bar line redrawn in place
// (points done/total, points per second, ETA) at most ten times a second; otherwise a plain line
// at every tenth of the points or every 5 s, whichever comes first. Always a final line.
//
// Thread safety: point_done() may be called from any thread; the rest from the owning thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>

namespace dtsim {

class SweepProgress {
 public:
  enum class Style { bar, lines, quiet };
  SweepProgress(std::int64_t total, std::ostream& out, Style style);
  void point_done();
  void finish();  // the final line: points, wall time, rate

  // One progress text: "42/100 points  1.30 points/s  ETA 0:45", with a bar in front if `bar`.
  static std::string line(std::int64_t done, std::int64_t total, double elapsed_s, bool bar);

 private:
  using Clock = std::chrono::steady_clock;
  double seconds_since(Clock::time_point t) const;

  std::int64_t total_;
  std::ostream& out_;
  Style style_;
  std::mutex mutex_;
  std::int64_t done_ = 0;
  Clock::time_point start_ = Clock::now(), last_ = start_;
  std::int64_t last_tenth_ = 0;
};

}  // namespace dtsim

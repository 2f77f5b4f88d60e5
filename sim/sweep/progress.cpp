// SweepProgress (see progress.hpp).
#include "sim/sweep/progress.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtsim {

SweepProgress::SweepProgress(std::int64_t total, std::ostream& out, Style style)
    : total_(total), out_(out), style_(style) {}

double SweepProgress::seconds_since(Clock::time_point t) const {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string SweepProgress::line(std::int64_t done, std::int64_t total, double elapsed_s, bool bar) {
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  std::string eta = "--:--";
  if (rate > 0) {
    const auto left = static_cast<long long>(std::llround(static_cast<double>(total - done) / rate));
    eta = left >= 3600 ? fmt::format("{}:{:02}:{:02}", left / 3600, left / 60 % 60, left % 60)
                       : fmt::format("{}:{:02}", left / 60, left % 60);
  }
  std::string text = fmt::format("{}/{} points  {:.2f} points/s  ETA {}", done, total, rate, eta);
  if (!bar) return text;
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
  return fmt::format("[{}{}] {}", std::string(filled, '#'), std::string(kWidth - filled, '.'), text);
}

void SweepProgress::point_done() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  if (style_ == Style::quiet) return;
  const double since_last = seconds_since(last_);
  if (style_ == Style::bar) {
    if (since_last < 0.1 && done_ < total_) return;
    out_ << "\r\033[K" << line(done_, total_, seconds_since(start_), true) << std::flush;
  } else {
    const std::int64_t tenth = total_ > 0 ? done_ * 10 / total_ : 10;
    if ((tenth == last_tenth_ && since_last < 5) || done_ == total_) return;  // finish() prints the last
    last_tenth_ = tenth;
    out_ << "dtsim sweep: " << line(done_, total_, seconds_since(start_), false) << "\n" << std::flush;
  }
  last_ = Clock::now();
}

void SweepProgress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (style_ == Style::quiet) return;
  const double elapsed = seconds_since(start_);
  if (style_ == Style::bar) out_ << "\r\033[K";
  out_ << fmt::format("dtsim sweep: {}/{} points in {:.1f} s ({:.2f} points/s)\n", done_, total_, elapsed,
                      elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0)
       << std::flush;
}

}  // namespace dtsim

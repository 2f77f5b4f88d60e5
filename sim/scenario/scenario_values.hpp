// Reading typed scenario values (internal to sim/scenario/scenario.cpp): integers, reals,
// booleans, parallel sizes or auto, each refused with the source file, key and what is valid.
#pragma once
#include <fmt/format.h>

#include <boost/program_options/variables_map.hpp>
#include <charconv>
#include <climits>
#include <cmath>
#include <string>

#include "sim/base/error.hpp"
#include "sim/base/limits.hpp"
#include "sim/scenario/layout_choice.hpp"

namespace dtsim {

class Values {
 public:
  Values(const boost::program_options::variables_map& vm, std::string source) : vm_(vm), source_(std::move(source)) {}

  std::string text(const char* key) const { return vm_[key].as<std::string>(); }
  bool given(const char* key) const { return !text(key).empty(); }
  // Whether the file or the command line set the key (not its default).
  bool set(const char* key) const { return !vm_[key].defaulted(); }

  int integer(const char* key, int min, long long max = INT_MAX) const {
    const std::string v = text(key);
    long long out = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    const bool whole = ptr == v.data() + v.size();
    if (ec == std::errc::result_out_of_range && whole && v.front() == '-')
      throw InputError(fmt::format("{}: {} = {}: must be >= {}", source_, key, v, min));
    if ((ec == std::errc::result_out_of_range && whole) || (ec == std::errc() && whole && out > max))
      throw InputError(fmt::format("{}: {} = {}: must be <= {}", source_, key, v, max));
    if (ec != std::errc() || ptr != v.data() + v.size())
      throw InputError(fmt::format("{}: {} = '{}': not an integer", source_, key, v));
    if (out < min) throw InputError(fmt::format("{}: {} = {}: must be >= {}", source_, key, out, min));
    return static_cast<int>(out);
  }
  double real(const char* key, double min, double max = 1e300) const {
    const std::string v = text(key);
    std::size_t used = 0;
    double out = 0;
    try {
      out = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size())
      throw InputError(fmt::format("{}: {} = '{}': not a number", source_, key, v));
    if (!std::isfinite(out))
      throw InputError(fmt::format("{}: {} = {}: must be a finite number between {} and {}", source_, key, v, min, max));
    if (out < min) throw InputError(fmt::format("{}: {} = {}: must be >= {}", source_, key, v, min));
    if (out > max) throw InputError(fmt::format("{}: {} = {}: must be <= {}", source_, key, v, max));
    return out;
  }
  // A parallel size, or kAutoSize for "auto" (chosen by choose_layout).
  int size_or_auto(const char* key) const { return text(key) == "auto" ? kAutoSize : integer(key, 1, limits::kMaxGpus); }
  bool boolean(const char* key) const {
    const std::string v = text(key);
    if (v == "true" || v == "yes" || v == "1") return true;
    if (v == "false" || v == "no" || v == "0") return false;
    throw InputError(fmt::format("{}: {} = '{}': valid values are true, false", source_, key, v));
  }
  // Runs a parser that throws InputError, prefixing its message with the source file.
  template <class F>
  auto parsed(F&& f) const {
    try {
      return f();
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", source_, e.what()));
    }
  }
  const std::string& source() const { return source_; }

 private:
  const boost::program_options::variables_map& vm_;
  std::string source_;
};

}  // namespace dtsim

// SweepJournal (see journal.hpp).
#include "sim/sweep/journal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "sim/base/error.hpp"
#include "sim/trace/hdf5_sink.hpp"

namespace dtsim {
namespace {

constexpr const char* kMagic = "dtsim-sweep-progress 1";

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\t') out.append("\\t");
    else if (c == '\n') out.append("\\n");
    else if (c == '\\') out.append("\\\\");
    else out.push_back(c);
  }
  return out;
}

// Splits a line (without its newline) at tabs, undoing the escapes; false on a bad escape.
bool split(const std::string& line, std::vector<std::string>& fields) {
  fields.assign(1, "");
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\t') {
      fields.emplace_back();
    } else if (line[i] == '\\') {
      if (++i == line.size()) return false;
      const char c = line[i];
      if (c != 't' && c != 'n' && c != '\\') return false;
      fields.back() += c == 't' ? '\t' : c == 'n' ? '\n' : '\\';
    } else {
      fields.back() += line[i];
    }
  }
  return true;
}

template <class T>
bool parse_number(const std::string& text, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (text != "0" && text != "1") return false;
    value = text == "1";
    return true;
  } else {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
  }
}

// Writes all of `text` and flushes it to the disk; false with errno set on failure.
bool write_synced(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) == 0;
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::string sweep_fingerprint(const SweepTable& t) {
  std::string axes;
  for (const std::string& a : t.axes) axes += a + "\n";
  const char sep = '\x1f';  // unit separator: in none of the parts
  const std::string all = std::string(DTSIM_VERSION) + sep + t.scenario + sep + t.definition + sep + axes + sep +
                          std::to_string(t.total_points) + sep + t.shard;
  return fmt::format("{:016x}", fnv1a(all));
}

std::string SweepJournal::format_line(const PointResult& r) {
  std::string line = std::to_string(r.point);
  for (const std::string& v : r.values) line.append("\t").append(escape(v));
  line.append("\t").append(point_status_name(r.status)).append("\t").append(escape(r.message));
  trace_h5::visit_summary(r.summary, [&](const char*, const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) line += value ? "\t1" : "\t0";
    else line += fmt::format("\t{}", value);
  });
  return line + "\n";
}

PointResult SweepJournal::parse_line(const std::string& line, std::size_t num_axes, const std::string& where) {
  std::vector<std::string> f;
  PointResult r;
  std::size_t metrics = 0;
  trace_h5::visit_summary(r.summary, [&](const char*, const auto&) { ++metrics; });
  bool ok = split(line, f) && f.size() == 3 + num_axes + metrics && parse_number(f[0], r.point) && r.point >= 0;
  if (ok) {
    r.values.assign(f.begin() + 1, f.begin() + 1 + static_cast<std::ptrdiff_t>(num_axes));
    const std::string& status = f[1 + num_axes];
    ok = status == "ok" || status == "oom" || status == "invalid";
    r.status = status == "ok" ? PointStatus::ok : status == "oom" ? PointStatus::oom : PointStatus::invalid;
    r.message = f[2 + num_axes];
    std::size_t i = 3 + num_axes;
    trace_h5::visit_summary(r.summary, [&](const char*, auto& value) { ok = ok && parse_number(f[i++], value); });
  }
  if (!ok)
    throw InputError(fmt::format("{}: not a point of this sweep's journal; delete the file to start the sweep "
                                 "afresh", where));
  return r;
}

std::vector<PointResult> read_sweep_journal(const std::string& path, const std::string& fingerprint,
                                            std::size_t num_axes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t first_end = text.find('\n');
  if (first_end == std::string::npos) return {};  // killed before the header was complete
  if (text.substr(0, first_end) != fmt::format("{}\t{}", kMagic, fingerprint))
    throw InputError(fmt::format("--resume: '{}' is not the progress of this sweep (another scenario, axes, shard or "
                                 "dtsim version); rerun the same command, or delete it to start afresh", path));
  std::vector<PointResult> out;
  std::size_t line_no = 1;
  for (std::size_t at = first_end + 1; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // the line being written when the sweep stopped
    ++line_no;
    out.push_back(SweepJournal::parse_line(text.substr(at, end - at), num_axes, fmt::format("'{}' line {}", path, line_no)));
    at = end + 1;
  }
  return out;
}

SweepJournal::SweepJournal(std::string path, const std::string& fingerprint, Mode mode) : path_(std::move(path)) {
  const bool append = mode == Mode::resume;
  const bool had_header = append && [&] {
    std::ifstream in(path_, std::ios::binary);
    std::string first;
    return static_cast<bool>(in) && std::getline(in, first) && !in.eof();
  }();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (had_header ? O_APPEND : O_TRUNC), 0644);
  if (fd_ < 0)
    throw InputError(fmt::format("sweep progress file '{}': cannot create it: {}", path_, std::strerror(errno)));
  if (!had_header) {
    const std::string header = fmt::format("{}\t{}\n", kMagic, fingerprint);
    if (!write_synced(fd_, header)) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      ::unlink(path_.c_str());
      throw InputError(fmt::format("sweep progress file '{}': writing failed: {}", path_, why));
    }
  } else {
    // Drop a partial last line so that the next point starts on a line of its own.
    std::ifstream in(path_, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!text.empty() && text.back() != '\n' && ::ftruncate(fd_, static_cast<off_t>(text.rfind('\n') + 1)) != 0)
      throw InputError(fmt::format("sweep progress file '{}': cannot truncate its partial last line: {}", path_,
                                   std::strerror(errno)));
  }
}

SweepJournal::~SweepJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void SweepJournal::record(const PointResult& r) {
  const std::string line = format_line(r);
  std::lock_guard lock(mutex_);
  if (fd_ < 0) return;
  if (!write_synced(fd_, line))
    throw InputError(fmt::format("sweep progress file '{}': writing point {} failed: {}", path_, r.point,
                                 std::strerror(errno)));
}

void SweepJournal::remove() {
  std::lock_guard lock(mutex_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

}  // namespace dtsim

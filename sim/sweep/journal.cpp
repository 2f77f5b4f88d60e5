// SweepJournal (see journal.hpp).
#include "sim/sweep/journal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "sim/base/error.hpp"
#include "sim/base/safe_write.hpp"
#include "sim/trace/hdf5_sink.hpp"

namespace dtsim {
namespace {

constexpr const char* kMagic = "dtsim-sweep-progress 2";

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

// True when `path` is a regular file or nothing; throws InputError when it is anything else (a
// folder, a link, a FIFO): the journal is only ever a file dtsim wrote.
bool regular_or_absent(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (!S_ISREG(st.st_mode))
    throw InputError(fmt::format("sweep progress file '{}': not a regular file ({}); move it away to run the sweep",
                                 path, S_ISDIR(st.st_mode) ? "a folder" : S_ISLNK(st.st_mode) ? "a symbolic link" : "special"));
  return true;
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
  return fmt::format("{}\t{:016x}\n", line, fnv1a(line));
}

PointResult SweepJournal::parse_line(const std::string& line, std::size_t num_axes, const std::string& where) {
  // The last field is the checksum of the rest: an edited or damaged line is refused, not read.
  const std::size_t tab = line.rfind('\t');
  if (tab == std::string::npos || line.substr(tab + 1) != fmt::format("{:016x}", fnv1a(line.substr(0, tab))))
    throw InputError(fmt::format("{}: the line was edited or damaged (its checksum does not match); delete the file "
                                 "to start the sweep afresh", where));
  const std::string content = line.substr(0, tab);
  std::vector<std::string> f;
  PointResult r;
  std::size_t metrics = 0;
  trace_h5::visit_summary(r.summary, [&](const char*, const auto&) { ++metrics; });
  bool ok = split(content, f) && f.size() == 3 + num_axes + metrics && parse_number(f[0], r.point) && r.point >= 0;
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
  if (!regular_or_absent(path)) return {};
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
  const bool had_header = mode == Mode::resume && regular_or_absent(path_) && [&] {
    std::ifstream in(path_, std::ios::binary);
    std::string first;
    return static_cast<bool>(in) && std::getline(in, first) && !in.eof();
  }();
  const std::string label = fmt::format("sweep progress file '{}'", path_);
  if (!had_header) {
    // A fresh journal: its header written to a temporary that replaces whatever was there.
    TempFile temp(path_, label, [&](const std::string& name) { return (fd_ = create_exclusive(name, label)) >= 0; });
    if (!write_synced(fd_, fmt::format("{}\t{}\n", kMagic, fingerprint))) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      throw InputError(fmt::format("{}: writing failed: {}", label, why));
    }
    try {
      temp.commit();
    } catch (...) {
      ::close(fd_);
      fd_ = -1;
      throw;
    }
    return;
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot open it: {}", label, std::strerror(errno)));
  // Drop a partial last line so that the next point starts on a line of its own.
  std::ifstream in(path_, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() != '\n' && ::ftruncate(fd_, static_cast<off_t>(text.rfind('\n') + 1)) != 0)
    throw InputError(fmt::format("{}: cannot truncate its partial last line: {}", label, std::strerror(errno)));
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

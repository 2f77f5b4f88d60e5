// TempFile, create_exclusive and write_file_safely (see safe_write.hpp).
#include "sim/base/safe_write.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <random>
#include <streambuf>

#include "sim/base/error.hpp"

namespace dtsim {
namespace {

constexpr int kUniqueTries = 64;

std::string folder_of(const std::string& target) {
  const std::size_t slash = target.rfind('/');
  return slash == std::string::npos ? std::string() : target.substr(0, slash + 1);
}

std::string unique_name(const std::string& folder) {
  static thread_local std::mt19937_64 random(std::random_device{}());
  return fmt::format("{}.dtsim-{:012x}.tmp", folder, random() & 0xffffffffffffull);
}

// A stream buffer writing to a file descriptor, remembering the first failed write's errno.
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) sputc(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    for (char* at = pbase(); at < pptr();) {
      const ssize_t n = ::write(fd_, at, static_cast<std::size_t>(pptr() - at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n == 0 ? EIO : errno;
        setp(buffer_, buffer_ + sizeof buffer_);
        return false;
      }
      at += n;
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    return error_ == 0;
  }
  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

}  // namespace

int create_exclusive(const std::string& path, const std::string& label) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd >= 0) return fd;
  if (errno == EEXIST) return -1;
  throw InputError(fmt::format("{}: cannot create '{}': {}", label, path, std::strerror(errno)));
}

void check_output_path(const std::string& target, const std::string& label, const std::vector<std::string>& inputs) {
  if (target.empty()) throw InputError(fmt::format("{}: the output path is empty; name a file", label));
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    throw InputError(fmt::format("{}: '{}' exists and is not a regular file ({}); name a file to write",
                                 label, target, S_ISDIR(st.st_mode) ? "a folder" : "a FIFO, device or socket"));
  struct stat out {};
  if (::stat(target.c_str(), &out) != 0) return;
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw InputError(fmt::format("{}: '{}' is also an input of this command ('{}'); writing it would destroy it; "
                                   "name another output", label, target, input));
  }
}

TempFile::TempFile(std::string target, std::string label, const Create& create)
    : target_(std::move(target)), label_(std::move(label)) {
  check_output_path(target_, label_);
  const std::string folder = folder_of(target_);
  if (target_.size() - folder.size() + 4 <= NAME_MAX) {
    const std::string plain = target_ + ".tmp";
    struct stat st {};
    // A stale temporary of a killed run, or a link planted there: unlinked, never followed.
    if (create(plain) || (::lstat(plain.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && ::unlink(plain.c_str()) == 0 &&
                          create(plain))) {
      path_ = plain;
      return;
    }
  }
  for (int i = 0; i < kUniqueTries; ++i) {
    const std::string name = unique_name(folder);
    if (create(name)) {
      path_ = name;
      return;
    }
  }
  throw InputError(fmt::format("{}: cannot create a temporary file in '{}': every name tried exists", label_,
                               folder.empty() ? "." : folder));
}

TempFile::~TempFile() {
  if (!committed_) std::remove(path_.c_str());
}

void TempFile::commit() {
  if (std::rename(path_.c_str(), target_.c_str()) != 0)
    throw InputError(fmt::format("{}: renaming '{}' to '{}' failed: {}", label_, path_, target_, std::strerror(errno)));
  committed_ = true;
}

TempTextFile::TempTextFile(const std::string& target, const std::string& label)
    : label_(label),
      temp_(target, label, [this](const std::string& name) { return (fd_ = create_exclusive(name, label_)) >= 0; }),
      buffer_(std::make_unique<FdBuffer>(fd_)),
      stream_(buffer_.get()) {}

TempTextFile::~TempTextFile() {
  if (fd_ >= 0) ::close(fd_);
}

void TempTextFile::close() {
  if (fd_ < 0) return;
  stream_.flush();
  int error = static_cast<FdBuffer&>(*buffer_).error();
  if (::close(fd_) != 0 && error == 0) error = errno;
  fd_ = -1;
  if (error != 0) throw InputError(fmt::format("{}: write failed: {}", label_, std::strerror(error)));
}

void TempTextFile::commit() {
  close();
  temp_.commit();
}

void write_file_safely(const std::string& target, const std::string& label,
                       const std::function<void(std::ostream&)>& write) {
  TempTextFile file(target, label);
  write(file.stream());
  file.commit();
}

}  // namespace dtsim

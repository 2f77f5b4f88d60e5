// Writing an output file safely: the bytes go to a temporary file created exclusively in the
// target's folder (O_CREAT | O_EXCL: never through an existing file or link planted there) and
// renamed over the target once complete, so the target is either the old file or the whole new
// one, and a killed process leaves at most the temporary. The temporary is TARGET.tmp when that
// name fits (a stale one from a killed run, or a link, is unlinked first, never followed); when it
// does not (a name near the 255-byte limit, or a folder in the way) it is .dtsim-RANDOM.tmp.
// Every dtsim writer (traces, sweep tables and CSV, merge, advise, Chrome JSON, DOT, the sweep
// journal) goes through TempFile.
#pragma once
#include <functional>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace dtsim {

class TempFile {
 public:
  // `create(name)` must create file `name` exclusively and return false when something already
  // exists at `name`; on any other failure it throws InputError. `label` starts every message
  // ("trace file 'r.h5'", "--dot x.dot").
  using Create = std::function<bool(const std::string& name)>;
  TempFile(std::string target, std::string label, const Create& create);
  ~TempFile();  // removes the temporary unless committed
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& target() const { return target_; }
  // Renames the temporary over the target; throws InputError naming both on failure.
  void commit();

 private:
  std::string target_, label_, path_;
  bool committed_ = false;
};

// Creates `path` for writing with O_CREAT | O_EXCL | O_NOFOLLOW (mode 0666 less the umask) and
// returns its descriptor, or -1 when something exists at `path`; throws InputError (`label`,
// the path and the system's reason) on any other failure.
int create_exclusive(const std::string& path, const std::string& label);

// A text output through a TempFile: stream() writes to the temporary; close() flushes and closes
// it, throwing InputError "LABEL: write failed: REASON" (a full disk); commit() closes and renames.
// Destroyed uncommitted, it leaves no file.
class TempTextFile {
 public:
  TempTextFile(const std::string& target, const std::string& label);
  ~TempTextFile();
  std::ostream& stream() { return stream_; }
  void close();
  void commit();

 private:
  std::string label_;
  int fd_ = -1;
  TempFile temp_;
  std::unique_ptr<std::streambuf> buffer_;
  std::ostream stream_;
};

// Refuses (InputError, starting with `label`) an output path before any work: an empty one, an
// existing folder, FIFO, device or socket (renaming a file over it would replace it), or the same
// file as one of the command's `inputs`. A path that does not exist yet, or an existing regular
// file (or a link, which the rename replaces), passes. TempFile checks the first two again.
void check_output_path(const std::string& target, const std::string& label, const std::vector<std::string>& inputs = {});

// Writes `target` with write(stream) through a TempTextFile.
void write_file_safely(const std::string& target, const std::string& label,
                       const std::function<void(std::ostream&)>& write);

}  // namespace dtsim

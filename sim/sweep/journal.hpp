// The progress journal of a sweep (OUT.progress next to the table): one line per finished point,
// appended and fsync'd as the point finishes, so that a sweep interrupted by Ctrl-C, a kill or a
// crash can be rerun with --resume and skip the points already done. The first line names the
// format and a fingerprint of the sweep (dtsim version, base scenario, axes, shard), so a journal
// is only ever resumed by the same sweep. A point line holds the point, its axis values, status,
// message and every metric (floats in shortest round-trip form), tab-separated, with tab, newline and backslash
// escaped, and last the FNV-1a checksum of the rest, so an edited or damaged line is refused;
// a last line without its newline (the process died while writing it) is ignored. The
// final table is written as usual and the journal removed once the table is complete. A fresh
// journal is created exclusively as a temporary and renamed into place; a journal to resume must
// be a regular file (a folder or a link there is refused), appended without following links.
//
// Thread safety: record() may be called from any thread; the rest from the owning thread.
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "sim/sweep/table.hpp"

namespace dtsim {

// The fingerprint of the sweep that `table` (without rows) describes.
std::string sweep_fingerprint(const SweepTable& table);

// The finished points of journal `path`, written by the sweep with `fingerprint`, in file order.
// Throws InputError naming the file when it is of another sweep or a line is malformed.
std::vector<PointResult> read_sweep_journal(const std::string& path, const std::string& fingerprint,
                                            std::size_t num_axes);

class SweepJournal {
 public:
  // Creates `path` afresh (fresh) or appends to it (resume); throws InputError when it cannot.
  enum class Mode { fresh, resume };
  SweepJournal(std::string path, const std::string& fingerprint, Mode mode);
  ~SweepJournal();
  SweepJournal(const SweepJournal&) = delete;
  SweepJournal& operator=(const SweepJournal&) = delete;

  void record(const PointResult& r);  // appends the point's line and fsyncs
  void remove();                      // the table is complete: closes and deletes the journal

  // One point's line (with its newline) and back; parse throws InputError naming `where`.
  static std::string format_line(const PointResult& r);
  static PointResult parse_line(const std::string& line, std::size_t num_axes, const std::string& where);

 private:
  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace dtsim

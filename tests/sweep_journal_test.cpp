// The sweep's progress journal (sim/sweep_journal): a point's line round-trips exactly (escaped
// tabs, newlines and backslashes in values and messages, NaN metrics bit for bit), a partial last
// line is ignored and dropped on resume, and a malformed line names the file and line.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sim/base/error.hpp"
#include "sim/sweep/journal.hpp"

namespace fs = std::filesystem;
using namespace dtsim;

namespace {

PointResult sample(std::int64_t point) {
  PointResult r;
  r.point = point;
  r.values = {"A100", "a\tb\nc\\d"};
  r.status = PointStatus::invalid;
  r.message = "line one\nline\ttwo \\ end";
  r.summary = invalid_summary();
  r.summary.step_time_s = 0.1 + 0.2;  // not exactly representable in short decimal
  r.summary.events = 1234567890123;
  r.summary.oom = true;
  return r;
}

void check_same(const PointResult& a, const PointResult& b) {
  CHECK(a.point == b.point);
  CHECK(a.values == b.values);
  CHECK(a.status == b.status);
  CHECK(a.message == b.message);
  CHECK(SweepJournal::format_line(a) == SweepJournal::format_line(b));
  CHECK(std::memcmp(&a.summary.step_time_s, &b.summary.step_time_s, sizeof(double)) == 0);
  CHECK(std::isnan(b.summary.mfu));
  CHECK(b.summary.events == 1234567890123);
  CHECK(b.summary.oom);
}

}  // namespace

TEST_CASE("a journal line round-trips a point exactly", "[sweep]") {
  const PointResult r = sample(7);
  const std::string line = SweepJournal::format_line(r);
  REQUIRE(line.back() == '\n');
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  check_same(r, SweepJournal::parse_line(line.substr(0, line.size() - 1), 2, "j"));
  CHECK_THROWS_WITH(SweepJournal::parse_line("7\tA100", 2, "'x.progress' line 3"), Catch::Contains("'x.progress' line 3"));
  // One metric changed by hand: the checksum no longer matches.
  std::string edited = line.substr(0, line.size() - 1);
  const std::size_t status = edited.find("\tinvalid\t");
  REQUIRE(status != std::string::npos);
  edited.replace(status, 9, "\tok\t");
  CHECK_THROWS_WITH(SweepJournal::parse_line(edited, 2, "'x.progress' line 2"),
                    Catch::Contains("'x.progress' line 2: the line was edited or damaged"));
}

TEST_CASE("a journal keeps finished points and drops a partial last line", "[sweep]") {
  const std::string path = (fs::temp_directory_path() / "dtsim_journal_test.progress").string();
  {
    SweepJournal j(path, "f00d", SweepJournal::Mode::fresh);
    j.record(sample(0));
    j.record(sample(3));
  }
  std::ofstream(path, std::ios::app) << "5\tA1";  // the process died while writing point 5
  std::vector<PointResult> read = read_sweep_journal(path, "f00d", 2);
  REQUIRE(read.size() == 2);
  check_same(sample(3), read[1]);
  CHECK_THROWS_WITH(read_sweep_journal(path, "beef", 2), Catch::Contains("not the progress of this sweep"));
  {
    SweepJournal j(path, "f00d", SweepJournal::Mode::resume);
    j.record(sample(5));
  }
  read = read_sweep_journal(path, "f00d", 2);
  REQUIRE(read.size() == 3);
  CHECK(read[2].point == 5);
  SweepJournal(path, "f00d", SweepJournal::Mode::resume).remove();
  CHECK_FALSE(fs::exists(path));
}

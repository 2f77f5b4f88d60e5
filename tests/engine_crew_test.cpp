// The engine's window crew (sim/engine/crew.hpp): every window runs each task exactly once and
// returns the least value its tasks returned, also with more threads than the machine lends
// workers (the leader claims the tasks of helpers that never start), and an exception thrown by a task reaches the caller without leaving a
// helper waiting.
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/engine/crew.hpp"

using namespace dtsim;

namespace {

struct Counts {
  std::vector<int> runs;  // per task: the windows it ran in
  int window = 0;         // set by the leader before each window
  int throw_at = -1;      // the window in which task 1 throws, -1: never
};

// Returns a value whose least is the window's one task chosen by the window number.
std::int64_t count(void* context, int task) {
  Counts& c = *static_cast<Counts*>(context);
  if (task == 1 && c.window == c.throw_at) throw std::runtime_error("task 1 failed");
  ++c.runs[task];
  const int tasks = static_cast<int>(c.runs.size());
  return task == c.window % tasks ? c.window : 1000000 + task;
}

}  // namespace

TEST_CASE("the crew runs every task once per window, parallel or not", "[threads][engine]") {
  // 8 threads on a machine that may lend fewer workers: the leader claims what is left. With
  // more tasks than threads, threads done with their own take the others'.
  for (int threads : {1, 2, 8})
    for (int per_thread : {1, 4}) {
      const int tasks = threads * per_thread + (per_thread > 1 ? 1 : 0);  // parts of unequal size too
      CAPTURE(threads, tasks);
      tbb::task_arena arena(threads);
      WindowCrew crew(threads, tasks);
      Counts c;
      c.runs.assign(tasks, 0);
      const int windows = 2000;
      crew.run(arena, count, &c, [&] {
        for (c.window = 0; c.window < windows; ++c.window) {
          // every third window on the leader alone
          REQUIRE(crew.run_window(c.window % 3 != 0) == c.window);
          for (int k = 0; k < tasks; ++k) REQUIRE(c.runs[k] == c.window + 1);
        }
      });
      for (int k = 0; k < tasks; ++k) CHECK(c.runs[k] == windows);
    }
}

TEST_CASE("a crew needs a task per thread", "[threads][engine]") {
  CHECK_THROWS_AS(WindowCrew(4, 3), std::invalid_argument);
  CHECK_THROWS_AS(WindowCrew(0, 3), std::invalid_argument);
  CHECK_NOTHROW(WindowCrew(3, 3));
}

TEST_CASE("a task's exception reaches the crew's caller", "[threads][engine]") {
  tbb::task_arena arena(2);
  WindowCrew crew(2, 2);
  Counts c;
  c.runs.assign(2, 0);
  c.throw_at = 700;
  int reached = -1;
  CHECK_THROWS_WITH(crew.run(arena, count, &c,
                             [&] {
                               for (c.window = 0; c.window < 1000; ++c.window) {
                                 crew.run_window(true);
                                 reached = c.window;
                               }
                             }),
                    "task 1 failed");
  CHECK(reached == 699);
  CHECK(c.runs[0] == 701);  // task 0 ran in the failing window too
  CHECK(c.runs[1] == 700);
}

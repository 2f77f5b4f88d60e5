// The threads that run the engine's windows (internal to sim/engine/engine.cpp): the calling thread
// leads (it runs the sequential merge and hands out each window), and threads - 1 helpers, TBB
// tasks of the engine's arena started once per step, wait between windows by spinning instead
// of being forked and joined per window. Each window has a task per shard of ranks and node
// domains; every thread owns an equal contiguous part of the shards and runs those first, so a
// rank's state mostly stays in one core's cache for the whole step; a thread done with its own
// takes the others' not yet claimed, from the end of their parts. The taking matters where the
// cores are not equally fast: on the development VM one of the two vCPUs ran single-threaded
// work 1.5x slower than the other (2.42-2.57 against 1.61-1.62 s, pinned with taskset), and
// with one shard per thread every window waited for the slow one (16K GPUs: 1.31x from 1 to 2
// threads).
//
// Why: a 16K-GPU step has ~78 K windows of ~30-60 µs of work. On the 2-core development VM a
// cache line written on one core costs ~200 ns to read on the other (430 ns round trip,
// measured), and a tbb::parallel_for per window, whose tasks land on either thread, made every
// rank's state change cores: the window's work took longer on 2 threads than on 1 (4K GPUs:
// 1.0 s on 1 thread, 1.7-2.8 s on 2, same with a spinning crew that let tasks go to either).
//
// A task is claimed with its window's number, so a helper that wakes late cannot run an earlier
// window's task twice; a helper that never gets a thread (the arena's worker busy elsewhere)
// costs nothing but speed: once the leader has run its own task it claims every task not yet
// claimed. Which thread runs a task never changes results (each touches its own state only).
// What crosses cores per window is kept to a few cache lines: the window's number, one claim
// word per thread's part, the helpers' count of tasks run and each helper's least task value
// (the engine's next event time, so the leader reads no shard's state to find the next window).
//
// Thread safety: run() and run_window() on one thread (the leader); tasks on any crew thread.
#pragma once
#include <tbb/spin_mutex.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

namespace dtsim {

class WindowCrew {
 public:
  // A task returns a value (the engine: its shard's earliest event after the window); a window
  // returns the least of its tasks'.
  using Task = std::int64_t (*)(void* context, int task);

  // `tasks` >= `threads`: every thread needs a task of its own.
  WindowCrew(int threads, int tasks)
      : threads_(threads), tasks_(tasks), parts_(std::make_unique<Part[]>(threads)),
        reports_(std::make_unique<Report[]>(threads)) {
    if (threads < 1 || tasks < threads) throw std::invalid_argument("WindowCrew: every thread needs a task of its own");
    if (tasks > kMaxPart * threads) throw std::invalid_argument("WindowCrew: too many tasks per thread");
  }

  // Runs lead() on this thread while the helpers wait for the windows lead() hands out with
  // run_window(); every window runs task(context, k) for k in [0, tasks).
  template <class Lead>
  void run(tbb::task_arena& arena, Task task, void* context, Lead&& lead) {
    task_ = task;
    context_ = context;
    if (threads_ == 1) return lead();
    arena.execute([&] {
      tbb::task_group helpers;
      for (int h = 1; h < threads_; ++h) helpers.run([this, h] { help(h); });
      try {
        lead();
      } catch (...) {
        stop();
        helpers.wait();
        throw;
      }
      stop();
      helpers.wait();
    });
  }

  // Runs the window's tasks; returns the least value they returned once all have run. Rethrows
  // the first exception a task threw. With `parallel` false the leader runs them all, in order.
  std::int64_t run_window(bool parallel) {
    std::int64_t least = kNone;
    if (threads_ == 1 || !parallel) {
      for (int k = 0; k < tasks_; ++k) least = std::min(least, task_(context_, k));
      return least;
    }
    const std::uint32_t window = ++window_;
    done_.store(0);
    published_.store(window);
    if (sleepers_.load() > 0) published_.notify_all();
    const int mine = work(0, window, least);
    // A helper that claimed a task may have lost its core (more threads than cores): yield
    // after a while rather than spin through its time slice.
    for (int i = 0; done_.load(std::memory_order_acquire) + mine != tasks_; ++i)
      if (i < kSpins) pause();
      else std::this_thread::yield();
    for (int h = 1; h < threads_; ++h)
      if (reports_[h].window.load(std::memory_order_relaxed) == window)
        least = std::min(least, reports_[h].least.load(std::memory_order_relaxed));
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return least;
  }

  static constexpr std::int64_t kNone = INT64_MAX;

 private:
  static constexpr int kSpins = 1 << 13;   // pauses before a waiting helper yields (~100 µs)
  static constexpr int kYields = 1 << 10;  // yields before it sleeps until the next window
  static constexpr int kMaxPart = 0xffff;  // tasks per thread
  static void pause() { __builtin_ia32_pause(); }

  // Thread t's own tasks: [first_task(t), first_task(t + 1)).
  int first_task(int thread) const { return static_cast<int>(static_cast<long>(tasks_) * thread / threads_); }

  // Claims the next task of thread `part`'s tasks in `window`: its owner takes them from the
  // front, other threads from the back; -1 when none is left (or the window is over). A part's
  // claims of a window are one word, (window, taken from the front, taken from the back): a
  // thread done with its own tries the others' with one cache line each, not one per task (on the
  // development VM each line that changes cores costs ~200 ns, several µs in its slow spells).
  int claim(int part, std::uint32_t window, bool front) {
    std::atomic<std::uint64_t>& claims = parts_[part].claims;
    const int size = first_task(part + 1) - first_task(part);
    std::uint64_t seen = claims.load(std::memory_order_relaxed);
    while (true) {
      const auto seen_window = static_cast<std::uint32_t>(seen >> 32);
      if (seen_window != window && seen_window != window - 1) return -1;  // a later window's
      const int from_front = seen_window == window ? static_cast<int>(seen >> 16 & kMaxPart) : 0;
      const int from_back = seen_window == window ? static_cast<int>(seen & kMaxPart) : 0;
      if (from_front + from_back == size) return -1;
      const std::uint64_t next = std::uint64_t{window} << 32 | std::uint64_t(from_front + (front ? 1 : 0)) << 16 |
                                 std::uint64_t(from_back + (front ? 0 : 1));
      if (claims.compare_exchange_weak(seen, next, std::memory_order_acq_rel, std::memory_order_relaxed))
        return front ? first_task(part) + from_front : first_task(part + 1) - 1 - from_back;
    }
  }

  // Runs the tasks this thread claims in `window`: its own, then the other threads' from the end
  // of their parts (where their owners come last); returns how many, lowering `least` to the
  // least value they returned.
  int work(int self, std::uint32_t window, std::int64_t& least) {
    int count = 0;
    auto run = [&](int task) {
      try {
        least = std::min(least, task_(context_, task));
      } catch (...) {
        tbb::spin_mutex::scoped_lock hold(error_lock_);
        if (!error_) error_ = std::current_exception();
      }
      ++count;
    };
    for (int task; (task = claim(self, window, true)) >= 0;) run(task);
    for (int k = 1; k < threads_; ++k)
      for (int task; (task = claim((self + k) % threads_, window, false)) >= 0;) run(task);
    return count;
  }

  void help(int self) {
    std::uint32_t seen = 0;
    while (true) {
      std::uint32_t window = published_.load();
      for (int i = 0; window == seen && !stopping_.load() && i < kSpins; ++i, window = published_.load()) pause();
      for (int i = 0; window == seen && !stopping_.load() && i < kYields; ++i, window = published_.load())
        std::this_thread::yield();
      if (stopping_.load()) return;
      if (window == seen) {
        ++sleepers_;
        published_.wait(seen);
        --sleepers_;
        continue;
      }
      seen = window;
      std::int64_t least = kNone;
      if (const int n = work(self, window, least); n > 0) {
        reports_[self].least.store(least, std::memory_order_relaxed);
        reports_[self].window.store(window, std::memory_order_relaxed);
        done_.fetch_add(n, std::memory_order_release);
      }
    }
  }

  void stop() {
    stopping_.store(true);
    published_.fetch_add(1);  // wakes sleeping helpers, which then see stopping_
    published_.notify_all();
  }

  struct alignas(64) Part {
    std::atomic<std::uint64_t> claims{0};  // (window, taken from the front, from the back)
  };
  // What a helper's tasks of a window returned, the least (read by the leader after done_).
  struct alignas(64) Report {
    std::atomic<std::uint32_t> window{0};
    std::atomic<std::int64_t> least{kNone};
  };

  int threads_;
  int tasks_;
  std::unique_ptr<Part[]> parts_;      // per thread: the claims on its part of the tasks
  std::unique_ptr<Report[]> reports_;  // per thread (the leader's unused)
  Task task_ = nullptr;
  void* context_ = nullptr;
  std::uint32_t window_ = 0;                             // the leader's count of windows handed out
  alignas(64) std::atomic<std::uint32_t> published_{0};  // the latest window handed out
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  alignas(64) std::atomic<int> done_{0};  // tasks the helpers ran in this window
  tbb::spin_mutex error_lock_;
  std::exception_ptr error_;
};

}  // namespace dtsim

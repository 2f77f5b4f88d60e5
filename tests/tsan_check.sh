#!/usr/bin/env bash
# ThreadSanitizer check of the concurrent code (sweep points on std::threads and on TBB threads):
# configures and builds build-tsan/ (-DDTSIM_SANITIZE=thread, the test binary only), then runs
# the [concurrency] tests with tests/tsan.supp, which hides reports inside Debian's
# uninstrumented libtbb. Not part of .ci/run (build time); run it after changing threaded code.
# usage: tests/tsan_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-tsan/build.ninja ]; then
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTSIM_SANITIZE=thread >/dev/null
fi
cmake --build build-tsan -j "$(nproc)" --target dtsim_tests
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
  build-tsan/dtsim_tests "[concurrency]"

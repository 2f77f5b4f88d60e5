#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/, -DDTSIM_FUZZ=ON: ASan + UBSan) and runs
# each for SECONDS (default 60) from its seed corpus: scenarios/**/*.ini for the scenario parser,
# tests/fuzz/corpus/dot for the DOT reader, tests/fuzz/corpus/csv for the validation CSV reader,
# tests/fuzz/corpus/hdf5 (a tiny trace and sweep table) for the HDF5 trace and sweep readers.
# New inputs are kept in build-fuzz/corpus/NAME; a crash is written to build-fuzz/crashes/ and
# makes the script exit 1 (once fixed, add it as a Catch test that parses it and expects InputError).
# usage: tests/fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTSIM_FUZZ=ON \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target fuzz_scenario fuzz_dot fuzz_validation_csv fuzz_hdf5
mkdir -p "$build/crashes"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for name in scenario dot validation_csv hdf5; do
  corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  max_len=8192
  case $name in
    scenario) seeds=(scenarios scenarios/tests scenarios/sweeps) ;;
    dot) seeds=(tests/fuzz/corpus/dot) ;;
    validation_csv) seeds=(tests/fuzz/corpus/csv) ;;
    # HDF5 1.10 itself leaks a damaged object header inside its metadata cache: suppressed by
    # tests/fuzz/hdf5_leaks.supp (full stacks needed to match it); every other leak is reported.
    hdf5) seeds=(tests/fuzz/corpus/hdf5); max_len=65536 ;;
  esac
  echo "== fuzz_$name for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0 \
       LSAN_OPTIONS=suppressions=tests/fuzz/hdf5_leaks.supp "$build/fuzz_$name" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$build/crashes/$name-" >"$build/fuzz_$name.log" 2>&1; then
    echo "fuzz_$name: FAILED, see $build/fuzz_$name.log and $build/crashes/"
    status=1
  fi
  grep -E "^#[0-9]+.*(DONE|cov:)" "$build/fuzz_$name.log" | tail -1
  grep -E "stat::(number_of_executed_units|average_exec_per_sec)" "$build/fuzz_$name.log" || true
done
exit $status

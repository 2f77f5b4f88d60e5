#!/bin/sh
# Engine benchmarks (not tests): wall time, user+sys CPU time, peak memory (max RSS) and events per second of
# `dtsim run --json` for BLOOM-176B and Llama 3 405B at 1K, 4K and 16K GPUs, at 1 and 2 threads,
# the 16K step with --fold-tp (one rank per TP group, same results),
# plus the engine's raw event rate on a synthetic workload: the 4-layer tiny-pipeline model as 4096
# data-parallel ranks (TP 1, PP 1, 4 micro-batches each), all compute but one gradient reduction.
# Each run is repeated REPS times (default 3), the thread counts taking turns within a repetition so
# that each sees the same spells of a shared machine; a line gives the fastest and the median wall
# time, the fastest run's CPU time and events per second, and the largest peak memory; with several
# thread counts, the speed-up of each over the first, fastest over fastest and median over median.
# Usage: [REPS=n] tests/bench/engine_bench.sh [build/dtsim] [THREADS...]   (default threads: 1 2)
set -eu
bin=${1:-build/dtsim}
[ $# -gt 0 ] && shift
threads=${*:-1 2}
reps=${REPS:-3}
case $reps in '' | *[!0-9]* | 0) echo "engine_bench.sh: REPS=$reps: must be a whole number >= 1" >&2; exit 2 ;; esac
here=$(dirname "$0")/../../scenarios
llama="$here/llama3-405b-16k.ini"
# The engine's scale workload: the 16K scenario under 1F1B with full recomputation, DP ranks
# inside a pod (the workload the figures in docs/benchmarks.md track).
scale="--training.recompute=full --parallel.schedule=1f1b --parallel.virtual_stages=1 --parallel.rank_order=tp,cp,dp,pp"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
bench() {  # name args...: every repetition of every thread count, then one line per thread count
  name=$1; shift
  : >"$results"
  for rep in $(seq "$reps"); do
    for t in $threads; do
      out=$( { /usr/bin/time -f "TIME %e %U %S %M" "$bin" run "$@" --output.trace_detail=summary --json --threads "$t"; } 2>&1 )
      events=$(printf '%s\n' "$out" | sed -n 's/.*"events": \([0-9]*\).*/\1/p')
      printf '%s\n' "$out" | awk -v t="$t" -v e="$events" '/^TIME/ {print t, $2, $3 + $4, $5, e}' >>"$results"
    done
  done
  first=${threads%% *}
  for t in $threads; do
    sort -n -k2 "$results" | awk -v n="$name" -v t="$t" -v first="$first" '
      $1 == first { fw[++nf] = $2 }
      $1 == t { w[++k] = $2; if (k == 1) { cpu = $3; e = $5 } if ($4 > m) m = $4 }
      END {
        med = w[int((k + 1) / 2)]
        printf "%-24s threads=%s  wall %6.2f s (median %6.2f)  cpu %6.2f s  peak %6.1f MiB  events %9d  %6.2f M events/s",
               n, t, w[1], med, cpu, m / 1024, e, e / w[1] / 1e6
        if (t != first) printf "  speed-up %.2fx (median %.2fx)", fw[1] / w[1], fw[int((nf + 1) / 2)] / med
        printf "\n"
      }'
  done
}
bench bloom-176b "$here/bloom-176b.ini"
# shellcheck disable=SC2086
bench llama3-405b-1k "$llama" $scale --parallel.dp=8 --training.global_batch=128 --cluster.nodes=128
bench llama3-405b-4k "$llama" $scale --parallel.dp=32 --training.global_batch=512 --cluster.nodes=512
bench llama3-405b-16k "$llama" $scale
bench llama3-405b-16k-fold-tp "$llama" $scale --fold-tp
bench synthetic-4k-ranks "$here/tests/tiny-pipeline.ini" --parallel.tp=1 --parallel.pp=1 --parallel.dp=4096 \
  --training.global_batch=16384 --cluster.nodes=512 --cluster.nics_per_node=1 --cluster.fabric=clos3 \
  --cluster.gpus_per_tor=64 --cluster.pod_gpus=4096

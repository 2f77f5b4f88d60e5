#!/bin/sh
# Engine benchmarks (not tests): wall time, user+sys CPU time, peak memory (max RSS) and events per second of
# `dtsim run --json` for BLOOM-176B and Llama 3 405B at 1K, 4K and 16K GPUs, at 1 and 2 threads,
# the 16K step with --fold-tp (one rank per TP group, same results),
# plus the engine's raw event rate on a synthetic workload: the 4-layer tiny-pipeline model as 4096
# data-parallel ranks (TP 1, PP 1, 4 micro-batches each), all compute but one gradient reduction.
# Usage: tests/bench/engine_bench.sh [build/dtsim] [THREADS...]   (default threads: 1 2)
set -eu
bin=${1:-build/dtsim}
[ $# -gt 0 ] && shift
threads=${*:-1 2}
here=$(dirname "$0")/../../scenarios
llama="$here/llama3-405b-16k.ini"
run() {  # name threads args...
  name=$1; t=$2; shift 2
  out=$( { /usr/bin/time -f "TIME %e %U %S %M" "$bin" run "$@" --output.trace_detail=summary --json --threads "$t"; } 2>&1 )
  set -- $(printf '%s\n' "$out" | awk '/^TIME/ {print $2, $3 + $4, $5}')
  events=$(printf '%s\n' "$out" | sed -n 's/.*"events": \([0-9]*\).*/\1/p')
  awk -v n="$name" -v t="$t" -v w="$1" -v c="$2" -v m="$3" -v e="$events" \
    'BEGIN { printf "%-22s threads=%s  wall %7.2f s  cpu %7.2f s  peak %7.1f MiB  events %10d  %6.2f M events/s\n", n, t, w, c, m / 1024, e, e / w / 1e6 }'
}
for t in $threads; do
  run bloom-176b "$t" "$here/bloom-176b.ini"
  run llama3-405b-1k "$t" "$llama" --parallel.dp=8 --training.global_batch=128 --cluster.nodes=128
  run llama3-405b-4k "$t" "$llama" --parallel.dp=32 --training.global_batch=512 --cluster.nodes=512
  run llama3-405b-16k "$t" "$llama"
  run llama3-405b-16k-fold-tp "$t" "$llama" --fold-tp
  run synthetic-4k-ranks "$t" "$here/tests/tiny-pipeline.ini" --parallel.tp=1 --parallel.pp=1 --parallel.dp=4096 \
    --training.global_batch=16384 --cluster.nodes=512 --cluster.nics_per_node=1 --cluster.fabric=clos3 \
    --cluster.gpus_per_tor=64 --cluster.pod_gpus=4096
done

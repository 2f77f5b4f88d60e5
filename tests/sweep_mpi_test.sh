#!/usr/bin/env bash
# The MPI sweep (rank 0 hands out points, the other ranks simulate them) writes the same table as
# the single-process sweep: with 2 and 3 ranks, the CSV and the whole HDF5 file (h5dump) match.
# Usage: sweep_mpi_test.sh MPIRUN MPI_DTSIM DTSIM SCENARIO.ini
set -euo pipefail
mpirun=$1 mpi_dtsim=$2 dtsim=$3 scenario=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
axes=(--sweep parallel.dp=2,3 --quiet)
"$dtsim" sweep "$scenario" "${axes[@]}" --jobs 1 --output "$dir/single.h5" --csv "$dir/single.csv" >/dev/null
h5dump "$dir/single.h5" | tail -n +2 >"$dir/single.dump"
rows=$(($(wc -l <"$dir/single.csv") - 1))
[ "$rows" -eq 12 ] || { echo "single-process sweep has $rows rows, expected 12"; exit 1; }
for ranks in 2 3; do
  "$mpirun" --allow-run-as-root --oversubscribe -n "$ranks" "$mpi_dtsim" sweep "$scenario" "${axes[@]}" \
    --output "$dir/mpi$ranks.h5" --csv "$dir/mpi$ranks.csv" >"$dir/out"
  grep -q "simulated by $((ranks - 1)) MPI ranks" "$dir/out" || { echo "not an MPI sweep: $(cat "$dir/out")"; exit 1; }
  cmp "$dir/single.csv" "$dir/mpi$ranks.csv" || { echo "CSV of the $ranks-rank MPI sweep differs"; exit 1; }
  h5dump "$dir/mpi$ranks.h5" | tail -n +2 >"$dir/mpi$ranks.dump"
  diff "$dir/single.dump" "$dir/mpi$ranks.dump" || { echo "HDF5 of the $ranks-rank MPI sweep differs"; exit 1; }
done
echo "MPI sweeps with 2 and 3 ranks equal the single-process sweep ($rows rows)"

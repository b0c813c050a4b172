#!/bin/sh
# bench_ranks.sh: time and memory of `strobe ranks` on a generated job (issue 35), read with -j 1,
# -j 2 and -j JOBS threads and under `mpirun -np 2` and `-np 4`, against one `cat` of all the files
# (the floor), in one run. RANKS rank traces of about MB megabytes each (tests/cli/jobgen.py).
# Each strobe run's output is compared with -j 1's (they must be the same bytes). Peak memory:
# GNU time's max RSS for one process; under mpirun, the VmHWM of every strobe process the run
# starts, polled every 0.1 s (rank 0's, and the sum). With --merge, `strobe merge DIR -o X.pftrace`
# is run the same ways too (each output compared with -j 1's, then deleted); --no-ranks leaves the
# ranks runs out. --collectives runs `strobe ranks --collectives` instead of the steps (for a job
# of bench/gen_job.py, given with --dir: jobgen.py's traces have no collectives).
#
#   bench/bench_ranks.sh [--strobe PATH] [--ranks N] [--mb MB] [--jobs N] [--dir DIR] [--keep]
#                        [--merge] [--no-ranks] [--collectives]
#
# Defaults: build/strobe, 1000 ranks, 2 MB, --jobs the cores (nproc), a folder under /tmp, deleted
# at the end unless --keep (or when --dir names one that already has the traces: then they are
# used as they are). The mpirun runs are skipped, saying so, without mpirun.
set -eu
strobe=build/strobe
ranks=1000
mb=2
jobs=$(nproc)
dir=
keep=0
run_ranks=1
run_merge=0
coll=
while [ $# -gt 0 ]; do
    case $1 in
    --strobe) strobe=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --merge) run_merge=1; shift ;;
    --no-ranks) run_ranks=0; shift ;;
    --collectives) coll=--collectives; shift ;;
    *) echo "bench_ranks.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
if [ -z "$dir" ]; then dir=$work/job; fi
trap 'rm -rf "$work"; [ "$keep" = 1 ] || [ "$dir" != "$work/job" ] || rm -rf "$dir"' EXIT
if [ ! -d "$dir" ] || [ -z "$(ls "$dir")" ]; then
    python3 "$here/tests/cli/jobgen.py" big "$dir" "$ranks" "$mb"
fi
echo "$(find "$dir" -type f | wc -l) files, $(du -sh "$dir" | cut -f1); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "cat DIR/* > /dev/null: %e s wall, %M KB peak" sh -c "cat '$dir'/* > /dev/null"
for j in 1 2 "$jobs"; do
    [ "$run_ranks" = 1 ] || break
    /usr/bin/time -o "$work/time" -f "strobe ranks -j $j: %e s wall, %U s user, %S s sys, %M KB peak" \
        "$strobe" ranks $coll -q -j "$j" -f json "$dir" > "$work/out.$j" 2> "$work/err"
    cat "$work/time"
done
# hwm CMD...: runs CMD; prints the wall time and the VmHWM of the strobe processes it starts.
hwm() {
    start=$(date +%s.%N)
    "$@" > "$work/out.mpi" 2> "$work/err" &
    pid=$!
    : > "$work/hwm"
    while kill -0 "$pid" 2>/dev/null; do
        for p in $pid $(pgrep -P "$pid" || true); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = strobe ] || continue
            awk -v p="$p" '/^VmHWM/ { print p, $2 }' "/proc/$p/status" 2>/dev/null >> "$work/hwm" || true
        done
        sleep 0.1
    done
    wait "$pid" || echo "(exit status $?)"
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" '{ if ($2 > m[$1]) m[$1] = $2 }
        END { for (p in m) { t += m[p]; if (m[p] > b) b = m[p] }
              printf "%.2f s wall, largest process %d KB, %d processes %d KB\n", e - s, b, length(m), t }' "$work/hwm"
}
if [ "$run_ranks" = 0 ]; then
    :
elif command -v mpirun > /dev/null; then
    for np in 2 4; do
        printf "mpirun -np %s strobe ranks: " "$np"
        hwm mpirun --allow-run-as-root --oversubscribe -np "$np" "$strobe" ranks $coll -q -f json "$dir"
        cmp -s "$work/out.1" "$work/out.mpi" || echo "  DIFFERS from -j 1"
    done
else
    echo "mpirun absent: the MPI runs skipped"
fi
if [ "$run_ranks" = 1 ]; then
    for j in 2 "$jobs"; do cmp -s "$work/out.1" "$work/out.$j" || echo "strobe ranks -j $j DIFFERS from -j 1"; done
    echo "outputs: $(wc -c < "$work/out.1") bytes each"
fi
[ "$run_merge" = 1 ] || exit 0
# The merges: each output compared with -j 1's and deleted (they are about the size of the job).
for j in 1 2 "$jobs"; do
    /usr/bin/time -o "$work/time" -f "strobe merge -j $j: %e s wall, %U s user, %S s sys, %M KB peak" \
        "$strobe" merge -q -j "$j" "$dir" -o "$work/merged.$j.pftrace" 2> "$work/err" || cat "$work/err"
    cat "$work/time"
    if [ "$j" != 1 ]; then
        cmp -s "$work/merged.1.pftrace" "$work/merged.$j.pftrace" || echo "  DIFFERS from -j 1"
        rm -f "$work/merged.$j.pftrace"
    fi
done
if command -v mpirun > /dev/null; then
    for np in 2 4; do
        printf "mpirun -np %s strobe merge: " "$np"
        hwm mpirun --allow-run-as-root --oversubscribe -np "$np" "$strobe" merge -q "$dir" \
            -o "$work/merged.mpi.pftrace"
        cmp -s "$work/merged.1.pftrace" "$work/merged.mpi.pftrace" || echo "  DIFFERS from -j 1"
        rm -f "$work/merged.mpi.pftrace"
    done
else
    echo "mpirun absent: the MPI merges skipped"
fi
echo "merged: $(wc -c < "$work/merged.1.pftrace") bytes each"

#!/bin/sh
# bench_heap.sh: the cost of a malloc+free pair under `strobe record --heap` (sums per site,
# sampled events), --heap=all (an event per call) and --heap-stacks (issues 17, 31), against the same loop with no strobe (the floor), in one run: strobe_bench_heap
# (bench_heap.c) bare, then recorded each way to a .pftrace (deleted at the end). Prints each
# line of the program (median and fastest run, ns per pair), the extra cost per pair over the
# floor's median, the trace's size, and the CPU model. With many pairs the figure includes the
# wait for the writer thread (the program waits for a free chunk while the trace is written);
# with few (--pairs 2000) the chunks never fill and it is the interposer's own cost.
#
#   bench/bench_heap.sh [--strobe PATH] [--bench PATH] [--pairs N] [--runs R] [--before LIB]
#
# --before LIB: also --heap-stacks with another build's libstrobe_record.so (STROBE_RECORD_LIB),
# to compare a change against the build before it in the same run.
#
# Defaults: build-h/strobe, build-h/bench/strobe_bench_heap, 50000 pairs, 7 runs.
set -eu
strobe=build-h/strobe
bench=build-h/bench/strobe_bench_heap
pairs=50000
runs=7
before=
while [ $# -gt 0 ]; do
    case "$1" in
    --strobe) strobe=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    *) echo "bench_heap.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
dir=$(mktemp -d /tmp/strobe-bench-heap.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
floor=$("$bench" --pairs "$pairs" --runs "$runs")
heap=$("$strobe" record --heap -o "$dir/heap.pftrace" -- "$bench" --pairs "$pairs" --runs "$runs" 2>/dev/null)
all=$("$strobe" record --heap=all -o "$dir/all.pftrace" -- "$bench" --pairs "$pairs" --runs "$runs" 2>/dev/null)
stacks=$("$strobe" record --heap-stacks -o "$dir/stacks.pftrace" -- "$bench" --pairs "$pairs" --runs "$runs" 2>/dev/null)
old=
[ -n "$before" ] && old=$(STROBE_RECORD_LIB=$before "$strobe" record --heap-stacks -o "$dir/before.pftrace" -- "$bench" --pairs "$pairs" --runs "$runs" 2>/dev/null)
med() { echo "$1" | awk '{print $2}'; }
f=$(med "$floor")
set -- "floor (no strobe)|$floor|" "--heap|$heap|heap" "--heap=all|$all|all" "--heap-stacks|$stacks|stacks"
[ -n "$before" ] && set -- "$@" "--heap-stacks, before|$old|before"
for row in "$@"; do
    name=${row%%|*} rest=${row#*|}
    line=${rest%|*} file=${rest##*|}
    m=$(med "$line")
    size=
    [ -n "$file" ] && size=", trace $(($(stat -c %s "$dir/$file.pftrace") / 1048576)) MiB"
    printf '%-18s %s  (+%s ns, %sx the floor%s)\n' "$name" "$line" \
        "$(awk -v m="$m" -v f="$f" 'BEGIN { printf "%.1f", m - f }')" \
        "$(awk -v m="$m" -v f="$f" 'BEGIN { printf "%.2f", m / f }')" "$size"
done

#!/bin/sh
# bench_merge.sh: time and memory of `strobe merge` on a generated job (issue 20): RANKS rank
# traces of about MB megabytes each (tests/cli/jobgen.py: steps of a range, a launch, its kernel
# and flow, an MPI barrier; each rank with a clock offset and drift to align), merged to JSON and
# to .pftrace. For each: wall time, user+sys CPU time and max RSS (GNU time), and the output's
# size; and, as the floor, the same of `strobe info` on one rank (reading one rank's trace into
# the model) and of `cat` over all the inputs. The generated files are deleted at the end.
#
#   bench/bench_merge.sh [--strobe PATH] [--baseline PATH] [--ranks N] [--mb MB] [--dir DIR]
#
# Defaults: build-h/strobe, 16 ranks, 100 MB, a folder under /tmp. --baseline: the same merges
# with another strobe too (an older build, on the same inputs, in the same run). Comparing two
# rank counts (--ranks 2, --ranks 8) shows whether memory grows with the ranks: it should not,
# for either output (a .pftrace's interned names are bounded and forgotten after each rank). Needs
# GNU time (/usr/bin/time) and python3.
set -eu
strobe=build-h/strobe
baseline=
ranks=16
mb=100
dir=
while [ $# -gt 0 ]; do
    case "$1" in
    --strobe) strobe=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "bench_merge.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || { echo "bench_merge.sh: needs /usr/bin/time (GNU time)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$dir" ] || dir=$(mktemp -d /tmp/strobe-bench-merge.XXXXXX)
mkdir -p "$dir/job"
trap 'rm -rf "$dir"' EXIT
echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cpus)"
echo "generating $ranks ranks x $mb MB in $dir/job ..."
python3 "$here/tests/cli/jobgen.py" big "$dir/job" "$ranks" "$mb"
echo "inputs: $(du -sm "$dir/job" | cut -f1) MB"
# One row: label, wall s, cpu s, max RSS MB, output MB.
measure() {
    label=$1 outf=$2
    shift 2
    /usr/bin/time -f '%e %U %S %M' -o "$dir/time" "$@" > /dev/null
    read -r wall user sys rss < "$dir/time"
    size=-
    [ -n "$outf" ] && [ -f "$outf" ] && size=$(du -m "$outf" | cut -f1)
    printf '%-36s wall %7.2f s  cpu %7.2f s  max RSS %6d MB  output %s MB\n' "$label" "$wall" \
        "$(awk "BEGIN { print $user + $sys }")" "$((rss / 1024))" "$size"
}
measure "cat (all inputs)" "" sh -c 'cat "$0"/*.json' "$dir/job"
measure "strobe info (one rank)" "" "$strobe" info -q "$dir/job/rank0.json"
for bin in "$strobe" $baseline; do
    tag=
    [ "$bin" = "$strobe" ] || tag=" (baseline)"
    measure "strobe merge -> .json$tag" "$dir/merged.json" "$bin" merge -q "$dir/job" -o "$dir/merged.json"
    rm -f "$dir/merged.json"
    measure "strobe merge -> .pftrace$tag" "$dir/merged.pftrace" "$bin" merge -q "$dir/job" -o "$dir/merged.pftrace"
    rm -f "$dir/merged.pftrace"
done

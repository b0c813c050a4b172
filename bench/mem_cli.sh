#!/bin/sh
# mem_cli.sh: peak memory of strobe's analysis commands per trace, as a share of the trace's size.
#
#   bench/mem_cli.sh [--strobe PATH] [--cmds "summary kernels ..."] TRACE...
#
# For each trace (give uncompressed files: the share is of the bytes read) and command it prints
# the max RSS (GNU time), the max RSS as % of the file's size, and the same over the process floor:
# (max RSS - floor) as % of the size, where the floor is the max RSS of the command on an empty
# trace ({"traceEvents":[]}), measured in the same run. Issue 16 asks for less than a third.
set -u
strobe=./build-h/strobe
cmds="summary kernels stacks check info steps breakdown overlap launches idle queue ranks annotations diff"
while [ $# -gt 0 ]; do
    case $1 in
    --strobe) strobe=$2; shift 2 ;;
    --cmds) cmds=$2; shift 2 ;;
    -h | --help) sed -n 2,10p "$0"; exit 0 ;;
    --) shift; break ;;
    -*) echo "mem_cli.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: mem_cli.sh [--strobe PATH] [--cmds LIST] TRACE..." >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "mem_cli.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '{"traceEvents":[]}' > "$tmp/empty.json"
# rss CMD TRACE: max RSS in KB of `strobe CMD TRACE` (diff compares the trace with itself, one
# trace at a time: with -j 2, its default on two cores or more, it holds both at once)
rss() {
    if [ "$1" = diff ]; then set -- "diff -j 1 $2" "$2"; fi
    # shellcheck disable=SC2086
    /usr/bin/time -f %M -o "$tmp/t" $strobe $1 "$2" > /dev/null 2>&1
    tail -n 1 "$tmp/t"
}
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "strobe: $strobe; CPU: $cpu"
for t in "$@"; do
    size=$(wc -c < "$t")
    printf '%s: %s bytes\n' "$t" "$size"
    printf '  %-12s %10s %10s %8s %12s\n' command "RSS KB" "floor KB" "RSS %" "over floor %"
    for c in $cmds; do
        floor=$(rss "$c" "$tmp/empty.json")
        peak=$(rss "$c" "$t")
        awk -v c="$c" -v p="$peak" -v f="$floor" -v s="$size" 'BEGIN {
            printf "  %-12s %10d %10d %7.1f%% %11.1f%%\n", c, p, f, 100 * p * 1024 / s, 100 * (p - f) * 1024 / s }'
    done
done

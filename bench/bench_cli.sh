#!/bin/sh
# bench_cli.sh: times strobe's analysis commands on traces next to Perfetto's trace processor
# importing the same file, in one run, alternating, so that both see the same machine load.
#
#   bench/bench_cli.sh [--runs N] [--strobe PATH] [--tp PATH] [--cmds "summary kernels ..."] TRACE...
#
# A trace is read as it is given (give uncompressed files to time parsing, not gunzip). For each
# trace it prints one row per command and one for the trace processor's import ("select count(*)
# from slice"): min and median of wall time and of user+sys CPU time, and the largest max RSS, over
# N runs (default 3). The trace processor is ~/.cache/trace-validators/tp_query (built by
# shared/validators/setup.sh), run under flock /tmp/strobe-trace-validators.lock; its rows are left
# out when it is missing. A command with options is written with + for its spaces:
# --cmds "kernels+--tb-view overlay+-o+/tmp/o.json". Needs GNU time (/usr/bin/time).
set -eu
runs=3
strobe=build-rel/strobe
tp="$HOME/.cache/trace-validators/tp_query"
cmds="summary breakdown overlap kernels launches idle queue ranks steps"
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --strobe) strobe=$2; shift 2 ;;
    --tp) tp=$2; shift 2 ;;
    --cmds) cmds=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "bench_cli.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: bench_cli.sh [--runs N] [--strobe PATH] [--tp PATH] [--cmds LIST] TRACE..." >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_cli.sh: needs /usr/bin/time (GNU time)" >&2; exit 2; }
have_tp=0
[ -x "$tp" ] && have_tp=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one LABEL [--lock] CMD...: runs CMD once under GNU time (inside the validators' lock with
# --lock, so that waiting for it is not timed), appending "wall cpu rss_kb" to $tmp/LABEL.
one() {
    label=$1
    shift
    lock=""
    if [ "$1" = --lock ]; then
        lock="flock /tmp/strobe-trace-validators.lock"
        shift
    fi
    $lock /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" ||
        { echo "bench_cli.sh: failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
    awk '{ printf "%.3f %.3f %d\n", $1, $2 + $3, $4 }' "$tmp/t" >>"$tmp/$label"
}

# stats LABEL: "min median" of a column, then the max RSS.
stats() {
    w=$(cut -d' ' -f1 "$tmp/$1" | sort -n | awk '{ a[NR] = $1 } END { printf "%6.3f %6.3f", a[1], a[int((NR + 1) / 2)] }')
    c=$(cut -d' ' -f2 "$tmp/$1" | sort -n | awk '{ a[NR] = $1 } END { printf "%6.3f %6.3f", a[1], a[int((NR + 1) / 2)] }')
    m=$(cut -d' ' -f3 "$tmp/$1" | sort -n | tail -1)
    printf '%s   %s   %7.1f' "$w" "$c" "$(echo "$m" | awk '{ print $1 / 1024 }')"
}

for trace in "$@"; do
    size=$(wc -c <"$trace")
    printf '\n%s (%.1f MB), %d runs each\n' "$trace" "$(echo "$size" | awk '{ print $1 / 1e6 }')" "$runs"
    printf '%-34s %-13s   %-13s   %7s   %s\n' "" "wall s min med" "cpu s min med" "RSS MB" "MB/s (min cpu)"
    rm -f "$tmp"/r_*
    i=0
    while [ $i -lt "$runs" ]; do
        if [ $have_tp = 1 ]; then
            one r_tp --lock "$tp" "$trace" --sql 'select count(*) from slice'
        fi
        for c in $cmds; do
            # shellcheck disable=SC2046 # a command's + are its spaces
            one "r_$(echo "$c" | tr / _)" "$strobe" $(echo "$c" | tr + ' ') "$trace"
        done
        i=$((i + 1))
    done
    labels=""
    [ $have_tp = 1 ] && labels="tp"
    labels="$labels $cmds"
    for c in $labels; do
        name=$(echo "$c" | tr + ' ')
        c=$(echo "$c" | tr / _)
        [ "$c" = tp ] && name="tp_query (import)"
        mincpu=$(cut -d' ' -f2 "$tmp/r_$c" | sort -n | head -1)
        printf '%-34s %s   %6.0f\n' "$name" "$(stats "r_$c")" "$(echo "$size $mincpu" | awk '{ print ($2 > 0 ? $1 / 1e6 / $2 : 0) }')"
    done
done

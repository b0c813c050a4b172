#!/bin/sh
# cli_mem_peak.sh STROBE SRC_DIR WORK_DIR [EVENTS] [COMMANDS]: issue 16's memory rule on a generated
# compact trace (bench/gen_compact.py: ~88 bytes per event, few threads and names, nested ranges,
# written children first so that loading sorts). For each command, the rule is
#
#     (max RSS on the trace - max RSS on an empty trace) <= size of the trace / 3
#
# both max RSS measured here (GNU time), the floor with the same command, so that the process's
# own floor (libraries, ~2.4 MB) is not charged to the trace. Skips (77) without GNU time or
# python3.
set -u
strobe=$1; src=$2; work=$3; events=${4:-400000}
# Every analysis command that loads the model (diff compares the trace with itself).
cmds=${5:-"info check kernels breakdown overlap summary stacks diff steps idle queue launches ranks annotations"}
[ -x /usr/bin/time ] || { echo "cli_mem_peak: SKIP: no GNU time (/usr/bin/time)"; exit 77; }
command -v python3 > /dev/null || { echo "cli_mem_peak: SKIP: no python3"; exit 77; }
mkdir -p "$work"
trace=$work/compact.json
python3 "$src/bench/gen_compact.py" --events "$events" --threads 4 "$trace" || exit 1
echo '{"traceEvents":[]}' > "$work/empty.json"
size=$(wc -c < "$trace")
# rss CMD TRACE: max RSS (KB) of a run that must succeed (check exits 0 on a clean trace)
rss() {
    # diff one trace at a time (-j 1): with two workers, its default on two cores or more, it
    # holds both traces at once, by design.
    if [ "$1" = diff ]; then set -- "$1" -j 1 "$2" "$2"; fi
    cmd=$1
    shift
    /usr/bin/time -f %M -o "$work/time" "$strobe" "$cmd" -q "$@" > /dev/null || {
        echo "cli_mem_peak: FAIL: strobe $cmd $* failed" >&2
        return 1
    }
    tail -n 1 "$work/time"
}
fails=0
for c in $cmds; do
    floor=$(rss "$c" "$work/empty.json") || exit 1
    peak=$(rss "$c" "$trace") || exit 1
    # in bytes: (peak - floor) KB * 1024 * 3 against size
    over=$(( (peak - floor) * 1024 ))
    pct=$(awk -v o="$over" -v s="$size" 'BEGIN { printf "%.1f", 100 * o / s }')
    if [ $((over * 3)) -gt "$size" ]; then
        echo "FAIL: $c: max RSS $peak KB - floor $floor KB = ${pct}% of the trace's $size bytes (over a third)"
        fails=$((fails + 1))
    else
        echo "ok: $c: max RSS $peak KB - floor $floor KB = ${pct}% of the trace's $size bytes"
    fi
done
rm -f "$trace"
[ $fails -eq 0 ]

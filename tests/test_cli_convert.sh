#!/usr/bin/env bash
# test_cli_convert.sh: `strobe convert` JSON -> Perfetto -> JSON keeps every slice, the other
# subcommands read the .pftrace, and bad input fails cleanly (exit 2 with a message).
#
# Usage: test_cli_convert.sh STROBE ZOO SHARED_DIR WORK_DIR [generated|shared]
#   generated  the trace zoo's traces (strobe's own JSON), hand-made bad files and usage errors;
#              needs nothing from SHARED_DIR
#   shared     the PyTorch traces in SHARED_DIR/traces and the malformed samples in
#              SHARED_DIR/validators/samples/bad; exits 77 (skipped) when they are absent
# Slices are compared by `strobe info`'s count of complete events ("X") before and after the
# round trip, and `strobe summary` of the JSON and of the .pftrace must print the same table, row
# by row (slices that overlap without nesting are kept whole on extra tracks of their thread,
# never cut). With the trace validators installed, the .pftrace of the overlap test and of the
# shared traces pass SHARED_DIR/validators/check_all.sh --strict.
set -u
STROBE=$1 ZOO=$2 SHARED=$3 WORK=$4 MODE=${5:-generated}
LIMIT=120
fail=0
mkdir -p "$WORK"
TMP=$(mktemp -d "$WORK/run.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# strobe_check_trace runs what check_all.sh runs, with its setup once; tp_query is run under the
# same lock, shared (validators.sh says why).
. "$(dirname "$0")/validators.sh"
VLOCK=$STROBE_VLOCK
TP="${TRACE_VALIDATORS_HOME:-$HOME/.cache/trace-validators}/tp_query"
x_count() { "$STROBE" info "$1" | sed -n 's/^  X \([0-9]*\)$/\1/p'; }

# `strobe summary` of the JSON ($1) and of the .pftrace ($2) print the same table: every column
# with raw numbers (csv, rows sorted by name), and the table itself (its lines sorted, so that
# rows with equal times cannot swap). @return 1 after a FAIL line with the first differences.
same_summary() {
    local opts
    # A line on stderr names its trace (the hint under an empty table): the name is left out.
    for opts in "-f csv -s name" ""; do
        if [ -z "$opts" ]; then
            "$STROBE" summary -q "$1" 2>&1 | sed "s|$1|TRACE|" | sort >"$TMP/sum_a"
            "$STROBE" summary -q "$2" 2>&1 | sed "s|$2|TRACE|" | sort >"$TMP/sum_b"
        else
            "$STROBE" summary -q $opts "$1" 2>&1 | sed "s|$1|TRACE|" >"$TMP/sum_a"
            "$STROBE" summary -q $opts "$2" 2>&1 | sed "s|$2|TRACE|" >"$TMP/sum_b"
        fi
        if ! cmp -s "$TMP/sum_a" "$TMP/sum_b"; then
            echo "FAIL  $(basename "$1"): strobe summary ${opts:-(table)} differs between the JSON" \
                "(<) and the .pftrace (>):"
            diff "$TMP/sum_a" "$TMP/sum_b" | head -12
            fail=1
            return 1
        fi
    done
}

# Perfetto's trace processor (with the other checkers) finds nothing wrong in a .pftrace.
validate_pf() {
    local checker="$SHARED/validators/check_all.sh"
    if [ ! -x "$checker" ] || [ ! -x "$TP" ]; then
        echo "SKIP  check_all.sh --strict $(basename "$1"): trace validators not installed"
        return 0
    fi
    if ! strobe_check_trace "$SHARED" "$1" --strict >"$TMP/check_all" 2>&1; then
        echo "FAIL  check_all.sh --strict $(basename "$1"):"; tail -15 "$TMP/check_all"; fail=1
        return 1
    fi
    echo "ok    check_all.sh --strict $(basename "$1")"
}

roundtrip() {
    local src=$1 name
    name=$(basename "$src")
    local pf="$TMP/$name.pftrace" back="$TMP/$name.back.json"
    if ! timeout $LIMIT "$STROBE" convert "$src" "$pf" 2>"$TMP/err"; then
        echo "FAIL  convert $src -> .pftrace: $(cat "$TMP/err")"; fail=1; return
    fi
    if ! timeout $LIMIT "$STROBE" convert "$pf" "$back" 2>"$TMP/err"; then
        echo "FAIL  convert $pf -> .json: $(cat "$TMP/err")"; fail=1; return
    fi
    local a b
    a=$(x_count "$src") b=$(x_count "$back")
    if [ -z "$a" ] || [ "$a" != "$b" ]; then
        echo "FAIL  $name: $a complete events, $b after the round trip"; fail=1; return
    fi
    # The top-level metadata of strobe's traces comes back (it rides on the session slice).
    if grep -q '"strobe session"' "$src" 2>/dev/null || zgrep -q '"strobe session"' "$src" 2>/dev/null; then
        if [ "$("$STROBE" info "$src" | grep '^base time')" != "$("$STROBE" info "$back" | grep '^base time')" ]; then
            echo "FAIL  $name: base time lost in the round trip"; fail=1; return
        fi
    fi
    # The other subcommands read the .pftrace directly.
    for c in info summary kernels stacks; do
        timeout $LIMIT "$STROBE" $c "$pf" >/dev/null 2>"$TMP/err"
        local rc=$?
        if [ $rc -ne 0 ]; then
            echo "FAIL  strobe $c $pf: exit $rc: $(cat "$TMP/err")"; fail=1; return
        fi
    done
    # strobe's own traces are clean for `strobe check`, also as .pftrace.
    if [ "$MODE" = generated ] && timeout $LIMIT "$STROBE" check "$src" >/dev/null 2>&1 &&
        ! timeout $LIMIT "$STROBE" check "$pf" >"$TMP/err" 2>&1; then
        echo "FAIL  strobe check $pf: $(cat "$TMP/err")"; fail=1; return
    fi
    same_summary "$src" "$pf" || return
    if [ "$MODE" = shared ]; then validate_pf "$pf" || return; fi
    echo "ok    $name ($a slices)"
}

# A bad input: exit 2, a message on stderr, no output file left behind for .pftrace.
expect_bad() {
    local what=$1; shift
    timeout $LIMIT "$STROBE" convert "$@" >/dev/null 2>"$TMP/err"
    local rc=$?
    if [ $rc -ne 2 ] || [ ! -s "$TMP/err" ]; then
        echo "FAIL  $what: exit $rc, stderr: $(cat "$TMP/err")"; fail=1
    else
        echo "ok    $what: $(head -1 "$TMP/err")"
    fi
}

if [ "$MODE" = generated ]; then
    mkdir -p "$TMP/zoo"
    traces=$("$ZOO" "$TMP/zoo") || { echo "trace_zoo failed"; exit 1; }
    for t in $traces; do
        case "$t" in *.json|*.json.gz) roundtrip "$t" ;; esac
    done
    # A CUDA graph launch as Kineto writes it: one "s" on cudaGraphLaunch, an "f" with the same
    # id on each of its three kernels. Each end gets its own flow id in the .pftrace (a
    # terminating id closes its flow), and the JSON it converts back to has one "s" and three "f"
    # with one id again.
    cat >"$TMP/graph.json" <<'JSON'
{"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 10, "tid": 11, "ts": 1.0, "dur": 5.0, "args": {"correlation": 88}},
  {"ph": "s", "id": 88, "pid": 10, "tid": 11, "ts": 1.0, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 10.0, "dur": 2.0, "args": {"correlation": 88}},
  {"ph": "f", "id": 88, "pid": 0, "tid": 7, "ts": 10.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 13.0, "dur": 2.0, "args": {"correlation": 88}},
  {"ph": "f", "id": 88, "pid": 0, "tid": 7, "ts": 13.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 9, "ts": 11.0, "dur": 2.0, "args": {"correlation": 88}},
  {"ph": "f", "id": 88, "pid": 0, "tid": 9, "ts": 11.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]}
JSON
    if "$STROBE" convert "$TMP/graph.json" "$TMP/graph.pftrace" 2>"$TMP/err" &&
        "$STROBE" convert "$TMP/graph.pftrace" "$TMP/graph.back.json" 2>>"$TMP/err"; then
        sid=$(grep -o '"ph": "s", "id": [0-9]*' "$TMP/graph.back.json" | sed 's/.*: //')
        ns=$(grep -c '"ph": "s"' "$TMP/graph.back.json")
        nf=$(grep -c "\"ph\": \"f\", \"id\": $sid," "$TMP/graph.back.json")
        if [ "$ns" = 1 ] && [ "$nf" = 3 ]; then
            echo "ok    graph launch: 1 flow start, 3 ends with its id after the round trip"
        else
            echo "FAIL  graph launch: $ns flow starts, $nf ends with the start's id (want 1, 3)"
            fail=1
        fi
        tp="${TRACE_VALIDATORS_HOME:-$HOME/.cache/trace-validators}/tp_query"
        if [ -x "$tp" ]; then
            n=$(flock -s "$VLOCK" "$tp" "$TMP/graph.pftrace" --sql 'select count(*) as n from flow' 2>&1 | tail -1)
            if [ "$n" = 3 ]; then
                echo "ok    graph launch: Perfetto draws 3 flows from the .pftrace"
            else
                echo "FAIL  graph launch: Perfetto counts $n flows in the .pftrace (want 3)"
                fail=1
            fi
        else
            echo "SKIP  graph launch: $tp not installed, flows not counted by Perfetto"
        fi
    else
        echo "FAIL  graph launch: convert: $(cat "$TMP/err")"; fail=1
    fi
    # Flows with ids 1 to 8 (a launch and its kernel each): the .pftrace is as clean for `strobe
    # check` as the JSON, whatever the id (a flow's id in the .pftrace must read back as a JSON
    # integer, not a 64-bit hash above INT64_MAX).
    {
        printf '{"schemaVersion": 1, "traceEvents": [\n'
        for i in 1 2 3 4 5 6 7 8; do
            printf '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": %d.0, "dur": 2.0, "args": {"correlation": %d}},\n' $((i * 10)) $i
            printf '{"ph": "s", "id": %d, "pid": 10, "tid": 11, "ts": %d.0, "cat": "ac2g", "name": "ac2g"},\n' $i $((i * 10))
            printf '{"ph": "X", "cat": "kernel", "name": "k%d", "pid": 0, "tid": 7, "ts": %d.0, "dur": 2.0, "args": {"correlation": %d}},\n' $i $((i * 10 + 3)) $i
            printf '{"ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %d.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}%s\n' $i $((i * 10 + 3)) "$([ $i = 8 ] || echo ,)"
        done
        printf ']}\n'
    } >"$TMP/flows.json"
    roundtrip "$TMP/flows.json"
    # Slices that overlap without nesting, as real PyTorch traces have them (a collective that
    # outlives its step, a kernel that starts before the previous one on its stream ends): each is
    # kept whole on an extra track of its thread, so that the summary of the .pftrace is that of
    # the JSON. Cutting "b" at the end of "a", "hccl:all_to_all" at the end of "step" ... changed
    # CPU totals and Self CPU. A flow starts on "b" and ends on "k2", both on extra tracks.
    cat >"$TMP/overlap.json" <<'JSON'
{"schemaVersion": 1, "traceEvents": [
  {"ph": "M", "name": "thread_name", "pid": 10, "tid": 11, "args": {"name": "main"}},
  {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
  {"ph": "X", "cat": "cpu_op", "name": "step", "pid": 10, "tid": 11, "ts": 0.0, "dur": 100.0},
  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 10, "tid": 11, "ts": 10.0, "dur": 30.0},
  {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 10, "tid": 11, "ts": 20.0, "dur": 40.0},
  {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 10, "tid": 11, "ts": 25.0, "dur": 10.0},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 45.0, "dur": 5.0, "args": {"correlation": 5}},
  {"ph": "s", "id": 5, "pid": 10, "tid": 11, "ts": 45.0, "cat": "ac2g", "name": "ac2g"},
  {"ph": "s", "id": 6, "pid": 10, "tid": 11, "ts": 55.0, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "user_annotation", "name": "hccl:all_to_all", "pid": 10, "tid": 11, "ts": 90.0, "dur": 2000.0},
  {"ph": "X", "cat": "cpu_op", "name": "step", "pid": 10, "tid": 11, "ts": 100.0, "dur": 100.0},
  {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 10, "tid": 0, "ts": 1.0, "dur": 10.0},
  {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 10, "tid": 0, "ts": 5.0, "dur": 10.0},
  {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 50.0, "dur": 20.0, "args": {"correlation": 5}},
  {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 50.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 60.0, "dur": 20.0},
  {"ph": "f", "id": 6, "pid": 0, "tid": 7, "ts": 60.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]}
JSON
    roundtrip "$TMP/overlap.json"
    # The extra tracks come back as their thread's events: no thread of their own, no name.
    if grep -q 'overlaps, lane' "$TMP/overlap.json.back.json" ||
        ! grep -q '"tid": 11, "args": {"name": "main"}' "$TMP/overlap.json.back.json"; then
        echo "FAIL  overlap: the JSON converted back names threads after the extra tracks:"
        grep '"thread_name"' "$TMP/overlap.json.back.json"; fail=1
    fi
    "$STROBE" convert "$TMP/overlap.json" "$TMP/overlap.pftrace" 2>"$TMP/err"
    want="4 slice(s) overlap a slice without nesting in it: kept whole on 3 extra track(s)"
    if grep -q "$want" "$TMP/err"; then
        echo "ok    overlap: $(cat "$TMP/err")"
    else
        echo "FAIL  overlap: stderr '$(cat "$TMP/err")', want '$want'"; fail=1
    fi
    if [ -x "$TP" ]; then
        # Perfetto puts the extra tracks with their thread: 7 slices of tid 11, 2 on stream 7's
        # tracks, and the flow from "b" to "k2" is drawn.
        q() { flock -s "$VLOCK" "$TP" "$TMP/overlap.pftrace" --sql "$1" 2>&1 | tail -1; }
        n11=$(q "select count(*) from slice s join thread_track tt on s.track_id = tt.id join thread using(utid) where tid = 11")
        ns7=$(q "select count(*) from slice s join track t on s.track_id = t.id where t.name like 'stream 7%'")
        nfl=$(q "select count(*) from flow f join slice a on f.slice_out = a.id join slice b on f.slice_in = b.id where a.name = 'b' and b.name = 'k2'")
        if [ "$n11" = 7 ] && [ "$ns7" = 2 ] && [ "$nfl" = 1 ]; then
            echo "ok    overlap: Perfetto shows the extra tracks with their thread and stream"
        else
            echo "FAIL  overlap: Perfetto: $n11 slices of tid 11 (want 7), $ns7 on stream 7 (2)," \
                "$nfl flows b -> k2 (1)"
            fail=1
        fi
    fi
    validate_pf "$TMP/overlap.pftrace"
    printf '\x0a\x7f\x40\x01' >"$TMP/past_end.pftrace"
    printf '\x0a\x03\x40\xff\xff' >"$TMP/trunc.pftrace"
    printf 'garbage, not a trace' >"$TMP/garbage.pftrace"
    : >"$TMP/empty.pftrace"
    printf '{"traceEvents": [' >"$TMP/cut.json"
    printf 'not json' >"$TMP/bad.json"
    expect_bad "length past the end" "$TMP/past_end.pftrace" "$TMP/o.json"
    expect_bad "truncated varint" "$TMP/trunc.pftrace" "$TMP/o.json"
    expect_bad "garbage .pftrace" "$TMP/garbage.pftrace" "$TMP/o.json"
    expect_bad "empty .pftrace" "$TMP/empty.pftrace" "$TMP/o.json"
    expect_bad "JSON cut inside the event array, no events" "$TMP/cut.json" "$TMP/o.pftrace"
    expect_bad "not JSON" "$TMP/bad.json" "$TMP/o.pftrace"
    expect_bad "missing input" "$TMP/nonexistent.json" "$TMP/o.pftrace"
    # A missing output folder: the system's reason, not "a system call failed".
    printf '{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1}]}' >"$TMP/one.json"
    for out in "$TMP/no_such_folder/o.pftrace" "$TMP/no_such_folder/o.json"; do
        src=$TMP/one.json
        [ "${out%.json}" != "$out" ] && src=$TMP/o_one.pftrace &&
            "$STROBE" convert "$TMP/one.json" "$src" >/dev/null 2>&1
        expect_bad "missing output folder ($out)" "$src" "$out"
        grep -q "No such file or directory" "$TMP/err" ||
            { echo "FAIL  missing output folder ($out): not the system's reason: $(cat "$TMP/err")"; fail=1; }
    done
    expect_bad "no output" "$TMP/bad.json"
    expect_bad "unknown option" --frobnicate a b
    expect_bad "JSON to JSON" "$TMP/bad.json" "$TMP/o.json"
    for c in info summary check; do
        timeout $LIMIT "$STROBE" $c "$TMP/past_end.pftrace" >/dev/null 2>"$TMP/err"
        rc=$?
        if [ $rc -ne 2 ] || ! grep -q "Perfetto trace" "$TMP/err"; then
            echo "FAIL  strobe $c on a bad .pftrace: exit $rc: $(cat "$TMP/err")"; fail=1
        fi
    done
    # Ids that Perfetto's descriptors cannot hold are converted, and said so: never cut silently.
    printf '{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1,"pid":9223372036854775807,"tid":1},{"ph":"X","name":"b","ts":1,"dur":1,"pid":7,"tid":4294967297}]}' >"$TMP/wide.json"
    timeout $LIMIT "$STROBE" convert "$TMP/wide.json" "$TMP/wide.pftrace" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "2 track(s) with a pid outside" "$TMP/err"; then
        echo "FAIL  wide ids: exit $rc, stderr: $(cat "$TMP/err")"; fail=1
    fi
    # Standard input, either way, and a Perfetto trace on standard input with a JSON output.
    "$STROBE" convert - "$TMP/stdin.pftrace" <"$TMP/wide.json" 2>/dev/null &&
        "$STROBE" convert - "$TMP/stdin.json" <"$TMP/stdin.pftrace" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 0 ] || [ "$(x_count "$TMP/stdin.json")" != 2 ]; then
        echo "FAIL  convert from standard input: exit $rc: $(cat "$TMP/err")"; fail=1
    fi
    "$STROBE" convert - "$TMP/stdin2.json" <"$TMP/wide.json" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q "both JSON" "$TMP/err"; then
        echo "FAIL  JSON on standard input to JSON: exit $rc: $(cat "$TMP/err")"; fail=1
    fi
    exit $fail
fi

if [ ! -d "$SHARED/traces" ]; then
    echo "SKIP: $SHARED/traces not found (no ../shared beside the project)"
    exit 77
fi
for t in "$SHARED"/traces/*.json "$SHARED"/traces/*.json.gz; do
    [ -f "$t" ] && roundtrip "$t"
done
for t in "$SHARED"/validators/samples/bad/*; do
    [ -f "$t" ] || continue
    name=$(basename "$t")
    timeout $LIMIT "$STROBE" convert "$t" "$TMP/$name.pftrace" >/dev/null 2>"$TMP/err"
    rc=$?
    # Some samples are legal traces (converted: 0); the others must fail with a message (2).
    if [ $rc -eq 0 ] || { [ $rc -eq 2 ] && [ -s "$TMP/err" ]; }; then
        echo "ok    sample $name: exit $rc $(head -1 "$TMP/err")"
    else
        echo "FAIL  sample $name: exit $rc: $(cat "$TMP/err")"; fail=1
    fi
done
exit $fail

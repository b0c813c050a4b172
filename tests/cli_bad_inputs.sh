#!/usr/bin/env bash
# cli_bad_inputs.sh: every strobe subcommand on bad inputs must fail cleanly: exit 2 with exactly
# one line on stderr naming the file and the problem, never a crash, a sanitizer report or a hang.
#
# Usage: cli_bad_inputs.sh STROBE SHARED_DIR WORK_DIR [generated|samples]
#   generated  inputs made here (empty, directory, not JSON, truncated and broken gzip, overlong and
#              out-of-range numbers, deep nesting, a 100 MB string, missing file ...) and usage
#              errors; needs nothing from SHARED_DIR
#   samples    every file in SHARED_DIR/validators/samples/bad/; exits 77 when that folder is
#              missing. Samples that are legal traces load: `check` exits 0 or 1 as listed below,
#              the other subcommands 0.
# A subcommand that is still a placeholder ("not written yet") is skipped with a note.
set -u
STROBE=$1
SHARED=$2
WORK=$3
MODE=${4:-generated}
COMMANDS="info check summary kernels stacks flamegraph"
LIMIT=60

fail=0
runs=0
mkdir -p "$WORK"
TMP=$(mktemp -d "$WORK/run.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Subcommands that exist; the placeholders print "not written yet" as their usage text.
ACTIVE=""
for c in $COMMANDS; do
    if "$STROBE" help "$c" 2>/dev/null | grep -q "not written yet"; then
        echo "note: strobe $c is a placeholder; skipped"
    else
        ACTIVE="$ACTIVE $c"
    fi
done

# run_case CMD FILE WANT: runs `strobe CMD FILE` and checks the outcome. WANT is the exit code
# expected, or "any"; on exit 2, stderr must be exactly one line that contains the file's name.
run_case() {
    local cmd=$1 file=$2 want=$3
    local out="$TMP/out" err="$TMP/err"
    runs=$((runs + 1))
    timeout -k 5 "$LIMIT" "$STROBE" "$cmd" "$file" >"$out" 2>"$err"
    local rc=$?
    local lines
    lines=$(wc -l <"$err")
    local why=""
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        why="did not finish in ${LIMIT}s"
    elif [ "$rc" -ge 128 ]; then
        why="killed by signal $((rc - 128))"
    elif grep -qiE "Sanitizer|runtime error|core dumped" "$err"; then
        why="sanitizer report"
    elif [ "$want" != any ] && [ "$rc" -ne "$want" ]; then
        why="exit $rc, expected $want"
    elif [ "$rc" -eq 2 ] && [ "$lines" -ne 1 ]; then
        why="$lines lines on stderr, expected 1"
    elif tr -d '\n' <"$err" | LC_ALL=C grep -q '[[:cntrl:]]'; then
        why="a control character on stderr (names from the file must be escaped)"
    elif [ "$rc" -eq 2 ] && ! grep -qF -- "$(basename "$file")" "$err"; then
        why="stderr does not name the file"
    fi
    printf '%-8s %-28s -> %s  %s\n' "$cmd" "$(basename "$file")" "$rc" "$(head -c 160 "$err" | head -n 1)"
    if [ -n "$why" ]; then
        echo "FAIL: strobe $cmd $file: $why"
        sed 's/^/    stderr: /' "$err" | head -20
        fail=1
    fi
}

# stdin_case CMD FILE WANT: `strobe CMD -` with FILE on standard input; as run_case, but an error
# names "<stdin>".
stdin_case() {
    local cmd=$1 file=$2 want=$3
    local err="$TMP/err"
    runs=$((runs + 1))
    timeout -k 5 "$LIMIT" "$STROBE" "$cmd" - <"$file" >/dev/null 2>"$err"
    local rc=$?
    local why=""
    if [ "$rc" -ge 124 ]; then
        why="exit $rc (timeout or signal)"
    elif grep -qiE "Sanitizer|runtime error" "$err"; then
        why="sanitizer report"
    elif [ "$rc" -ne "$want" ]; then
        why="exit $rc, expected $want"
    elif [ "$rc" -eq 2 ] && { [ "$(wc -l <"$err")" -ne 1 ] || ! grep -qF "<stdin>" "$err"; }; then
        why="stderr is not one line naming <stdin>"
    fi
    printf '%-8s %-28s -> %s  %s\n' "$cmd" "- <$(basename "$file")" "$rc" "$(head -n 1 "$err")"
    if [ -n "$why" ]; then
        echo "FAIL: strobe $cmd - < $file: $why"
        sed 's/^/    stderr: /' "$err" | head -20
        fail=1
    fi
}

# usage_case WANT_TEXT ARGS...: a usage error: exit 2, one line on stderr that mentions usage.
usage_case() {
    local err="$TMP/err"
    runs=$((runs + 1))
    timeout -k 5 "$LIMIT" "$STROBE" "$@" >/dev/null 2>"$err"
    local rc=$?
    printf '%-40s -> %s  %s\n' "strobe $*" "$rc" "$(head -n 1 "$err")"
    if [ "$rc" -ne 2 ] || [ "$(wc -l <"$err")" -ne 1 ] || ! grep -qi "usage\|--help" "$err"; then
        echo "FAIL: strobe $*: exit $rc, expected 2 and one line with a usage hint"
        fail=1
    fi
}

generated() {
    local d="$TMP/in"
    mkdir -p "$d"
    : >"$d/empty.json"
    mkdir "$d/a_directory.json"
    printf 'this is not json\n' >"$d/not_json.json"
    head -c 4096 /dev/urandom >"$d/binary.json"
    printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]} trailing' \
        >"$d/trailing_garbage.json"
    printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,' >"$d/cut_in_event.json"
    printf '{"traceEvents":[{"ph":"X","name":"unterminated string' >"$d/cut_in_string.json"
    printf '{"traceEvents":5}' >"$d/events_not_array.json"
    # A gzip cut in half, and a gzip header followed by garbage.
    local ev='{"ph":"X","cat":"c","name":"op","pid":1,"tid":1,"ts":1.000,"dur":1.000}'
    {
        printf '{"traceEvents":['
        for i in $(seq 1 2000); do printf '%s,' "$ev"; done
        printf '%s]}' "$ev"
    } | gzip -c >"$TMP/full.json.gz"
    head -c $(($(stat -c %s "$TMP/full.json.gz") / 2)) "$TMP/full.json.gz" >"$d/truncated.json.gz"
    printf '\037\213\010\000garbage after a gzip header' >"$d/broken.json.gz"
    # Numbers: longer than any trace needs, and a base time beyond int64 nanoseconds.
    {
        printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1'
        head -c 1000 /dev/zero | tr '\0' 0
        printf ',"dur":1}]}'
    } >"$d/overlong_number.json"
    printf '{"baseTimeNanoseconds":1e400,"traceEvents":[]}' >"$d/base_out_of_range.json"
    # Nesting far beyond the reader's limit, inside an event's args.
    {
        printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1,"args":'
        head -c 100000 /dev/zero | tr '\0' '['
        head -c 100000 /dev/zero | tr '\0' ']'
        printf '}]}'
    } >"$d/deep_nesting.json"
    # One 100 MB string.
    {
        printf '{"traceEvents":[{"ph":"X","name":"'
        head -c $((100 * 1024 * 1024)) /dev/zero | tr '\0' a
        printf '","pid":1,"tid":1,"ts":1,"dur":1}]}'
    } >"$d/huge_string.json"

    for f in empty.json a_directory.json not_json.json binary.json trailing_garbage.json \
        cut_in_event.json cut_in_string.json events_not_array.json truncated.json.gz \
        broken.json.gz overlong_number.json base_out_of_range.json deep_nesting.json \
        huge_string.json; do
        for c in $ACTIVE; do run_case "$c" "$d/$f" 2; done
    done
    for c in $ACTIVE; do run_case "$c" "$d/no_such_file.json" 2; done

    # Out-of-range numbers inside an event are not fatal: the event is bad (check finds it; the
    # others count it and go on).
    printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1e400,"dur":1},{"ph":"X","name":"b","pid":1,"tid":1,"ts":99999999999999999999,"dur":-1e999}]}' \
        >"$d/event_out_of_range.json"
    for c in $ACTIVE; do
        if [ "$c" = check ]; then run_case "$c" "$d/event_out_of_range.json" 1; else
            run_case "$c" "$d/event_out_of_range.json" 0; fi
    done

    # Times each within int64 ns whose sum (the end) is not: the duration is out of range for
    # check (exit 1); the other commands skip it, and no sum overflows (UBSan would report it).
    printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":9000000000000000,"dur":9000000000000000},{"ph":"X","name":"b","pid":1,"tid":1,"ts":1,"dur":2}]}' \
        >"$d/end_overflow.json"
    for c in $ACTIVE; do
        if [ "$c" = check ]; then run_case "$c" "$d/end_overflow.json" 1; else
            run_case "$c" "$d/end_overflow.json" 0; fi
    done

    # Times near the int64 ns limit: a ts at 2^62 ns and beyond (a bad event), an end beyond it
    # (end_out_of_range), and durations whose sums, spans and self times would overflow. No
    # command may overflow (UBSan) or print a negative duration.
    {
        printf '{"traceEvents":['
        printf '{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":9223372036854775.000,"dur":1},'
        printf '{"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":-4611686018427387.000,"dur":4611686018427387.000},'
        printf '{"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":2,"ts":-4611686018427387.000,"dur":9223372036854775.000},'
        printf '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":-4611686018427387.000,"dur":4611686018427387.000},'
        printf '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":4611686018427386.000},'
        printf '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":8,"ts":1,"dur":4611686018427386.000},'
        printf '{"ph":"X","cat":"cpu_op","name":"d","pid":1,"tid":1,"ts":1,"dur":4611686018427386.000}]}'
    } >"$d/huge_times.json"
    for c in $ACTIVE; do
        if [ "$c" = check ]; then run_case "$c" "$d/huge_times.json" 1; else
            run_case "$c" "$d/huge_times.json" 0; fi
    done
    if "$STROBE" info "$d/huge_times.json" | grep -q "duration -"; then
        echo "FAIL: strobe info huge_times.json: a negative duration"
        fail=1
    fi
    if ! "$STROBE" convert "$d/huge_times.json" "$TMP/huge_times.pftrace" 2>"$TMP/err" ||
        ! grep -q "event(s) with a time at or beyond" "$TMP/err"; then
        echo "FAIL: strobe convert huge_times.json: not converted, or the skipped events not said"
        fail=1
    fi

    # More perf counter names than the model keeps: the rest are left out, and said so.
    {
        printf '{"strobe_perf_events":['
        for k in $(seq 0 39); do printf '%s"p%d"' "$([ "$k" = 0 ] || echo ,)" "$k"; done
        printf '],"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1,"args":{"p0":5,"p39":7}}]}'
    } >"$d/many_perf.json"
    for c in summary info; do
        if ! "$STROBE" "$c" "$d/many_perf.json" >/dev/null 2>"$TMP/err" ||
            ! grep -q "8 perf counter name(s) in strobe_perf_events past the first 32" "$TMP/err"; then
            echo "FAIL: strobe $c many_perf.json: the names left out are not said: $(cat "$TMP/err")"
            fail=1
        fi
    done

    # Keys and names from the file in error messages: a newline and a terminal escape, which
    # must come out escaped (run_case: one line, no control characters).
    printf '{"traceEvents":[],"a\\nb\\u001b[2J":' >"$d/ctl_in_key.json"
    printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1,"args":{"x\\ny":[' \
        >"$d/ctl_in_args.json"
    for c in $ACTIVE; do
        run_case "$c" "$d/ctl_in_key.json" 2
        run_case "$c" "$d/ctl_in_args.json" 2
    done

    # Format by content and standard input: a Perfetto trace named .json, the same gzip'd as
    # .json.gz and without a suffix, a JSON trace named .pftrace, and each through "-".
    local pf="$TMP/pf.pftrace"
    if "$STROBE" convert "$TMP/full.json.gz" "$pf" 2>"$TMP/err"; then
        cp "$pf" "$d/perfetto_named.json"
        gzip -c "$pf" >"$d/perfetto_gz.json.gz"
        gzip -c "$pf" >"$d/perfetto_gz_noext"
        zcat "$TMP/full.json.gz" >"$d/json_named.pftrace"
        for f in perfetto_named.json perfetto_gz.json.gz perfetto_gz_noext json_named.pftrace; do
            for c in $ACTIVE; do
                run_case "$c" "$d/$f" 0
                stdin_case "$c" "$d/$f" 0
            done
        done
        stdin_case info "$TMP/full.json.gz" 0
        # Cut inside a packet (also gzip'd): read up to the last whole packet, with a warning.
        local n
        n=$(stat -c %s "$pf")
        head -c $((n - 5)) "$pf" >"$d/cut.pftrace"
        gzip -c "$d/cut.pftrace" >"$d/cut.pftrace.gz"
        for f in cut.pftrace cut.pftrace.gz; do
            for c in $ACTIVE; do
                run_case "$c" "$d/$f" 0
                if ! grep -q "cut inside a packet" "$TMP/err"; then
                    echo "FAIL: strobe $c $f: the cut is not reported"
                    fail=1
                fi
            done
            if ! "$STROBE" info "$d/$f" 2>/dev/null | grep -q "^unterminated: *yes"; then
                echo "FAIL: strobe info $f: not shown as unterminated"
                fail=1
            fi
        done
    else
        echo "FAIL: strobe convert full.json.gz $pf:"
        sed 's/^/    /' "$TMP/err"
        fail=1
    fi
    # Standard input that is not a trace fails as a file does, naming "<stdin>".
    for c in $ACTIVE; do stdin_case "$c" "$d/not_json.json" 2; done

    # Usage errors.
    for c in $ACTIVE; do
        usage_case "$c"
        usage_case "$c" --no-such-option "$d/empty.json"
        usage_case "$c" "$d/empty.json" "$d/not_json.json"
        "$STROBE" "$c" --help >"$TMP/help" 2>&1
        if [ $? -ne 0 ] || ! grep -q SYNOPSIS "$TMP/help" || ! grep -q "EXIT STATUS" "$TMP/help"; then
            echo "FAIL: strobe $c --help: exit non-zero or no SYNOPSIS / EXIT STATUS"
            fail=1
        fi
    done
    # strobe open (issue 33) checks the file before it listens: a file it cannot serve is one
    # line and exit 2, never a server that waits (a FIFO must not block the open either).
    mkfifo "$d/a_fifo.json"
    printf 'x' >"$d/unreadable.json"
    chmod 000 "$d/unreadable.json"
    cp "$d/not_json.json" "$d/wrong_suffix.txt"
    for f in empty.json a_directory.json not_json.json no_such_file.json a_fifo.json \
        wrong_suffix.txt unreadable.json; do
        if [ "$f" = unreadable.json ] && [ "$(id -u)" = 0 ]; then
            echo "note: running as root, unreadable.json is readable; skipped"
            continue
        fi
        run_case open "$d/$f" 2
    done
    chmod 600 "$d/unreadable.json"
    printf '{"traceEvents":[]}' >"$d/ok.json"
    usage_case open
    usage_case open --no-browser
    usage_case open --no-such-option "$d/ok.json"
    usage_case open "$d/ok.json" "$d/ok.json"
    usage_case open -
    for p in abc 70000 -1 "" 9001x; do usage_case open --port "$p" "$d/ok.json"; done
    for o in ftp://x https://a/b "https://a"$'\r\n''X: y' https:// ""; do
        usage_case open --origin "$o" "$d/ok.json"
    done
    "$STROBE" open --help >"$TMP/help" 2>&1
    if [ $? -ne 0 ] || ! grep -q SYNOPSIS "$TMP/help" || ! grep -q "EXIT STATUS" "$TMP/help"; then
        echo "FAIL: strobe open --help: exit non-zero or no SYNOPSIS / EXIT STATUS"
        fail=1
    fi

    "$STROBE" no-such-command >/dev/null 2>&1
    if [ $? -ne 2 ]; then
        echo "FAIL: strobe no-such-command: exit code is not 2"
        fail=1
    fi
    export_cases "$d"
}

# strobe export --pprof (which takes -o and a format, so it is not in COMMANDS): unreadable
# traces, a trace without the chosen metric's source, an output that cannot be written (the
# system's reason said, no file left), usage errors.
export_case() { # WANT_TEXT NAME_IN_ERROR ARGS...: exit 2, one line with both texts, no output
    local want=$1 name=$2 err="$TMP/err"
    shift 2
    runs=$((runs + 1))
    rm -f "$TMP/export.pb.gz"
    timeout -k 5 "$LIMIT" "$STROBE" export --pprof -q "$@" >/dev/null 2>"$err"
    local rc=$?
    printf '%-8s %-40s -> %s  %s\n' export "$*" "$rc" "$(head -n 1 "$err")"
    if [ "$rc" -ne 2 ] || [ "$(wc -l <"$err")" -ne 1 ] || ! grep -qF -- "$want" "$err" ||
        ! grep -qF -- "$name" "$err" || [ -e "$TMP/export.pb.gz" ]; then
        echo "FAIL: strobe export --pprof $*: exit $rc, expected 2 and one line with '$want' and '$name', no file"
        sed 's/^/    stderr: /' "$err" | head -5
        fail=1
    fi
}

export_cases() {
    local d=$1 o="$TMP/export.pb.gz"
    local ranges="$TMP/export_ranges.json"
    printf '{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":5}]}' >"$ranges"
    export_case "No such file or directory" no_such_file.json "$d/no_such_file.json" -o "$o"
    export_case "not_json.json" not_json.json "$d/not_json.json" -o "$o"
    export_case "a_directory.json" a_directory.json "$d/a_directory.json" -o "$o"
    export_case "truncated.json.gz" truncated.json.gz "$d/truncated.json.gz" -o "$o"
    export_case "no CPU samples" export_ranges.json "$ranges" --samples -o "$o"
    export_case "no allocations" export_ranges.json "$ranges" --metric memory -o "$o"
    export_case "no device time" export_ranges.json "$ranges" --metric self_cuda -o "$o"
    printf '{"traceEvents":[]}' >"$TMP/empty_events.json"
    export_case "no operators" empty_events.json "$TMP/empty_events.json" -o "$o"
    export_case "No such file or directory" "$TMP/no_folder/x.pb.gz" "$ranges" -o "$TMP/no_folder/x.pb.gz"
    export_case "Not a directory" "$d/not_json.json/x.pb.gz" "$ranges" -o "$d/not_json.json/x.pb.gz"
    if [ "$(id -u)" -ne 0 ]; then
        mkdir -p "$TMP/read_only" && chmod 555 "$TMP/read_only"
        export_case "Permission denied" "$TMP/read_only/x.pb.gz" "$ranges" -o "$TMP/read_only/x.pb.gz"
        chmod 755 "$TMP/read_only"
    fi
    if [ -w /dev/full ]; then
        export_case "No space left on device" /dev/full "$ranges" -o /dev/full
    fi
    # An existing output stays as it was when the trace is bad.
    printf 'keep' >"$TMP/keep.pb.gz"
    "$STROBE" export --pprof -q "$d/not_json.json" -o "$TMP/keep.pb.gz" 2>/dev/null
    if [ "$(cat "$TMP/keep.pb.gz")" != keep ]; then
        echo "FAIL: strobe export of a bad trace changed an existing output"
        fail=1
    fi
    usage_case export "$ranges" -o "$o"
    usage_case export --pprof "$ranges"
    usage_case export --pprof "$ranges" -o "$o" --metric nonsense
    usage_case export --pprof "$ranges" -o "$o" --hz 0
}

# What `strobe check` says about each sample that loads (0 clean, 1 findings); the samples that
# are not traces (no traceEvents, not JSON) fail for every subcommand (2).
check_want() {
    case $1 in
    no_traceEvents.json | not_json.json) echo 2 ;;
    b_without_e.json | be_mismatch.json | e_without_b.json | misnested_X.json | missing_name.json | \
        missing_ph.json | nan_like.json | negative_dur.json | null_event.json | string_ts.json | \
        x_no_dur.json) echo 1 ;;
    be_interleaved_threads.json | be_no_name_on_E.json | empty.json | flow_inside_slice.json | \
        flow_same_cat.json | missing_cat.json | string_tid.json | unsorted.json | \
        unterminated_array.json) echo 0 ;;
    *) echo unknown ;;
    esac
}

samples() {
    local dir="$SHARED/validators/samples/bad"
    if [ ! -d "$dir" ]; then
        echo "SKIP: $dir not found (set STROBE_SHARED_DIR)"
        exit 77
    fi
    for f in "$dir"/*; do
        local name
        name=$(basename "$f")
        case $name in *.md) continue ;; esac
        local want
        want=$(check_want "$name")
        for c in $ACTIVE; do
            if [ "$want" = unknown ]; then
                # A sample added after this list: any clean outcome will do.
                echo "note: $name is not in the expectation list; add it"
                run_case "$c" "$f" any
            elif [ "$want" = 2 ] || [ "$c" = check ]; then
                run_case "$c" "$f" "$want"
            else
                run_case "$c" "$f" 0
            fi
        done
    done
}

case $MODE in
generated) generated ;;
samples) samples ;;
*)
    echo "usage: $0 STROBE SHARED_DIR WORK_DIR [generated|samples]" >&2
    exit 2
    ;;
esac

echo "$runs runs"
if [ "$fail" -ne 0 ]; then
    echo "FAILED"
    exit 1
fi
echo "OK"

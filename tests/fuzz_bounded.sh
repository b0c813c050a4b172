#!/usr/bin/env bash
# fuzz_bounded.sh: libFuzzer on the trace reader (tests/fuzz_reader.c) and on the CLI's model with
# its subcommands (tests/fuzz_model.c), for a bounded time each, as a CTest test.
#
# Usage: fuzz_bounded.sh SOURCE_DIR WORK_DIR [SECONDS]   (default 30 s per harness)
#
# Each harness is compiled by tests/fuzz_build.sh into WORK_DIR and run on a copy of its seed
# corpus (new inputs stay in WORK_DIR, not in the source tree). With FUZZ_PARALLEL=1 (as
# scripts/fuzz.sh sets) the harnesses run at the same time instead of one after the other. A
# crash, a leak, a sanitizer report or a timeout fails the test and names the file where libFuzzer
# saved the input; copy it into tests/corpus/reader/ or tests/corpus/model/, where test_reader and
# test_cli_check replay it, and fix the bug. Exits 77 (skip) when clang or libFuzzer is missing.
set -u
SRC=$1
WORK=$2
SECS=${3:-30}

"$(dirname "$0")/fuzz_build.sh" "$SRC" "$WORK" || exit $?
WORK=$(cd "$WORK" && pwd)

status=0
# fuzz NAME FLAGS CORPUS_DIR...: runs one harness for SECS seconds; writes its exit code to
# WORK/NAME.status and its report to WORK/NAME.report.
fuzz() {
    local name=$1 flags=$2
    shift 2
    local corpus="$WORK/corpus_$name" crashes="$WORK/crashes_$name" report="$WORK/$name.report"
    mkdir -p "$corpus" "$crashes"
    rm -f "$WORK/$name.status"
    for d in "$@"; do [ -d "$d" ] && cp -n "$d"/* "$corpus"/ 2>/dev/null; done
    {
        echo "fuzzing $name for ${SECS}s (corpus: $(ls "$corpus" | wc -l) inputs)"
        local t0=$SECONDS
        "$WORK/$name" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
            -dict="$WORK/trace.dict" -artifact_prefix="$crashes/" -print_final_stats=1 \
            $flags "$corpus" >"$WORK/$name.log" 2>&1
        local rc=$?
        echo "    $name: ran $((SECONDS - t0)) s, exit $rc"
        grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|stat::new_units_added" "$WORK/$name.log" |
            sed "s/^/    $name: /"
        if [ "$rc" -ne 0 ]; then
            echo "FAIL: $name exited $rc; the end of its log ($WORK/$name.log):"
            tail -n 40 "$WORK/$name.log" | sed 's/^/    /'
            if [ -n "$(ls "$crashes" 2>/dev/null)" ]; then
                echo "the input that failed was saved as:"
                ls "$crashes" | sed "s|^|    $crashes/|"
                echo "copy it into $SRC/tests/corpus/${name#fuzz_}/ so that a regular test replays it"
            fi
        fi
        echo "$rc" >"$WORK/$name.status"
    } >"$report"
}

# The subcommands print a report (or a line on stderr) per input: -close_fd_mask=3 drops them.
if [ "${FUZZ_PARALLEL:-0}" = 1 ]; then
    fuzz fuzz_reader "" "$SRC/tests/corpus/reader" &
    fuzz fuzz_model -close_fd_mask=3 "$SRC/tests/corpus/model" "$SRC/tests/corpus/reader" &
    wait
else
    fuzz fuzz_reader "" "$SRC/tests/corpus/reader"
    fuzz fuzz_model -close_fd_mask=3 "$SRC/tests/corpus/model" "$SRC/tests/corpus/reader"
fi
for name in fuzz_reader fuzz_model; do
    cat "$WORK/$name.report"
    [ "$(cat "$WORK/$name.status" 2>/dev/null)" = 0 ] || status=1
done
[ "$status" -eq 0 ] && echo OK
exit "$status"

#!/usr/bin/env bash
# fuzz_bounded.sh: libFuzzer on the trace reader (tests/fuzz_reader.c) and on the CLI's model with
# `check` and `info` (tests/fuzz_model.c), for a bounded time each, as a CTest test.
#
# Usage: fuzz_bounded.sh SOURCE_DIR WORK_DIR [SECONDS]   (default 30 s per harness)
#
# Each harness is compiled with clang -fsanitize=fuzzer,address,undefined into WORK_DIR and run on a
# copy of its seed corpus (new inputs stay in WORK_DIR, not in the source tree). A crash, a leak,
# a sanitizer report or a timeout fails the test and names the file where libFuzzer saved the
# input; copy it into tests/corpus/reader/ or tests/corpus/model/, where test_reader and
# test_cli_check replay it, and fix the bug. Exits 77 (skip) when clang or libFuzzer is missing.
set -u
SRC=$1
WORK=$2
SECS=${3:-30}

CC=${FUZZ_CC:-clang}
if ! command -v "$CC" >/dev/null 2>&1; then
    echo "SKIP: $CC not found"
    exit 77
fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    >"$WORK/probe.c"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$WORK/probe.c" -o "$WORK/probe" >"$WORK/probe.log" 2>&1; then
    echo "SKIP: $CC cannot build a libFuzzer binary:"
    sed 's/^/    /' "$WORK/probe.log" | head -5
    exit 77
fi

FLAGS=(-std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined -I"$SRC/include" -I"$SRC/src" -I"$SRC/src/reader" -I"$SRC/cli")
READER=("$SRC"/src/reader/*.c)
MODEL=("$SRC/cli/model.c" "$SRC/cli/common.c" "$SRC/cli/cmd_check.c" "$SRC/cli/cmd_info.c" "$SRC/src/util/strpool.c"
    "$SRC/src/util/strtab.c" "$SRC/src/core/error.c")

echo "building the harnesses with $("$CC" --version | head -n 1)"
"$CC" "${FLAGS[@]}" "$SRC/tests/fuzz_reader.c" "${READER[@]}" -lz -o "$WORK/fuzz_reader" || exit 1
"$CC" "${FLAGS[@]}" "$SRC/tests/fuzz_model.c" "${MODEL[@]}" "${READER[@]}" -lz -o "$WORK/fuzz_model" ||
    exit 1

# Tokens of the trace format, so that the fuzzer reaches past the JSON grammar sooner.
cat >"$WORK/trace.dict" <<'EOF'
"\"traceEvents\""
"\"ph\""
"\"name\""
"\"cat\""
"\"ts\""
"\"dur\""
"\"pid\""
"\"tid\""
"\"id\""
"\"bp\""
"\"args\""
"\"X\""
"\"M\""
"\"B\""
"\"E\""
"\"s\""
"\"f\""
"\"i\""
"\"C\""
"\"baseTimeNanoseconds\""
"\"schemaVersion\""
"\"deviceProperties\""
"\"thread_name\""
"\"process_name\""
"\"External id\""
"\"correlation\""
"\"Call stack\""
"\"Input Dims\""
"\"[memory]\""
"\"Bytes\""
"\"kernel\""
"\"cpu_op\""
"\"ac2g\""
"1e400"
"-0.0005"
"\"stream 7\""
EOF

status=0
# fuzz NAME FLAGS CORPUS_DIR...: runs one harness for SECS seconds.
fuzz() {
    local name=$1 flags=$2
    shift 2
    local corpus="$WORK/corpus_$name" crashes="$WORK/crashes_$name"
    mkdir -p "$corpus" "$crashes"
    for d in "$@"; do [ -d "$d" ] && cp -n "$d"/* "$corpus"/ 2>/dev/null; done
    echo "fuzzing $name for ${SECS}s (corpus: $(ls "$corpus" | wc -l) inputs)"
    "$WORK/$name" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
        -dict="$WORK/trace.dict" -artifact_prefix="$crashes/" -print_final_stats=1 \
        $flags "$corpus" >"$WORK/$name.log" 2>&1
    local rc=$?
    grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|stat::new_units_added" "$WORK/$name.log" |
        sed "s/^/    $name: /"
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: $name exited $rc; the end of its log ($WORK/$name.log):"
        tail -n 40 "$WORK/$name.log" | sed 's/^/    /'
        local saved
        saved=$(ls "$crashes" 2>/dev/null)
        if [ -n "$saved" ]; then
            echo "the input that failed was saved as:"
            ls "$crashes" | sed "s|^|    $crashes/|"
            echo "copy it into $SRC/tests/corpus/${name#fuzz_}/ so that a regular test replays it"
        fi
        status=1
    fi
}

fuzz fuzz_reader "" "$SRC/tests/corpus/reader"
# The subcommands print a report (or a line on stderr) per input: -close_fd_mask=3 drops them.
fuzz fuzz_model -close_fd_mask=3 "$SRC/tests/corpus/model" "$SRC/tests/corpus/reader"
[ "$status" -eq 0 ] && echo OK
exit "$status"

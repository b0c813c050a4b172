#!/usr/bin/env bash
# fuzz_build.sh: builds the libFuzzer harnesses and their dictionary, for tests/fuzz_bounded.sh (the
# CTest test) and scripts/fuzz.sh (longer runs).
#
# Usage: fuzz_build.sh SOURCE_DIR WORK_DIR
#
# Writes into WORK_DIR: fuzz_reader (tests/fuzz_reader.c with the trace reader), fuzz_model
# (tests/fuzz_model.c with the trace model, src/model, the CLI's subcommands check, info, summary,
# kernels, stacks and convert, the HTA analyses kernels uses, the reader, the trace layer convert
# writes through, the util layer with the log and the error table), both compiled with clang
# -fsanitize=fuzzer,address,undefined, and trace.dict (tokens of the trace format). FUZZ_CC picks the
# compiler (default clang). Exits 0 when built, 77 when the compiler or libFuzzer is missing, 1 when
# a harness does not compile.
set -u
SRC=$1
WORK=$2

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
MODEL=("$SRC"/src/model/*.c "$SRC/cli/common.c" "$SRC/cli/emit.c"
    "$SRC/cli/cmd_check.c" "$SRC/cli/cmd_info.c" "$SRC/cli/cmd_summary.c" "$SRC/cli/cmd_kernels.c"
    "$SRC/cli/cmd_stacks.c" "$SRC/cli/flame.c" "$SRC/cli/cmd_convert.c" "$SRC/cli/outfile.c" "$SRC/cli/merge.c"
    "$SRC/cli/hta.c" "$SRC/cli/mpi.c" "$SRC/cli/heap_print.c" "$SRC/cli/kseq.c" "$SRC/cli/tb.c" "$SRC/cli/idmap.c"
    "$SRC"/src/util/*.c
    "$SRC"/src/trace/*.c)

echo "building the harnesses with $("$CC" --version | head -n 1)"
"$CC" "${FLAGS[@]}" "$SRC/tests/fuzz_reader.c" "${READER[@]}" -lz -o "$WORK/fuzz_reader" &
reader=$!
"$CC" "${FLAGS[@]}" "$SRC/tests/fuzz_model.c" "${MODEL[@]}" "${READER[@]}" -lz -lm -ldl -pthread \
    -o "$WORK/fuzz_model" || exit 1
wait "$reader" || exit 1

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
"\"Module Hierarchy\""
"\"strobe_perf_events\""
"\"[memory]\""
"\"Bytes\""
"\"Device Type\""
"\"kernel\""
"\"cpu_op\""
"\"cuda_runtime\""
"\"gpu_memcpy\""
"\"ac2g\""
"1e400"
"-0.0005"
"9223372036854775807"
"4611686018427387904"
"9223372036854775.807"
"\"stream 7\""
EOF
exit 0

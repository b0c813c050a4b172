#!/usr/bin/env bash
# fuzz.sh: longer fuzzing runs of every libFuzzer harness (tests/fuzz_reader.c, tests/fuzz_model.c),
# all at the same time, each for the given number of minutes.
#
# Usage: scripts/fuzz.sh --minutes N [--work DIR] [--keep-crashers]
#   --minutes N        how long each harness runs (default 5)
#   --work DIR         where the harnesses, their corpora, logs and crashers go (default
#                      build-fuzz/); the corpora grow from run to run
#   --keep-crashers    copy every crasher found into tests/corpus/reader/ or tests/corpus/model/,
#                      where test_reader and test_cli_check replay it (then fix the bug)
#
# The build and the runs are those of the CTest test (tests/fuzz_build.sh, tests/fuzz_bounded.sh).
# Prints, per harness, how long it ran and with what result; exits 0 when no harness failed, 1
# when one did (its crasher named), 77 when clang or libFuzzer is missing.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MINUTES=5
WORK="$ROOT/build-fuzz"
KEEP=0
while [ $# -gt 0 ]; do
    case $1 in
    --minutes) MINUTES=${2:?--minutes needs a value}; shift 2 ;;
    --minutes=*) MINUTES=${1#*=}; shift ;;
    --work) WORK=${2:?--work needs a value}; shift 2 ;;
    --work=*) WORK=${1#*=}; shift ;;
    --keep-crashers) KEEP=1; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument: $1 (fuzz.sh --help)" >&2; exit 2 ;;
    esac
done
case $MINUTES in
'' | *[!0-9]* | 0) echo "fuzz.sh: --minutes takes a whole number of minutes, 1 or more" >&2; exit 2 ;;
esac

echo "fuzzing every harness for $MINUTES minute(s), at the same time, in $WORK ($(date -u +%H:%M:%S) UTC)"
FUZZ_PARALLEL=1 "$ROOT/tests/fuzz_bounded.sh" "$ROOT" "$WORK" $((MINUTES * 60))
status=$?
echo "done at $(date -u +%H:%M:%S) UTC"
if [ "$KEEP" = 1 ]; then
    for name in reader model; do
        for f in "$WORK/crashes_fuzz_$name"/*; do
            [ -f "$f" ] || continue
            cp "$f" "$ROOT/tests/corpus/$name/"
            echo "kept $(basename "$f") in tests/corpus/$name/"
        done
    done
fi
exit "$status"

#!/bin/bash
# Builds strobe with clang under the given sanitizers and runs its CTest suite there.
# Usage: sanitizer_suite.sh SOURCE_DIR BUILD_DIR SANITIZERS (address,undefined | thread)
set -eu
src=$1 bin=$2 san=$3
if ! command -v clang >/dev/null; then
  echo "SKIP: clang is not installed (scripts/deps.sh --test installs it)"; exit 77
fi
cmake -S "$src" -B "$bin" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DSTROBE_SANITIZE="$san" -DSTROBE_SANITIZER_SUITES=OFF >/dev/null
cmake --build "$bin" -j2 >/dev/null
cd "$bin"
# The checkers, the install test and the fuzzers (which build their own sanitized binaries) run
# in the main suite only.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
ctest --output-on-failure -E "validate_traces|install_consumer|header_compile|fuzz_bounded"

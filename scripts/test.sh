#!/bin/bash
# Runs every test of strobe: the README's second command, and what CI runs.
#
# Builds strobe with gcc (-Wall -Wextra -Werror) into build-test/ and runs CTest there. Besides
# the unit, round-trip, stress and compile tests, CTest runs:
#   sanitize_asan_ubsan, sanitize_tsan  the whole suite again, built with clang under
#                                       AddressSanitizer+UBSan and under ThreadSanitizer;
#   validate_traces                     Perfetto, Chrome DevTools and speedscope on every trace
#                                       the tests write (when ../shared/validators is present);
#   install_consumer                    cmake --install, then find_package and pkg-config users.
#   layering, format                    includes against tests/layers.txt; clang-format.
# CTest never prints why a test was skipped: after its run comes a line per skipped test with the
# reason the test printed (tests/skip_reasons.py, from CTest's JUnit report,
# build-test/Testing/ctest-junit.xml), and then CTest's summary again, so that the output still
# ends with it (.ci/run's promise). The exit status is CTest's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh" --test
shared="$root/../shared"
if [ -x "$shared/validators/setup.sh" ]; then
  echo "strobe: installing the trace checkers (../shared/validators/setup.sh)" >&2
  "$shared/validators/setup.sh" >/dev/null
fi
build=${STROBE_TEST_BUILD_DIR:-$root/build-test}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc \
  -DCMAKE_CXX_COMPILER=g++ -DSTROBE_SANITIZER_SUITES=ON -DSTROBE_SHARED_DIR="$shared" >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
junit="$build/Testing/ctest-junit.xml" log="$build/Testing/ctest-output.txt"
rm -f "$junit"
mkdir -p "$build/Testing"
rc=0
ctest --output-on-failure -j"$(nproc)" --output-junit "$junit" "$@" 2>&1 | tee "$log" ||
  rc=${PIPESTATUS[0]}
if command -v python3 >/dev/null && [ -f "$junit" ]; then
  why=$(python3 "$root/tests/skip_reasons.py" "$junit" || true)
  if [ -n "$why" ]; then
    echo "$why"
    echo
    echo "CTest's summary (again):"
    sed -n '/tests passed, /,$p' "$log"
  fi
fi
exit "$rc"

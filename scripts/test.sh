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
# The last line printed is CTest's summary.
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
ctest --output-on-failure -j"$(nproc)" "$@"

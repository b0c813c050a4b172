#!/bin/bash
# Installs strobe from BUILD_DIR into a scratch prefix, then builds and runs a consumer program
# three ways: find_package(strobe) with the shared and the static library, and pkg-config. Runs
# the installed `strobe --version` and the ABI test (tests/test_abi.c, built against the installed
# headers and library) with no LD_LIBRARY_PATH, and the CLI again from a prefix moved elsewhere:
# installed programs find libstrobe through their relative runtime path ($ORIGIN).
# Usage: install_consumer.sh BUILD_DIR SCRATCH_DIR CONSUMER_SOURCE_DIR
set -eu
build=$1 scratch=$2 consumer=$3
tests=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
prefix="$scratch/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for h in strobe.h instrument.h session.h result.h summary.h error.h export.h version.h; do
  [ -f "$prefix/include/strobe/$h" ] || { echo "missing installed header $h"; exit 1; }
done
[ -f "$prefix/share/doc/strobe/LICENSE" ] || { echo "missing installed LICENSE"; exit 1; }
libdir=$(ls -d "$prefix"/lib*/ | head -1)
libdir=${libdir%/}
# The version the installed header states, "MAJOR.MINOR.PATCH".
version=$(for part in MAJOR MINOR PATCH; do
  sed -n "s/^#define STROBE_VERSION_$part \([0-9]*\)$/\1/p" "$prefix/include/strobe/version.h"
done | paste -sd.)
unset LD_LIBRARY_PATH
[ -x "$prefix/bin/strobe" ] || { echo "missing installed program bin/strobe"; exit 1; }
out=$("$prefix/bin/strobe" --version)
[ "$out" = "strobe $version" ] || { echo "installed strobe --version: '$out', want 'strobe $version'"; exit 1; }
# CMake gives the consumer the installed library's folder as its runtime path.
for static in OFF ON; do
  cmake -S "$consumer" -B "$scratch/cmake-$static" -DCMAKE_PREFIX_PATH="$prefix" -DUSE_STATIC=$static >/dev/null
  cmake --build "$scratch/cmake-$static" >/dev/null
  "$scratch/cmake-$static/consumer" "$scratch/trace-$static.json"
done
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# pkg-config gives no runtime path: the program states its own, or runs with LD_LIBRARY_PATH.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$consumer/main.c" -o "$scratch/pc-consumer" $(pkg-config --cflags --libs strobe)
LD_LIBRARY_PATH="$libdir" "$scratch/pc-consumer"
# The ABI test (configs of older and newer layouts) against the installed library.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -I"$tests" "$tests/test_abi.c" -o "$scratch/test_abi" \
  $(pkg-config --cflags --libs strobe) -Wl,-rpath,"$libdir"
"$scratch/test_abi"
# From any prefix: the installed CLI still starts once the whole prefix has moved.
mv "$prefix" "$scratch/moved"
out=$("$scratch/moved/bin/strobe" --version)
[ "$out" = "strobe $version" ] || { echo "moved strobe --version: '$out', want 'strobe $version'"; exit 1; }
echo "install_consumer: ok"

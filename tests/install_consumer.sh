#!/bin/bash
# Installs strobe from BUILD_DIR into a scratch prefix, then builds and runs a consumer program
# three ways: find_package(strobe) with the shared and the static library, and pkg-config.
# Usage: install_consumer.sh BUILD_DIR SCRATCH_DIR CONSUMER_SOURCE_DIR
set -eu
build=$1 scratch=$2 consumer=$3
rm -rf "$scratch" && mkdir -p "$scratch"
prefix="$scratch/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for h in strobe.h instrument.h session.h result.h summary.h error.h export.h; do
  [ -f "$prefix/include/strobe/$h" ] || { echo "missing installed header $h"; exit 1; }
done
libdir=$(ls -d "$prefix"/lib*/ | head -1)
for static in OFF ON; do
  cmake -S "$consumer" -B "$scratch/cmake-$static" -DCMAKE_PREFIX_PATH="$prefix" -DUSE_STATIC=$static >/dev/null
  cmake --build "$scratch/cmake-$static" >/dev/null
  LD_LIBRARY_PATH="$libdir" "$scratch/cmake-$static/consumer" "$scratch/trace-$static.json"
done
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$consumer/main.c" -o "$scratch/pc-consumer" $(pkg-config --cflags --libs strobe)
LD_LIBRARY_PATH="$libdir" "$scratch/pc-consumer"
echo "install_consumer: ok"

#!/bin/bash
# Installs what building and testing strobe needs on Debian, and nothing when it is all there.
# Uses sudo only when not root. Usage: scripts/deps.sh [--test] (--test adds the sanitizer
# toolchain: clang and its runtimes).
set -euo pipefail
want=(cmake make gcc g++ pkg-config zlib1g-dev)
if [ "${1:-}" = "--test" ]; then
  want+=(clang libclang-rt-14-dev)
fi
missing=()
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "strobe: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null

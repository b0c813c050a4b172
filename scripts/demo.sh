#!/usr/bin/env bash
# demo.sh: builds strobe and runs its demo, from nothing to a trace you can open.
#
#   scripts/demo.sh [--gz]
#
# On a fresh Debian (or Ubuntu) machine it installs what the build needs with apt-get (cmake,
# gcc, g++, make, pkg-config, zlib1g-dev), using sudo only when not root and skipping apt
# entirely when everything is already there. Then it configures and builds into build/
# (RelWithDebInfo), runs build/examples/strobe_demo, which profiles a small multi-threaded
# training loop and prints torch's per-operator table, and says where the trace is and how to
# open it. --gz writes the trace gzip-compressed.
set -euo pipefail

# Work from the repository root whatever the caller's directory, so that build/ lands there.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

trace=build/demo_trace.json
demo_args=()
for arg in "$@"; do
    case "$arg" in
    --gz)
        trace=build/demo_trace.json.gz
        ;;
    -h | --help)
        sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "demo.sh: unknown argument: $arg (usage: scripts/demo.sh [--gz])" >&2
        exit 2
        ;;
    esac
done
demo_args+=("$trace")

# ---- Build dependencies --------------------------------------------------------------------
# The library is C, but CMakeLists.txt enables C++ too (the public headers are also compiled as
# C++), and CMake stops at configure time without a C++ compiler: g++ is needed as well.
missing=()
for tool in cmake:cmake gcc:gcc g++:g++ make:make pkg-config:pkg-config; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if command -v dpkg >/dev/null 2>&1; then
    if ! dpkg -s zlib1g-dev 2>/dev/null | grep -q '^Status: install ok installed'; then
        missing+=(zlib1g-dev)
    fi
elif [ ! -e /usr/include/zlib.h ]; then
    missing+=(zlib1g-dev)
fi

if [ "${#missing[@]}" -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "demo.sh: missing ${missing[*]}, and there is no apt-get to install them with." >&2
        echo "demo.sh: install them with your package manager and run this again." >&2
        exit 1
    fi
    sudo=
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "demo.sh: missing ${missing[*]}; run as root or install sudo." >&2
            exit 1
        fi
        sudo=sudo
    fi
    echo "demo.sh: installing ${missing[*]} with apt-get"
    $sudo apt-get update
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "${missing[@]}"
fi

# ---- Build ---------------------------------------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"

# ---- Run -----------------------------------------------------------------------------------
echo
build/examples/strobe_demo "${demo_args[@]}"

echo
echo "The trace is $(pwd)/$trace"
echo "Open it in a browser: https://ui.perfetto.dev (\"Open trace file\"), or chrome://tracing"
echo "(\"Load\") in Chrome or Chromium."

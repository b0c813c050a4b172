#!/usr/bin/env bash
# demo.sh: builds strobe and runs its demo, from nothing to a trace you can open.
#
#   scripts/demo.sh [--gz]
#
# On a fresh Debian (or Ubuntu) machine it installs what the build needs with apt-get
# (scripts/deps.sh: cmake, gcc, g++, make, pkg-config, zlib1g-dev), using sudo only when not root
# and skipping apt entirely when everything is already there. Then it configures build/
# (RelWithDebInfo), builds the library and the demo only (not the tests), runs
# build/examples/strobe_demo, which profiles a small multi-threaded training loop and prints
# torch's per-operator table, and says where the trace is and how to open it. --gz writes the
# trace gzip-compressed.
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
        sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "demo.sh: unknown argument: $arg (usage: scripts/demo.sh [--gz])" >&2
        exit 2
        ;;
    esac
done
demo_args+=("$trace")

# ---- Build dependencies (apt-get, only what is missing) ----------------------------------------
scripts/deps.sh

# ---- Build ---------------------------------------------------------------------------------
# Only the demo and what it links (libstrobe): the tests, the CLI and the benchmarks are left to
# scripts/test.sh (build-test/) and to a full `cmake --build build`. A fresh build/ is configured
# without the tests (configuring them alone takes seconds); one configured before keeps its
# settings.
jobs=$(nproc 2>/dev/null || echo 2)
config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ -f build/CMakeCache.txt ] || config+=(-DSTROBE_BUILD_TESTS=OFF)
cmake -S . -B build "${config[@]}"
cmake --build build -j "$jobs" --target strobe_demo

# ---- Run -----------------------------------------------------------------------------------
echo
build/examples/strobe_demo "${demo_args[@]}"
# The demo has printed the trace's path; this names the CLI's way to the UI without repeating it.
echo "or serve it to ui.perfetto.dev with \`build/strobe open\` on that path (which opens a browser"
echo "where there is one; the CLI builds with: cmake --build build --target strobe_cli)"


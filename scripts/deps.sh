#!/bin/bash
# Installs what building and testing strobe needs on Debian, and nothing when it is all there.
# Uses sudo only when not root. Usage: scripts/deps.sh [--test] (--test adds the sanitizer
# toolchain, clang and its runtimes, clang-format for the format test, python3-torch and
# libtorch-dev for the torch observer and its tests (torch's own key_averages() to compare with,
# torch's C++ headers and CMake config), and Open MPI for strobe record --mpi and test_mpi_record). The C++
# compiler is needed too: the public headers are compiled as C++ in the tests, and CMake enables
# C++ at configure time.
set -euo pipefail
want=(cmake make gcc g++ pkg-config zlib1g-dev)
want+=(python3-dev python3-setuptools python3-venv) # the Python package (python/) and its tests
want+=(libdw-dev) # DWARF unwinding of CPU samples (src/core/unwind.c): libdwfl.h; libdw1 at run time
if [ "${1:-}" = "--test" ]; then
  want+=(clang libclang-rt-14-dev clang-format)
  want+=(python3-torch) # test_cli_torch_summary: torch's own key_averages() to compare with
  want+=(libtorch-dev) # the torch observer (issue 30): torch's C++ headers and its CMake config
  want+=(chromium) # cli_report_browser: the HTML report opened headless, its DOM and a screenshot
  want+=(libopenmpi-dev openmpi-bin) # strobe record --mpi and test_mpi_record (issue 20)
  want+=(golang-go) # cli_export_pprof: `go tool pprof` reads strobe export --pprof's files back
  want+=(time) # GNU time (/usr/bin/time): strobe's own peak RSS in cli_merge_jobs and cli_mem_peak
fi
missing=()
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "strobe: missing ${missing[*]}, and there is no apt-get: install them and run again" >&2
  exit 1
fi
echo "strobe: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "strobe: missing ${missing[*]}: run as root or install sudo" >&2; exit 1; }
  sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null

#!/bin/bash
# test_wheel.sh: the Python package as a pip-only user has it (issue 33). Builds the wheel with pip
# offline into a fresh venv, with no CMake build on PATH or LD_LIBRARY_PATH, and runs the whole
# command line from it:
#   1. the build printed its progress (pip -v) and the wheel carries strobe/lib/
#      (libstrobe_record.so, the --torch import hook) and the `strobe` console script;
#   2. `strobe record --heap -o t.json -- python3 -c ...` and `strobe summary t.json`;
#   3. `python -m strobe record` (the same CLI through the module);
#   4. NVTX capture: tests/nvtx_plain.c, compiled here with cc where the nvtx3 headers are found,
#      recorded by `strobe record`;
#   5. --mpi: the wheel's libstrobe_record_mpi.so preloaded into a plain program, and under mpirun
#      with tests/mpi/mpi_prog.c where mpirun and MPI's compile flags are found; else, without the
#      interposer, `strobe record --mpi` refuses with its message;
#   6. --torch with the wheel's observer, where the venv's python imports torch;
#   7. strobe._strobe.cli (no launcher) finds the library too, and sets no STROBE_RECORD_LIB for
#      the program; a STROBE_RECORD_LIB set by the user wins over the wheel's library.
# Every trace passes the checkers of SHARED_DIR/validators, when present.
#
#   test_wheel.sh ROOT OUT_DIR SHARED_DIR [PYTHON]
#
# PYTHON: the interpreter (default python3); Debian's /usr/bin/python3 gets a venv with the
# system's packages (its setuptools, and python3-torch where installed, for step 6).
# Skips (77) with a message where the interpreter, its headers, venv, pip or setuptools are
# missing. OUT_DIR/build-temp keeps the objects between runs (STROBE_BUILD_TEMP), so that a rerun
# rebuilds only what changed.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: test_wheel.sh ROOT OUT_DIR SHARED_DIR [PYTHON]" >&2; exit 2; }
mkdir -p "$2" || exit 1
root=$(cd "$1" && pwd) out=$(cd "$2" && pwd) shared=$(cd "$3" 2>/dev/null && pwd || echo "$3")
py=${4:-python3}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
command -v "$py" >/dev/null 2>&1 || skip "no $py"
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) ||
  skip "$py does not run"
[ -f "$inc/Python.h" ] || skip "no Python headers for $py ($inc/Python.h; Debian: python3-dev)"
find "$out" -mindepth 1 -maxdepth 1 ! -name build-temp -exec rm -rf {} +
mkdir -p "$out/work"

# A fresh venv; with the system's packages only where the venv lacks setuptools (Python 3.12's
# venv has no setuptools, and there is no index to fetch it from).
venv="$out/venv"
sys_site=""
[ "$(readlink -f "$(command -v "$py")")" = "$(readlink -f /usr/bin/python3)" ] && sys_site=--system-site-packages
"$py" -m venv $sys_site "$venv" >"$out/venv.log" 2>&1 || { cat "$out/venv.log"; skip "cannot make a venv with $py (Debian: python3-venv)"; }
vpy="$venv/bin/python"
"$vpy" -m pip --version >/dev/null 2>&1 || skip "the venv of $py has no pip (Debian: python3-venv)"
if ! "$vpy" -c 'import setuptools' 2>/dev/null; then
  rm -rf "$venv"
  "$py" -m venv --system-site-packages "$venv" >"$out/venv.log" 2>&1 || skip "cannot make a venv with $py"
  "$vpy" -c 'import setuptools' 2>/dev/null ||
    skip "neither the venv nor $py has setuptools (Debian: python3-setuptools)"
fi

# No CMake build anywhere the CLI or the loader could find one: the venv's bin first, then the
# system's folders only; no preload or library path; no strobe variable from the caller.
unset LD_LIBRARY_PATH LD_PRELOAD PYTHONPATH STROBE_RECORD_LIB STROBE_RECORD_TORCH_LIB
unset NVTX_INJECTION64_PATH CUDA_INJECTION64_PATH NCCL_PROFILER_PLUGIN
export PATH="$venv/bin:/usr/local/bin:/usr/bin:/bin"
export STROBE_BUILD_TEMP="$out/build-temp" STROBE_BUILD_JOBS=${STROBE_BUILD_JOBS:-2}

# 1. The build, offline, with pip -v: its progress lines are in the log.
start=$(date +%s)
"$vpy" -m pip install -v --no-build-isolation --no-index "$root/python" >"$out/pip.log" 2>&1 ||
  { tail -n 40 "$out/pip.log"; fail "pip install into the venv"; }
echo "pip install: $(($(date +%s) - start)) s"
grep -qE 'strobe: (\[[0-9]+/[0-9]+\] |all [0-9]+ objects are up to date)' "$out/pip.log" ||
  { tail -n 40 "$out/pip.log"; fail "pip -v shows no progress of the build"; }
grep -qE 'strobe: linking strobe/lib/libstrobe_record.so' "$out/pip.log" ||
  fail "the build did not say it linked libstrobe_record.so"
pkg=$("$vpy" -c 'import os, strobe; print(os.path.dirname(strobe.__file__))') ||
  fail "the venv cannot import strobe"
case "$pkg" in "$venv"/*) ;; *) fail "strobe imported from $pkg, not from the venv" ;; esac
[ -f "$pkg/lib/libstrobe_record.so" ] || fail "the wheel has no strobe/lib/libstrobe_record.so"
[ -f "$pkg/lib/pyhook/sitecustomize.py" ] || fail "the wheel has no strobe/lib/pyhook (--torch)"
[ "$(command -v strobe)" = "$venv/bin/strobe" ] ||
  fail "the console script is not the venv's strobe: $(command -v strobe || echo none)"
strobe --version >"$out/version.txt" 2>&1 || { cat "$out/version.txt"; fail "strobe --version"; }

traces=()
cd "$out/work" || exit 1

# 2. record --heap and summary through the console script.
strobe record --heap -o t.json -- python3 -c 'x = [bytearray(4096) for _ in range(2000)]; print(len(x))' \
  >heap.out 2>heap.err || { rc=$?; cat heap.err; fail "strobe record --heap: exit $rc"; }
grep -q '^2000$' heap.out || fail "the recorded program's output changed: $(cat heap.out)"
[ -s t.json ] || fail "strobe record --heap wrote no t.json: $(cat heap.err)"
traces+=(t.json)
strobe summary t.json >summary.txt 2>&1 || { cat summary.txt; fail "strobe summary t.json"; }
grep -q "strobe record --heap" summary.txt || { cat summary.txt; fail "the summary has no heap section"; }
python3 - t.json <<'EOF' || fail "the heap trace"
import json, sys
d = json.load(open(sys.argv[1]))
heap = [e for e in d["traceEvents"] if e.get("name") == "[memory]"]
if not heap:
    print("no [memory] events among %d" % len(d["traceEvents"]))
    sys.exit(1)
EOF

# 3. python -m strobe record (the module; the same launcher).
python3 -m strobe record -o m.json -- python3 -c 'print("module")' >mod.out 2>mod.err ||
  { cat mod.err; fail "python -m strobe record"; }
grep -q '^module$' mod.out && [ -s m.json ] || fail "python -m strobe record: $(cat mod.err)"
traces+=(m.json)
python3 -m strobe summary m.json >/dev/null 2>mod_sum.err || { cat mod_sum.err; fail "python -m strobe summary"; }

# 4. NVTX: the library is the program's NVTX tool under strobe record.
nvtx_inc=""
for d in /usr/local/cuda/include ${CUDA_HOME:+"$CUDA_HOME/include"} /usr/local/cuda-*/include; do
  [ -f "$d/nvtx3/nvToolsExt.h" ] && { nvtx_inc=$d; break; }
done
if [ -z "$nvtx_inc" ]; then
  echo "note: nvtx3/nvToolsExt.h not found (CUDA toolkit): the NVTX capture is not tested"
elif ! command -v cc >/dev/null; then
  echo "note: no cc: the NVTX capture is not tested"
else
  cc -isystem "$nvtx_inc" -o nvtx_plain "$root/tests/nvtx_plain.c" -lpthread -ldl 2>cc.err ||
    { cat cc.err; fail "cc nvtx_plain.c"; }
  strobe record -o nvtx.json -- ./nvtx_plain >nvtx.out 2>nvtx.err || { cat nvtx.err; fail "strobe record nvtx_plain"; }
  grep -q "^levels 0 1 1 0$" nvtx.out || fail "nvtx_plain's output changed: $(cat nvtx.out)"
  traces+=(nvtx.json)
  python3 - nvtx.json <<'EOF' || fail "the NVTX trace"
import json, sys
d = json.load(open(sys.argv[1]))
names = [e.get("name") for e in d["traceEvents"] if e.get("ph") == "X"]
for want, n in (("plain", 1000), ("w", 1), ("start", 1), ("registered", 1)):
    if names.count(want) < n:
        print("%d ranges named %r, expected %d or more" % (names.count(want), want, n))
        sys.exit(1)
EOF
  echo "NVTX capture: ok"
fi

# 5. --mpi.
if [ -f "$pkg/lib/libstrobe_record_mpi.so" ]; then
  # Found in the wheel without mpirun too: preloaded into a program that does not use MPI.
  strobe record --mpi -o mpi_plain.json -- python3 -c 'print("mpi")' >mpi_plain.out 2>mpi_plain.err ||
    { cat mpi_plain.err; fail "strobe record --mpi of a plain program"; }
  grep -q '^mpi$' mpi_plain.out || fail "strobe record --mpi: $(cat mpi_plain.err)"
  traces+=(mpi_plain.json)
  mpi_cflags=$(pkg-config --cflags --libs ompi-c 2>/dev/null || pkg-config --cflags --libs mpich 2>/dev/null)
  if ! command -v mpirun >/dev/null; then
    echo "note: mpirun not found (Debian: openmpi-bin): --mpi under mpirun is not tested"
  elif [ -z "$mpi_cflags" ]; then
    echo "note: pkg-config finds no MPI: --mpi under mpirun is not tested"
  else
    # shellcheck disable=SC2086 # pkg-config's flags are words
    cc -o mpi_prog "$root/tests/mpi/mpi_prog.c" $mpi_cflags 2>cc_mpi.err || { cat cc_mpi.err; fail "cc mpi_prog.c"; }
    timeout 120 strobe record --mpi -o mpi.json -- mpirun --allow-run-as-root --oversubscribe \
      -np 2 --mca btl self,vader,tcp ./mpi_prog >mpi.log 2>&1 || { tail -n 20 mpi.log; fail "strobe record --mpi -- mpirun"; }
    traces+=(mpi.json)
    python3 - mpi.json <<'EOF' || fail "the MPI trace"
import json, sys
d = json.load(open(sys.argv[1]))
pids = {e["pid"] for e in d["traceEvents"] if e.get("name") == "MPI_Allreduce"}
if len(pids) != 2:
    print("MPI_Allreduce in processes %r, expected 2" % sorted(pids))
    sys.exit(1)
EOF
    echo "--mpi under mpirun: ok"
  fi
else
  echo "note: the wheel has no libstrobe_record_mpi.so (MPI's flags were not found at build time)"
  strobe record --mpi -o none.json -- true >nompi.log 2>&1
  rc=$?
  [ $rc -eq 2 ] && grep -q "libstrobe_record_mpi.so not found" nompi.log && [ ! -e none.json ] ||
    fail "--mpi without its library: exit $rc, $(cat nompi.log)"
fi

# 6. --torch, where the venv's python imports torch (Debian's python3-torch through
#    --system-site-packages): the wheel's observer (strobe/lib/libstrobe_torch.so) and import hook.
if python3 -c 'import torch' 2>/dev/null; then
  [ -f "$pkg/lib/libstrobe_torch.so" ] || fail "torch is importable but the wheel has no strobe/lib/libstrobe_torch.so"
  strobe record --torch -o torch.json -- python3 -c 'import torch; print((torch.ones(4) + 1).sum().item())' \
    >torch.out 2>torch.err || { rc=$?; cat torch.err; fail "strobe record --torch: exit $rc"; }
  grep -q '^8.0$' torch.out || fail "the torch program's output changed: $(cat torch.out)"
  traces+=(torch.json)
  python3 - torch.json <<'EOF2' || fail "the --torch trace"
import json, sys
d = json.load(open(sys.argv[1]))
names = {e.get("name") for e in d["traceEvents"] if e.get("ph") == "X"}
if "aten::add" not in names:
    print("no aten::add among %s" % sorted(n for n in names if n)[:20])
    sys.exit(1)
EOF2
  echo "--torch: ok"
else
  echo "note: the venv's python has no torch: --torch is not tested"
fi

# 7. The CLI finds the package's library by itself (strobe._strobe.cli without the launcher), and
#    the recorded program's environment names no library of the package's beyond what record
#    always sets; the user's STROBE_RECORD_LIB wins over the wheel's.
python3 -c 'import sys, strobe._strobe as s; sys.exit(s.cli(["strobe", "record", "-q", "-o", "c.json", "--", "python3", "-c", "import os; print(os.environ.get(\"STROBE_RECORD_LIB\"))"]))' \
  >direct.out 2>direct.err || { rc=$?; cat direct.err; fail "strobe._strobe.cli record: exit $rc"; }
[ "$(cat direct.out)" = None ] || fail "the recorded program sees STROBE_RECORD_LIB=$(cat direct.out)"
traces+=(c.json)
STROBE_RECORD_LIB=/nonexistent/libstrobe_record.so strobe record -o no.json -- true >nolib.log 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "STROBE_RECORD_LIB=/nonexistent" nolib.log ||
  fail "a STROBE_RECORD_LIB of the user's: exit $rc, $(cat nolib.log)"

if [ -x "$shared/validators/check_all.sh" ]; then
  . "$root/tests/validators.sh"
  for t in "${traces[@]}"; do
    strobe_check_trace "$shared" "$t" --strict >check.log 2>&1 || { cat check.log; fail "$t does not pass the checkers"; }
  done
  echo "checkers: ${#traces[@]} traces pass"
else
  echo "note: $shared/validators absent: the traces were not checked"
fi
echo "PASS"

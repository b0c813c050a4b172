#!/bin/bash
# python_tests.sh: builds strobe's Python package (python/) offline with pip, the way a user
# installs it, into a temporary folder, and runs its unittest files (python/tests/) against it;
# then checks the traces they wrote with the independent checkers (../shared/validators), when
# present.
#
#   python_tests.sh ROOT OUT_DIR SHARED_DIR [PYTHON]
#
# PYTHON: the interpreter (default python3 on PATH). Debian's /usr/bin/python3 (and any python
# without pip) gets a venv made with --system-site-packages, as Debian's python asks.
# Skips (77) with a message where the interpreter, its headers, setuptools, pip or venv are missing.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: python_tests.sh ROOT OUT_DIR SHARED_DIR [PYTHON]" >&2; exit 2; }
mkdir -p "$2" || exit 1
# Absolute paths: the tests run from OUT_DIR.
root=$(cd "$1" && pwd) out=$(cd "$2" && pwd) shared=$(cd "$3" 2>/dev/null && pwd || echo "$3")
py=${4:-python3}
skip() { echo "SKIP: $*"; exit 77; }
command -v "$py" >/dev/null 2>&1 || skip "no $py"
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) ||
  skip "$py does not run"
[ -f "$inc/Python.h" ] || skip "no Python headers for $py ($inc/Python.h; Debian: python3-dev)"
"$py" -c 'import setuptools' 2>/dev/null || skip "no setuptools for $py (Debian: python3-setuptools)"
# Everything but the object files, which the next build reuses where nothing changed.
mkdir -p "$out"
find "$out" -mindepth 1 -maxdepth 1 ! -name build-temp -exec rm -rf {} +
mkdir -p "$out/traces"
export STROBE_BUILD_TEMP="$out/build-temp" STROBE_BUILD_JOBS=${STROBE_BUILD_JOBS:-2}
# A venv for Debian's interpreter (its pip refuses to install outside one), and for any without
# pip of its own; else pip --target.
if [ "$(readlink -f "$(command -v "$py")")" = "$(readlink -f /usr/bin/python3)" ] ||
  ! "$py" -m pip --version >/dev/null 2>&1; then
  "$py" -m venv --system-site-packages "$out/venv" >/dev/null 2>&1 ||
    skip "cannot make a venv with $py (Debian: python3-venv)"
  py="$out/venv/bin/python"
  "$py" -m pip --version >/dev/null 2>&1 || skip "the venv of $py has no pip (Debian: python3-venv)"
  "$py" -m pip install -q --no-build-isolation --no-index "$root/python" >"$out/pip.log" 2>&1 || {
    cat "$out/pip.log"; echo "FAIL: pip install into the venv"; exit 1; }
  site=""
else
  "$py" -m pip install -q --no-build-isolation --no-index --target "$out/site" "$root/python" \
    >"$out/pip.log" 2>&1 || { cat "$out/pip.log"; echo "FAIL: pip install --target"; exit 1; }
  site="$out/site"
fi
# Run from a folder without the sources, so that the installed package is the one imported.
cd "$out" || exit 1
PYTHONPATH="$site" STROBE_TEST_TRACE_DIR="$out/traces" \
  "$py" -m unittest discover -s "$root/python/tests" -p 'test_*.py' -v 2>&1 | tail -n 60
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || { echo "FAIL: python unittest (status $rc)"; exit 1; }
PYTHONPATH="$site" "$py" -c 'import strobe, sys; sys.exit(0 if strobe._strobe.__file__.startswith(sys.argv[1]) else 1)' "$out" ||
  { echo "FAIL: the tests did not import the installed package"; exit 1; }
if [ -x "$shared/validators/check_all.sh" ]; then
  . "$root/tests/validators.sh"
  n=0
  for t in $(find "$out/traces" -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*.pftrace' \) | sort); do
    case "$t" in *.gz) f="$out/check.json"; zcat "$t" >"$f" ;; *) f=$t ;; esac
    strobe_check_trace "$shared" "$f" --strict >"$out/check.log" 2>&1 || {
      cat "$out/check.log"; echo "FAIL: $t does not pass the checkers"; exit 1; }
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || { echo "FAIL: the tests wrote no trace"; exit 1; }
  echo "checkers: $n traces pass"
else
  echo "note: $shared/validators absent: traces not checked"
fi
echo "PASS"

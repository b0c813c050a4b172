#!/bin/bash
# NVTX capture: programs that use only NVTX (and, for nvtx_target, the public session API) run
# with NVTX_INJECTION64_PATH naming libstrobe.so.
#  1. nvtx_target, saved at stop, streamed, and in per-thread mode: every range, mark and thread
#     checked in the trace (see check_nvtx_trace.py), which passes the independent checkers
#     (--strict) where SHARED_DIR/validators exists;
#  2. nvtx_plain (no strobe in it) with the tool and no session: runs and exits as without it, the
#     NVTX levels it prints are the tool's (0 1 1 0);
#  3. nvtx_target without the tool: runs, and its trace holds no NVTX range.
# Usage: test_nvtx.sh LIBSTROBE NVTX_TARGET NVTX_PLAIN OUT_DIR SHARED_DIR
# Exit 77 (skipped) without python3.
set -u
lib=$1 target=$2 plain=$3 out=$4 shared=$5
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
have_validators=0
if [ -x "$shared/validators/check_all.sh" ]; then
    . "$here/validators.sh"
    have_validators=1
else
    echo "note: $shared/validators missing: independent checkers not run"
fi

# 1. Captured, three ways.
for mode in save stream optin; do
    trace="$out/nvtx_$mode.json"
    arg=$mode
    [ "$mode" = save ] && arg=""
    NVTX_INJECTION64_PATH="$lib" "$target" "$trace" $arg >"$out/$mode.txt" 2>"$out/$mode.err"
    rc=$?
    [ $rc = 0 ] || { cat "$out/$mode.err"; fail "$mode: nvtx_target exited $rc"; }
    [ -s "$out/$mode.err" ] && { cat "$out/$mode.err"; fail "$mode: nvtx_target printed to stderr"; }
    python3 "$here/check_nvtx_trace.py" "$trace" "$out/$mode.txt" "$mode" || fail "$mode: trace check"
    if [ $have_validators = 1 ]; then
        strobe_check_trace "$shared" "$trace" --strict >"$out/$mode.validators.txt" 2>&1 ||
            { cat "$out/$mode.validators.txt"; fail "$mode: validators"; }
    fi
    echo "ok: $mode"
done

# 2. A program without strobe, the tool named, no session.
base=$("$plain") || fail "nvtx_plain without the tool exited $?"
got=$(NVTX_INJECTION64_PATH="$lib" "$plain" 2>"$out/plain.err") || fail "nvtx_plain with the tool exited $?"
[ -s "$out/plain.err" ] && { cat "$out/plain.err"; fail "nvtx_plain printed to stderr"; }
[ "$got" = "levels 0 1 1 0" ] || fail "nvtx_plain with the tool printed '$got' (want 'levels 0 1 1 0'; without: '$base')"
echo "ok: plain ($base without the tool)"

# 3. nvtx_target without the tool: NVTX is a no-op, the session holds none of its ranges.
"$target" "$out/untooled.json" >/dev/null 2>"$out/untooled.err"
rc=$?
[ $rc = 0 ] || { cat "$out/untooled.err"; fail "untooled run exited $rc"; }
python3 - "$out/untooled.json" <<'PY' || fail "untooled trace"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = [e.get("name") for e in ev if e.get("ph") in ("X", "i", "B")]
bad = [n for n in names if n in ("outer", "inner", "tick", "async-op")]
if bad:
    print("FAIL: NVTX ranges without the tool:", bad)
    sys.exit(1)
PY
echo "ok: untooled"

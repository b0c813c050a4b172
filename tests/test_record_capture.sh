#!/bin/bash
# `strobe record --capture-range cuda-profiler-api` on tests/record_capture_target.c against the
# stand-in libcuda.so.1 and CUPTI (tests/fake_cuda; their cuProfilerStart/Stop call the CUPTI
# subscriber's driver-API callbacks, as CUDA does): only what happens between each
# cuProfilerStart() and cuProfilerStop() is in the trace (the ranges and marks the program says
# were inside, in their windows, and one kernel per window, the stand-in CUPTI's), nothing from
# before, between or after; a window the program never stops ends at its exit, and is kept; the
# program's exit status; a program that never calls
# cuProfilerStart leaves no trace. The traces pass the checkers (--strict) where SHARED_DIR has
# them.
# Usage: test_record_capture.sh STROBE TARGET FAKE_CUPTI FAKE_CUDA_DIR OUT_DIR SHARED_DIR.
# Exit 77 (skipped) without python3.
set -u
strobe=$1 target=$2 cupti=$3 cudadir=$4 out=$5 shared=$6
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"

run() { # NAME WINDOWS [OPTIONS...]
    local name=$1 windows=$2
    shift 2
    STROBE_CUPTI_PATH=$cupti LD_LIBRARY_PATH=$cudadir "$strobe" record "$@" \
      --capture-range cuda-profiler-api -o "$out/$name" -- "$target" "$windows" "$cupti" $open \
      >"$out/$name.out" 2>"$out/$name.err"
    rc=$?
}

open=
for fmt in json pftrace; do
  run "cap.$fmt" 3
  [ "$rc" = 0 ] || { cat "$out/cap.$fmt.err"; fail "$fmt: exit $rc"; }
done
"$strobe" convert -q "$out/cap.pftrace" "$out/cap_pf.json" || fail "convert of cap.pftrace"
for t in json:cap.json pftrace:cap_pf.json; do
  python3 - "$out/${t#*:}" "$out/cap.${t%%:*}.out" <<'PY' || exit 1
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
facts = [l.split() for l in open(sys.argv[2])]
pid = int(facts[0][1])
windows = [f for f in facts if f[0] == "window"]
bad = []
def want(ok, msg):
    if not ok:
        bad.append(msg)
x = [e for e in events if e.get("ph") == "X" and e.get("pid") == pid and e.get("cat") != "kernel"]
ranges = collections.Counter(e["name"] for e in x)
marks = collections.Counter(e["name"] for e in events if e.get("ph") in ("i", "I") and e.get("pid") == pid)
inside = [n for w in windows for n in w[2:]]
want(len(windows) == 3, "three windows: %s" % windows)
for n in inside:
    want(ranges[n] == 1, "range %s inside a window: once, got %d" % (n, ranges[n]))
want(all(marks[n] == 1 for n in inside if n.startswith("nested")), "the marks inside: %s" % marks)
outside = [n for n in ranges if n in ("before", "after") or n.startswith("between")]
want(not outside, "nothing from outside the windows: %s" % outside)
want(not [n for n in marks if n in ("before", "after") or n.startswith("between")],
     "no mark from outside: %s" % marks)
nvtx = [e for e in x if e["name"] in inside]
want(len(nvtx) == len(inside), "only the inside ranges on the CPU side: %s" % ranges)
kernels = [e for e in events if e.get("cat") == "kernel"]
want(len(kernels) == 3, "one kernel per window (the stand-in's): %d" % len(kernels))
# Each kernel lies in its window: the stand-in stamps it 1.5 us after the program marked the
# launch, inside the window's outer range, which lasts milliseconds.
outer = sorted((e for e in x if e["name"].startswith("inside-")), key=lambda e: e["ts"])
ks = sorted(kernels, key=lambda e: e["ts"])
if len(outer) == 3 and len(ks) == 3:
    for i in range(3):
        lo, hi = outer[i]["ts"], outer[i]["ts"] + outer[i]["dur"]
        want(lo <= ks[i]["ts"] < hi, "kernel %d in window %d: %s not in [%s, %s)" % (i, i + 1, ks[i]["ts"], lo, hi))
if bad:
    print("FAIL (%s):\n  %s" % (sys.argv[1], "\n  ".join(bad)))
    sys.exit(1)
print("ok    %s: %d ranges inside 3 windows, 3 kernels, nothing outside" % (sys.argv[1], len(nvtx)))
PY
done

# A window still open at exit: stopped there, before CUDA goes, with its range and kernel.
open=open run open.json 2
[ "$rc" = 0 ] || { cat "$out/open.json.err"; fail "open window: exit $rc"; }
python3 - "$out/open.json" <<'PY' || exit 1
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = collections.Counter(e["name"] for e in events if e.get("ph") == "X" and e.get("cat") != "kernel")
kernels = [e for e in events if e.get("cat") == "kernel"]
ok = names["inside-2"] == 1 and names["nested-2"] == 1 and names["inside-1"] == 1 and len(kernels) == 2
ok = ok and names["after"] == 0 and names["between-1"] == 0
if not ok:
    print("FAIL: a window open at exit: %s, %d kernels" % (names, len(kernels)))
    sys.exit(1)
print("ok    a window open at exit is kept: %s, %d kernels" % (dict(names), len(kernels)))
PY
open=

# No window: nothing recorded, no trace, the program's status.
run none.json 0
[ "$rc" = 0 ] && [ ! -e "$out/none.json" ] || { cat "$out/none.json.err"; fail "no window: exit $rc, or a trace"; }
grep -q "no process recorded anything" "$out/none.json.err" || fail "no window: the message"
# The driver refuses to initialize (FAKE_CUDA_INIT): the program's own status (1) comes back.
FAKE_CUDA_INIT=100 run fail.json 1
[ "$rc" = 1 ] || fail "a failing program: exit $rc, not 1"
# With --delay: a usage error.
"$strobe" record --capture-range cuda-profiler-api --delay 1 -- /bin/true 2>/dev/null
[ $? = 2 ] || fail "--capture-range cuda-profiler-api with --delay: not a usage error"

if [ -x "$shared/validators/check_all.sh" ]; then
  for t in "$out/cap.json" "$out/cap.pftrace"; do
    strobe_check_trace "$shared" "$t" --strict >"$t.check.log" 2>&1 || { cat "$t.check.log"; fail "checkers on $t"; }
    echo "ok    checkers on $t"
  done
else
  echo "checkers skipped: $shared/validators/check_all.sh not found"
fi
echo "test_record_capture: ok"

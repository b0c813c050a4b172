#!/bin/bash
# The LD_PRELOAD heap interposer (libstrobe_malloc.so) on a program that knows nothing of strobe:
#  1. traced: the run succeeds and its trace holds one "[memory]" instant with "Bytes" +U and one
#     with -U for every block malloc_target reports (per usable size U and per thread), the
#     counter track "allocated bytes (cpu)", "Total Allocated" never below zero, and it passes the
#     independent checkers (--strict) where SHARED_DIR/validators exists;
#  2. "%p" in STROBE_MALLOC_TRACE is replaced by the process id;
#  3. preloaded without STROBE_MALLOC_TRACE: the run succeeds and writes nothing;
#  4. real programs (ls, python3 when installed) run traced and write a trace.
# Usage: test_malloc_preload.sh LIBSTROBE_MALLOC TARGET OUT_DIR SHARED_DIR
# Exit 77 (skipped) without python3.
set -u
lib=$1 target=$2 out=$3 shared=$4
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# 1. Traced.
trace="$out/heap.json"
STROBE_MALLOC_TRACE="$trace" LD_PRELOAD="$lib" "$target" >"$out/expect.txt" 2>"$out/stderr.txt" ||
  { cat "$out/stderr.txt"; fail "traced run exited $?"; }
[ -s "$out/stderr.txt" ] && { cat "$out/stderr.txt"; fail "traced run printed to stderr"; }
[ -f "$trace" ] || fail "no trace at $trace"
python3 - "$trace" "$out/expect.txt" <<'PY' || exit 1
import collections, json, sys
trace, expect = sys.argv[1], sys.argv[2]
events = json.load(open(trace))["traceEvents"]
want = collections.Counter()   # (usable, thread index) -> blocks
for line in open(expect):
    f = line.split()
    if f[0] == "alloc":
        want[(int(f[1]), int(f[2]))] += 1
mem = [e for e in events if e.get("name") == "[memory]"]
bad = False
def check(ok, msg):
    global bad
    if not ok:
        print("FAIL:", msg)
        bad = True
check(all(e.get("ph") == "i" for e in mem), "a [memory] event is not an instant")
pos = [e for e in mem if e["args"]["Bytes"] > 0]
neg = [e for e in mem if e["args"]["Bytes"] < 0]
check(pos and neg, "positive and negative Bytes: %d and %d events" % (len(pos), len(neg)))
# Per usable size: allocation and free counts, and the thread that made them.
tids = collections.defaultdict(set)   # thread index -> tids of its sizes' events
for (u, t), n in sorted(want.items()):
    sizes_of_t = [e for e in mem if abs(e["args"]["Bytes"]) == u]
    got_alloc = sum(1 for e in sizes_of_t if e["args"]["Bytes"] > 0)
    got_free = sum(1 for e in sizes_of_t if e["args"]["Bytes"] < 0)
    check(got_alloc == n, "usable size %d: %d allocations expected, %d in the trace" % (u, n, got_alloc))
    check(got_free == n, "usable size %d: %d frees expected, %d in the trace" % (u, n, got_free))
    tids[t].update(e["tid"] for e in sizes_of_t)
check(len(tids) == 2 and all(len(s) == 1 for s in tids.values()) and tids[0] != tids[1],
      "each worker's blocks on one thread of its own: %s" % dict(tids))
low = min(e["args"]["Total Allocated"] for e in mem)
check(low >= 0, "Total Allocated went below zero: %d" % low)
check(all(e["args"].get("Device Type") == 0 and e["args"].get("Device Id") == -1 for e in mem),
      "[memory] events on the CPU device")
counters = [e for e in events if e.get("ph") == "C" and e.get("name") == "allocated bytes (cpu)"]
check(len(counters) == len(mem),
      "one 'allocated bytes (cpu)' sample per [memory] event: %d and %d" % (len(counters), len(mem)))
print("malloc trace: %d [memory] events (%d allocations, %d frees), %d known blocks" %
      (len(mem), len(pos), len(neg), sum(want.values())))
sys.exit(1 if bad else 0)
PY

check="$shared/validators/check_all.sh"
# strobe_check_trace runs what check_all.sh runs, with its setup once (validators.sh says why).
. "$(dirname "$0")/validators.sh"
if [ -x "$check" ]; then
  strobe_check_trace "$shared" "$trace" --strict >"$trace.check.log" 2>&1 || { cat "$trace.check.log"; fail "checkers on $trace"; }
  echo "ok    checkers on $trace"
else
  echo "checkers skipped: $check not found"
fi

# 2. "%p" is the process id.
STROBE_MALLOC_TRACE="$out/pid-%p.json" LD_PRELOAD="$lib" "$target" >/dev/null ||
  fail "traced run with %p exited $?"
ls "$out"/pid-[0-9]*.json >/dev/null 2>&1 || fail "no pid-PID.json in $out: $(ls "$out")"

# 3. Preloaded, not traced: runs, writes nothing, prints nothing.
quiet="$out/quiet" && mkdir -p "$quiet"
(cd "$quiet" && env -u STROBE_MALLOC_TRACE LD_PRELOAD="$lib" "$target" >"$out/quiet.txt" 2>"$out/quiet.err") ||
  fail "untraced run exited $?"
[ -s "$out/quiet.err" ] && { cat "$out/quiet.err"; fail "untraced run printed to stderr"; }
cmp -s <(grep -c alloc "$out/quiet.txt") <(grep -c alloc "$out/expect.txt") || fail "untraced run's output differs"
[ -z "$(ls -A "$quiet")" ] || fail "untraced run wrote files: $(ls -A "$quiet")"
(cd "$quiet" && STROBE_MALLOC_TRACE= LD_PRELOAD="$lib" "$target" >/dev/null) || fail "empty STROBE_MALLOC_TRACE: exited $?"
[ -z "$(ls -A "$quiet")" ] || fail "run with an empty STROBE_MALLOC_TRACE wrote files"

# 4. Real programs, bounded in time.
for prog in "ls /" "python3 -c pass"; do
  name=${prog%% *}
  command -v "$name" >/dev/null || { echo "skipped: $name not installed"; continue; }
  # timeout runs outside: preloaded it would write its own trace to the same path, after prog.
  # shellcheck disable=SC2086
  timeout 120 env STROBE_MALLOC_TRACE="$out/$name.json" LD_PRELOAD="$lib" $prog >/dev/null ||
    fail "$prog under the interposer exited $?"
  [ -s "$out/$name.json" ] || fail "$prog: no trace"
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; sys.exit(0 if any(x.get("name")=="[memory]" for x in e) else 1)' \
    "$out/$name.json" || fail "$prog: no [memory] event"
  echo "ok    $prog"
done
echo "test_malloc_preload: ok"

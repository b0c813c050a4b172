#!/bin/bash
# `strobe record` when the program does not end with an ordinary exit (issue 29), with
# tests/record_robust_target.c (N allocations of 100 bytes, each freed, recorded with --heap=all):
#  1. main calls pthread_exit() while a detached thread allocates: the process ends (strobe's
#     own threads do not keep it alive) with status 0, and both threads' allocations are kept;
#  2. SIGSEGV, abort() and a SIGTERM the program sends itself: the status is the signal's (139,
#     134, 143), every allocation made before it is kept, the trace marks the process ("[strobe]
#     process ended by SIG...") and `strobe check` reports the crashes (not the kill) as
#     unclean_stop;
#  3. exec: what the image recorded before exec is kept; a failed exec goes on recording; a
#     program that dup2()s over all its descriptors loses nothing;
#  4. `strobe record` killed (SIGKILL): the program stops recording, closes its part (complete,
#     and it stops growing) and runs on to its end;
#  5. the program killed (SIGKILL): the merged trace marks it "cut short", and check reports it;
#  6. --max-part-size caps a part, and the merge warns with the count of events left out;
#  7. every trace passes the independent checkers (--strict) where SHARED_DIR/validators exists.
# Usage: test_record_robust.sh STROBE TARGET OUT_DIR SHARED_DIR. Exit 77 without python3.
set -u
strobe=$1 target=$2 out=$3 shared=$4
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"
traces=()
N=3000

# run NAME MODE [EXPECTED_STATUS]: records the target in MODE into $out/NAME.json.
run() {
    local name=$1 mode=$2 want=${3:-0}
    timeout 60 "$strobe" record --heap=all -o "$out/$name.json" -- "$target" "$mode" $N \
        >"$out/$name.out" 2>"$out/$name.err"
    local rc=$?
    [ $rc -eq 124 ] && fail "$name: strobe record hung (killed after 60 s)"
    [ $rc -eq "$want" ] || { cat "$out/$name.err"; fail "$name: exit $rc, expected $want"; }
    traces+=("$out/$name.json")
}

# allocs TRACE MIN [MARK]: at least MIN allocations of 100 bytes (usable size 100 to 120) in the trace, and, with MARK, one
# instant of that name.
allocs() {
    python3 - "$@" <<'PY' || exit 1
import json, sys
trace, want = sys.argv[1], int(sys.argv[2])
mark = sys.argv[3] if len(sys.argv) > 3 else None
ev = json.load(open(trace))["traceEvents"]
n = sum(1 for e in ev if e.get("name") == "[memory]" and 100 <= e["args"].get("Bytes", 0) <= 120)
if n < want:
    sys.exit("FAIL: %s: %d allocations of 100 bytes, expected at least %d" % (trace, n, want))
if mark and not any(e.get("ph") in ("i", "I") and e.get("name") == mark for e in ev):
    sys.exit("FAIL: %s: no instant %r" % (trace, mark))
PY
}

# unclean TRACE: strobe check exits 1 and names unclean_stop.
unclean() {
    "$strobe" check -q "$1" >"$1.check" 2>&1
    local rc=$?
    [ $rc -eq 1 ] && grep -q '^unclean_stop: 1' "$1.check" || { cat "$1.check"; fail "$1: check exit $rc, no unclean_stop"; }
}

# 1. pthread_exit from main.
run pexit pexit 0
allocs "$out/pexit.json" $((2 * N))

# 2. Signals.
run segv segv 139
allocs "$out/segv.json" $N "[strobe] process ended by SIGSEGV"
unclean "$out/segv.json"
run abort abort 134
allocs "$out/abort.json" $N "[strobe] process ended by SIGABRT"
unclean "$out/abort.json"
run term term 143
allocs "$out/term.json" $N "[strobe] process ended by SIGTERM"
"$strobe" check -q "$out/term.json" >/dev/null || fail "term: check reports a SIGTERM (a kill, not a crash)"

# 3. exec, and an exec that fails.
run exec exec 0
allocs "$out/exec.json" $N
"$strobe" check -q "$out/exec.json" >/dev/null || fail "exec: check found problems"
run execfail execfail 0
allocs "$out/execfail.json" $((2 * N))

# 3b. A program that dup2()s /dev/null over every descriptor from 3 to 1023 (daemons and
#     close_fds do as much): strobe's part descriptor survives, nothing is lost.
run fds fds 0
allocs "$out/fds.json" $((2 * N))

# 4. strobe record killed: the part is closed, stops growing, and the program runs to its end.
"$strobe" record --heap=all -o "$out/killed.json" -- "$target" spin 1 4 >"$out/killed.out" \
    2>"$out/killed.err" &
rec=$!
sleep 1
kill -KILL $rec
wait $rec 2>/dev/null
part=$(ls "$out"/killed.json.parts/*.json 2>/dev/null | head -1)
[ -n "$part" ] || fail "killed: no part file"
for i in $(seq 1 50); do
    grep -q '"complete": true' "$part" && break
    sleep 0.1
done
grep -q '"complete": true' "$part" || fail "killed: the part was not closed within 5 s"
size=$(stat -c %s "$part")
sleep 1
[ "$(stat -c %s "$part")" -eq "$size" ] || fail "killed: the part still grows"
pgrep -f "record_robust_target spin" >/dev/null || fail "killed: the program did not run on"
grep -q "strobe record is gone" "$out/killed.err" || fail "killed: no message"
traces+=("$part")

# 5. The program killed with SIGKILL: cut short. It is killed once its part has a header and
#    some events (a fixed second was not always enough on a loaded machine: CI once killed it
#    before its part held anything to mark).
timeout 60 "$strobe" record --heap=all -o "$out/cut.json" -- sh -c \
    "\"$target\" spin 1 10 & p=\$!; for i in \$(seq 1 100); do
       [ -s \"$out/cut.json.parts/\$p.json\" ] && break; sleep 0.1
     done; sleep 0.5; kill -KILL \$p; wait" >"$out/cut.out" 2>"$out/cut.err"
rc=$?
[ $rc -eq 137 ] || [ $rc -eq 0 ] || fail "cut: exit $rc"
python3 - "$out/cut.json" <<'PY' || exit 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
if not any(e.get("name", "").startswith("[strobe] process cut short") for e in ev):
    sys.exit("FAIL: cut: no cut-short mark")
PY
unclean "$out/cut.json"
traces+=("$out/cut.json")

# 6. --max-part-size: the part stops at the cap, the merge warns with the count, and a size that
#    is not one is a usage error.
timeout 60 "$strobe" record --heap=all --max-part-size 1M -o "$out/capped.json" -- "$target" spin 1 2 \
    >"$out/capped.out" 2>"$out/capped.err"
rc=$?
[ $rc -eq 0 ] || { cat "$out/capped.err"; fail "capped: exit $rc"; }
grep -q "reached its size cap; [1-9][0-9]* events were not written" "$out/capped.err" ||
    { cat "$out/capped.err"; fail "capped: no warning with a count"; }
[ "$(stat -c %s "$out/capped.json")" -lt 1200000 ] || fail "capped: the trace is over the cap"
traces+=("$out/capped.json")
for bad in abc 0 -5 12Q 99999999999G; do
    "$strobe" record --max-part-size "$bad" -o "$out/bad.json" -- true 2>"$out/bad.err"
    [ $? -eq 2 ] || fail "--max-part-size $bad: not a usage error"
done

# 7. The independent checkers.
if [ -x "$shared/validators/check_all.sh" ]; then
    for t in "${traces[@]}"; do
        strobe_check_trace "$shared" "$t" --strict >"$t.check.log" 2>&1 ||
            { cat "$t.check.log"; fail "checkers on $t"; }
    done
else
    echo "checkers skipped: $shared/validators/check_all.sh not found"
fi
echo "PASS: test_record_robust (${#traces[@]} traces)"

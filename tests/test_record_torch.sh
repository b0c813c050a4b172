#!/bin/bash
# `strobe record --torch` on a real PyTorch program (tests/torch_workload.py: forward, backward and
# optimizer steps, record_function ranges, a second thread, a DataLoader with 2 worker processes
# under fork), with --record-shapes and --profile-memory:
#   - the operators of the main thread inside the program's "workload" range, through `strobe
#     summary -f csv`, have exactly the names and call counts of the same program's own
#     torch.profiler key_averages() of its events inside "workload" (run separately; torch 1.13's
#     legacy profiler sees the main thread only);
#   - the second thread's ops are there (on a thread of their own), and each DataLoader worker is a
#     process of its own with its own ops; "Input Dims" are recorded, and [memory] events on the
#     main thread, the second thread and in each worker;
#   - a loop calling torch.profiler.profile().step() gives ProfilerStep#N ranges that `strobe
#     steps` counts, and with --with-stack each operator's Python "Call stack"; summary, steps, breakdown and report read both traces;
#   - a program that imports torch recorded without --torch gets the suggestion, once; with
#     --torch, none;
#   - every trace passes the checkers (--strict) where SHARED_DIR has them.
# Usage: test_record_torch.sh STROBE OUT_DIR SHARED_DIR. Exit 77 when /usr/bin/python3 has no
# torch.
set -u
strobe=$1 out=$2 shared=$3
py=/usr/bin/python3
"$py" -c "import torch" 2>/dev/null || { echo "SKIP: $py has no torch"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"
work=$(cd "$(dirname "$0")" && pwd)/torch_workload.py

# torch's own counts, from three runs: torch 1.13's legacy profiler now and then records an op
# twice (seen: five aten::div_ under four aten::mean), so strobe's must equal one run's.
for k in 1 2 3; do
  "$py" "$work" profile "$out/torch_counts.$k.json" >"$out/torch.$k.out" 2>&1 ||
    { rc=$?; cat "$out/torch.$k.out"; fail "torch.profiler run: exit $rc"; }
done
"$strobe" record --torch --record-shapes --profile-memory -o "$out/rec.json" -- "$py" "$work" plain \
  >"$out/rec.out" 2>"$out/rec.err" || { rc=$?; cat "$out/rec.err"; fail "strobe record --torch: exit $rc"; }
grep "add --torch\|--torch:" "$out/rec.err" && fail "--torch: a note about torch"

# The main thread's events inside "workload", as a trace of their own, through strobe summary.
"$py" - "$out/rec.json" "$out/main.json" <<'PY' || exit 1
import json, sys
trace = json.load(open(sys.argv[1]))
ev = trace["traceEvents"]
w = [e for e in ev if e.get("name") == "workload" and e.get("ph") == "X"]
if len(w) != 1:
    sys.exit("FAIL: one \"workload\" range, found %d" % len(w))
w = w[0]
lo, hi = w["ts"], w["ts"] + w["dur"]
keep = [e for e in ev if e.get("ph") == "M" or (e.get("pid") == w["pid"] and
        e.get("tid") == w["tid"] and e.get("ph") == "X" and lo <= e["ts"] and
        e["ts"] + e.get("dur", 0) <= hi)]
trace["traceEvents"] = keep
json.dump(trace, open(sys.argv[2], "w"))
bad = []
# The second thread, the workers, shapes and memory.
side = [e for e in ev if e.get("name") == "side_thread_work"]
if len(side) != 5 or any(e["tid"] == w["tid"] or e["pid"] != w["pid"] for e in side):
    bad.append("5 side_thread_work ranges on another thread of the program: %s"
               % [(e["pid"], e["tid"]) for e in side])
workers = {e["pid"] for e in ev if e.get("name") == "aten::full" and e["pid"] != w["pid"]}
if len(workers) != 2:
    bad.append("aten::full in 2 worker processes: %s" % sorted(workers))
if not any("Input Dims" in e.get("args", {}) for e in ev if e.get("cat") == "cpu_op"):
    bad.append("no cpu_op with \"Input Dims\" (--record-shapes)")
mem = [e for e in ev if e.get("name") == "[memory]"]
if not any(e["pid"] == w["pid"] and e["tid"] == w["tid"] for e in mem):
    bad.append("no [memory] event on the program's main thread (--profile-memory)")
if side and not any(e["pid"] == w["pid"] and e["tid"] == side[0]["tid"] for e in mem):
    bad.append("no [memory] event on the second thread (--profile-memory)")
if not workers or not all(any(e["pid"] == p for e in mem) for p in workers):
    bad.append("no [memory] event in a worker process (--profile-memory)")
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("ok    the second thread, %d workers, shapes and memory" % len(workers))
PY
"$strobe" summary -q -f csv "$out/main.json" >"$out/main.csv" 2>"$out/main.err" ||
  { rc=$?; cat "$out/main.err"; fail "strobe summary: exit $rc"; }
"$py" - "$out/main.csv" "$out"/torch_counts.?.json <<'PY' || exit 1
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
name_col = [c for c in rows[0] if c.lower() == "name"][0]
count_col = [c for c in rows[0] if c.lower() in ("# of calls", "calls", "count")][0]
ours = {r[name_col]: int(r[count_col]) for r in rows}
ours.pop("[memory]", None)
diffs = []
for path in sys.argv[2:]:
    theirs = {k: v for k, v in json.load(open(path)).items() if k != "[memory]"}
    diffs.append(sorted(set(ours) ^ set(theirs)) + sorted(
        k for k in set(ours) & set(theirs) if ours[k] != theirs[k]))
    if not diffs[-1]:
        break
else:
    print("FAIL: strobe summary against torch.profiler's key_averages in %d runs (name: ours, "
          "torch's in the first):" % len(diffs))
    theirs = json.load(open(sys.argv[2]))
    for k in diffs[0]:
        print("  %s: %s, %s" % (k, ours.get(k), theirs.get(k)))
    sys.exit(1)
print("ok    %d operator names, their call counts as torch.profiler's (run %d of %d)"
      % (len(ours), len(diffs), len(sys.argv) - 2))
PY

# ProfilerStep#N from torch.profiler.profile().step() under strobe record --with-stack.
"$strobe" record --with-stack -o "$out/steps.json" -- "$py" "$work" steps >"$out/steps.out" \
  2>"$out/steps.err" || { rc=$?; cat "$out/steps.err"; fail "steps: exit $rc"; }
for t in rec steps; do
  for c in summary steps breakdown; do
    "$strobe" $c -q "$out/$t.json" >"$out/$t.$c" 2>"$out/$t.$c.err" ||
      { rc=$?; cat "$out/$t.$c.err"; fail "strobe $c $t.json: exit $rc"; }
  done
  "$strobe" report -q -o "$out/$t.html" "$out/$t.json" 2>"$out/$t.report.err" ||
    { cat "$out/$t.report.err"; fail "strobe report $t.json"; }
done
grep -q "ProfilerStep\*" "$out/steps.summary" || { cat "$out/steps.summary"; fail "no ProfilerStep* row"; }
grep -q '"Call stack": "[^"]*torch_workload.py' "$out/steps.json" ||
  fail "--with-stack: no operator with a \"Call stack\" in torch_workload.py"
n=$(grep -c "ProfilerStep#" "$out/steps.json")
[ "$n" -ge 3 ] || fail "ProfilerStep#N ranges: $n"
echo "ok    ProfilerStep#N: $n ranges; summary, steps, breakdown and report read both traces"

# What the TensorBoard plugin's and HTA's readers take from a trace (they are not installed here):
# the plugin (kineto tb_plugin, profiler/data.py and trace.py) reads every event's "name", every
# "X" event's "cat" (lower-cased), "ts" and "dur", an integer after '#' in "ProfilerStep#N", [memory]
# as "i" events with an integer "Device Type", and "id" and "ts" of flow events "s"/"f"; HTA
# (hta/common/trace_parser.py) a top-level object with "traceEvents", keeping the events with
# "dur" and "cat".
for t in rec steps; do
  "$py" - "$out/$t.json" <<'PY' || exit 1
import json, sys
trace = json.load(open(sys.argv[1]))
bad = []
if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
    sys.exit("FAIL: %s: no top-level object with traceEvents" % sys.argv[1])
for e in trace["traceEvents"]:
    ph = e.get("ph")
    if not isinstance(e.get("name"), str):
        bad.append("no name: %s" % e)
    elif ph == "X" and not (isinstance(e.get("cat"), str) and isinstance(e.get("ts"), (int, float))
                            and isinstance(e.get("dur"), (int, float))):
        bad.append("an X event without cat, ts or dur: %s" % e)
    elif ph == "X" and e["name"].startswith("ProfilerStep#") and not e["name"][13:].isdigit():
        bad.append("a step's name: %s" % e["name"])
    elif e["name"] == "[memory]" and (ph != "i" or not isinstance(e.get("args", {}).get("Device Type"), int)):
        bad.append("a [memory] event: %s" % e)
    elif ph in ("s", "f") and ("id" not in e or "ts" not in e):
        bad.append("a flow event without id or ts: %s" % e)
if bad:
    print("FAIL: %s: %d events the readers cannot take, e.g.:\n  %s" % (sys.argv[1], len(bad),
          "\n  ".join(bad[:5])))
    sys.exit(1)
print("ok    %s: what the TensorBoard plugin's and HTA's readers need" % sys.argv[1])
PY
done

# The suggestion: once without --torch (the program and its 2 workers loaded torch), none with it.
"$strobe" record -o "$out/plain.json" -- "$py" "$work" plain >"$out/plain.out" 2>"$out/plain.err" ||
  { rc=$?; cat "$out/plain.err"; fail "without --torch: exit $rc"; }
n=$(grep -c "imports torch: add --torch to record its operators" "$out/plain.err")
[ "$n" = 1 ] || { cat "$out/plain.err"; fail "without --torch: the suggestion $n times"; }
echo "ok    without --torch: $(grep "add --torch" "$out/plain.err")"

if [ -d "$shared/validators" ]; then
  for t in rec steps plain; do
    strobe_check_trace "$shared" "$out/$t.json" --strict >"$out/$t.check" 2>&1 ||
      { cat "$out/$t.check"; fail "$t.json: the checkers"; }
  done
  echo "ok    the traces pass the checkers (--strict)"
fi
echo "PASS"

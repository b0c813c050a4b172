#!/usr/bin/env bash
# json_sample_frames.sh: a JSON trace's CPU profile has one node per function, not one per line.
# Samples whose Python frames (torch's "file.py(LINE): function", as strobe's sampler names them)
# were taken on different lines of one function are written (strobe merge, through the JSON
# writer's src/trace/json_profile.c) as one node per function, named "function" with the file as
# its url, and the innermost frame's line goes to the sample's entry in "lines" (where the sample
# has no "Line" of its own); `strobe stacks --samples` reads them back folded per function; the
# same trace converted to .pftrace (PerfSample frames, src/trace/perfetto_writer.c) folds to the
# same stacks; the traces pass SHARED_DIR's checkers (--strict) where SHARED_DIR has them.
# Usage: json_sample_frames.sh STROBE WORK_DIR SHARED_DIR. Exit 77 without python3.
set -u
strobe=$1 work=$2 shared=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
fail=0
cat >"$work/in.json" <<'JSON'
{"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "run", "pid": 7, "tid": 7, "ts": 0, "dur": 10},
{"ph": "i", "cat": "cpu_sample", "name": "hot", "pid": 7, "tid": 7, "ts": 1, "s": "t", "args": {"Call stack": "/x/hot.py(3): hot;/x/hot.py(9): main;main (a.c)"}},
{"ph": "i", "cat": "cpu_sample", "name": "hot", "pid": 7, "tid": 7, "ts": 2, "s": "t", "args": {"Call stack": "/x/hot.py(4): hot;/x/hot.py(9): main;main (a.c)"}},
{"ph": "i", "cat": "cpu_sample", "name": "_PyEval", "pid": 7, "tid": 7, "ts": 3, "s": "t", "args": {"Call stack": "_PyEval (ceval.c);/x/hot.py(5): hot;/x/hot.py(10): main;main (a.c)", "Line": "ceval.c:77"}},
{"ph": "i", "cat": "cpu_sample", "name": "_find_and_load", "pid": 7, "tid": 7, "ts": 4, "s": "t", "args": {"Call stack": "<frozen importlib._bootstrap>(1176): _find_and_load;main (a.c)"}}
]}
JSON
"$strobe" merge -q -o "$work/out.json" "$work/in.json" 2>"$work/merge.err" ||
    { cat "$work/merge.err"; echo "FAIL: strobe merge"; exit 1; }
python3 - "$work/out.json" <<'PY' || fail=1
import json, sys
nodes, samples, lines = {}, [], []
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e.get("name") == "ProfileChunk":
        cp = e["args"]["data"]["cpuProfile"]
        for n in cp["nodes"]:
            nodes[n["id"]] = (n.get("parent"), n["callFrame"]["functionName"], n["callFrame"]["url"])
        samples += cp["samples"]
        lines += cp["lines"]
fail = 0
def want(ok, what):
    global fail
    print(("ok    " if ok else "FAIL  ") + what)
    fail |= not ok
frames = sorted((f, u) for _, f, u in nodes.values())
want(not any("(" in f and "): " in f for f, _ in frames), "no node named after a line: %s" % frames)
want(frames.count(("hot", "/x/hot.py")) == 1, "one node for hot, in /x/hot.py: %s" % frames)
want(frames.count(("main", "/x/hot.py")) == 1, "one node for Python's main: %s" % frames)
want(("_find_and_load", "<frozen importlib._bootstrap>") in frames, "a frozen module's frame")
want(samples[0] == samples[1], "the samples on lines 3 and 4 of hot share a node: %s" % samples)
want(lines == [3, 4, 77, 1176], "lines: the innermost Python frame's, else the sample's Line: %s"
     % lines)
sys.exit(fail)
PY
"$strobe" stacks --samples -q "$work/out.json" >"$work/folded" 2>&1 || { cat "$work/folded"; fail=1; }
if grep -qx 'main (a.c);main (/x/hot.py);hot (/x/hot.py) 2' "$work/folded"; then
    echo "ok    strobe stacks --samples folds the two lines of hot into one stack"
else
    echo "FAIL  strobe stacks --samples:"; cat "$work/folded"; fail=1
fi
"$strobe" convert -q "$work/in.json" "$work/out.pftrace" 2>"$work/convert.err" ||
    { cat "$work/convert.err"; echo "FAIL: strobe convert"; fail=1; }
"$strobe" stacks --samples -q "$work/out.pftrace" >"$work/folded_pf" 2>&1 || { cat "$work/folded_pf"; fail=1; }
if cmp -s <(sort "$work/folded") <(sort "$work/folded_pf"); then
    echo "ok    the .pftrace's samples fold to the same stacks, one frame per function"
else
    echo "FAIL  .pftrace folds otherwise:"; diff <(sort "$work/folded") <(sort "$work/folded_pf"); fail=1
fi
if [ -x "$shared/validators/check_all.sh" ]; then
    . "$here/validators.sh"
    for t in out.json out.pftrace; do
        if strobe_check_trace "$shared" "$work/$t" --strict >"$work/check.log" 2>&1; then
            echo "ok    the checkers pass $t (--strict)"
        else
            cat "$work/check.log"; echo "FAIL  the checkers on $t"; fail=1
        fi
    done
else
    echo "note  $shared/validators not found: the trace was not checked"
fi
exit $fail

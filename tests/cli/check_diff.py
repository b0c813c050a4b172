#!/usr/bin/env python3
"""check_diff.py: `strobe diff BASE TEST` against numbers worked out independently.

1. Two small traces written here, whose rows are worked out by hand (in the comments below):
   the whole traces, and --step 1 (a kernel that runs during step 2 but was launched in step 1
   belongs to step 1).
2. Bad input: a missing step, a cut trace (exit 2, one line naming the file), malformed events
   (counted on stderr).
3. The shared resnet50 trace (skipped with a message when ../shared is missing): against itself
   (all unchanged) and against a copy changed here, whole and --step 7, with HTA's rules applied
   in a few lines of plain Python.

Usage: check_diff.py STROBE SHARED_DIR WORK_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, finish, load, write_cut, x  # noqa: E402
import tracegen  # noqa: E402

STROBE, SHARED, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(WORK, exist_ok=True)


def run(*args):
    return tracegen.run(STROBE, "diff", "-q", *args)


def write(name, events):
    return tracegen.write(os.path.join(WORK, name), events)


def step(n, ts):
    return x("user_annotation", "ProfilerStep#%d" % n, ts, 100)


def rows_of(out):
    return [(r["name"], r["device"], r["base_count"], r["test_count"], round(r["base_duration"], 3),
             round(r["test_duration"], 3), r["status"]) for r in json.loads(out)]


# ---- 1. hand-made traces ---------------------------------------------------------------------
base = [
    step(1, 0), step(2, 100),
    x("cpu_op", "aten::mm", 10, 20), x("cpu_op", "aten::mm", 110, 30),
    x("cuda_runtime", "cudaLaunchKernel", 15, 5, correlation=1),
    x("cuda_runtime", "cudaLaunchKernel", 115, 5, correlation=2),
    x("kernel", "gemm", 105, 40, tid=7, pid=0, correlation=1),  # launched in step 1, runs in 2
    x("kernel", "gemm", 190, 30, tid=7, pid=0, correlation=2),
    x("cpu_op", "aten::relu", 40, 10),
    x("python_function", "train.py(10): step", 0, 5),  # not a row
    x("cuda_runtime", "cudaMemcpyAsync", 60, 3, correlation=3),
    x("gpu_memcpy", "Memcpy HtoD", 60, 7, tid=8, pid=0, correlation=3),
    {"ph": "X", "cat": "cpu_op", "name": "aten::bad", "ts": "x", "dur": 1, "pid": 1, "tid": 1},
]
test = [
    step(1, 0), step(2, 100),
    x("cpu_op", "aten::mm", 10, 25), x("cpu_op", "aten::mm", 110, 30),
    x("cpu_op", "aten::mm", 150, 10),
    x("cuda_runtime", "cudaLaunchKernel", 15, 5, correlation=1),
    x("cuda_runtime", "cudaLaunchKernel", 115, 5, correlation=2),
    x("kernel", "gemm", 105, 50, tid=7, pid=0, correlation=1),
    x("kernel", "gemm", 190, 30, tid=7, pid=0, correlation=2),
    x("cpu_op", "aten::add", 40, 6),
    x("cuda_runtime", "cudaMemcpyAsync", 60, 3, correlation=3),
    x("gpu_memcpy", "Memcpy HtoD", 60, 7, tid=8, pid=0, correlation=3),
]
pb, pt = write("base.json", base), write("test.json", test)

# Whole traces, by hand. Changes: aten::mm 50 -> 65 us (15), aten::relu 10 -> gone (10, count
# 1), gemm 70 -> 80 (10, count 0), aten::add new (6); the rest unchanged, in name order
# (bytewise: capitals first).
rc, out, err = run(pb, pt, "-f", "json")
expect("whole: exit 0", rc, 0)
expect("whole: rows", rows_of(out), [
    ("aten::mm", "cpu", 2, 3, 50.0, 65.0, "increased"),
    ("aten::relu", "cpu", 1, 0, 10.0, 0.0, "deleted"),
    ("gemm", "gpu", 2, 2, 70.0, 80.0, "unchanged"),
    ("aten::add", "cpu", 0, 1, 0.0, 6.0, "added"),
    ("Memcpy HtoD", "gpu", 1, 1, 7.0, 7.0, "unchanged"),
    ("ProfilerStep#1", "cpu", 1, 1, 100.0, 100.0, "unchanged"),
    ("ProfilerStep#2", "cpu", 1, 1, 100.0, 100.0, "unchanged"),
    ("cudaLaunchKernel", "cpu", 2, 2, 10.0, 10.0, "unchanged"),
    ("cudaMemcpyAsync", "cpu", 1, 1, 3.0, 3.0, "unchanged"),
])
expect("whole: the malformed event is counted on stderr",
       "base.json: 1 malformed event(s) skipped" in err, True)

# --step 1, by hand: step 1 is [0, 100). The first gemm (launched at 15 by correlation 1) counts,
# though it runs at 105; aten::mm at 110 and 150, ProfilerStep#2 (starts at 100) do not.
# Changes: aten::relu -10 (count 1), gemm 40 -> 50 (10), aten::add +6, aten::mm 20 -> 25.
rc, out, err = run(pb, pt, "--step", "1", "-f", "json")
expect("step 1: rows", rows_of(out), [
    ("aten::relu", "cpu", 1, 0, 10.0, 0.0, "deleted"),
    ("gemm", "gpu", 1, 1, 40.0, 50.0, "unchanged"),
    ("aten::add", "cpu", 0, 1, 0.0, 6.0, "added"),
    ("aten::mm", "cpu", 1, 1, 20.0, 25.0, "unchanged"),
    ("Memcpy HtoD", "gpu", 1, 1, 7.0, 7.0, "unchanged"),
    ("ProfilerStep#1", "cpu", 1, 1, 100.0, 100.0, "unchanged"),
    ("cudaLaunchKernel", "cpu", 1, 1, 5.0, 5.0, "unchanged"),
    ("cudaMemcpyAsync", "cpu", 1, 1, 3.0, 3.0, "unchanged"),
])

# CSV: the same columns, in the order.
rc, out, err = run(pb, pt, "--step=1", "-f", "csv", "-n", "2")
expect("csv", out.splitlines(), [
    "name,device,base_count,test_count,base_duration,test_duration,status",
    "aten::relu,cpu,1,0,10.000,0.000,deleted",
    "gemm,gpu,1,1,40.000,50.000,unchanged",
])
rc, out, err = run(pb, pt)
expect("table: exit 0 and a row per name", (rc, out.count("unchanged")), (0, 6))

# ---- 2. bad input ----------------------------------------------------------------------------
rc, out, err = run(pt, pb, "--step", "3")
expect("missing step: exit 2, one line naming the file",
       (rc, err.count("\n"), "test.json: no ProfilerStep#3" in err), (2, 1, True))
cut = write_cut(os.path.join(WORK, "cut.json"))
rc, out, err = run(pt, cut)
expect("cut trace: exit 2, one line naming the file and offset",
       (rc, err.count("\n"), "cut.json" in err, "offset" in err or "byte" in err),
       (2, 1, True, True))
rc, out, err = run(pb)
expect("one trace only: exit 2", rc, 2)

# ---- 3. the shared resnet50 trace ------------------------------------------------------------
RESNET = os.path.join(SHARED, "traces", "kineto_tb_resnet50_nw0.pt.trace.json.gz")
CPU = {"cpu_op", "operator", "user_annotation", "cuda_runtime", "runtime", "cuda_driver"}
GPU = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset"}


def hta_rows(events, it=None):
    """HTA's compare_traces per trace: {(name, device): [count, dur]}, iteration `it` or all."""
    steps = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "").lower() in ("cpu_op", "operator",
                                                              "user_annotation") \
                and e["name"].startswith("ProfilerStep#"):
            steps.append((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1])))

    def iteration(ts):
        found = -1
        for s, t, n in steps:
            if s <= ts < t:
                found = n
        return found

    launch = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "").lower() in ("cuda_runtime", "runtime",
                                                              "cuda_driver"):
            c = e.get("args", {}).get("correlation")
            if c is not None and c not in launch:
                launch[c] = e["ts"]
    rows = {}
    for e in events:
        cat = e.get("cat", "").lower()
        if e.get("ph") != "X" or (cat not in CPU and cat not in GPU):
            continue
        dev = "gpu" if cat in GPU else "cpu"
        if it is not None:
            if dev == "cpu":
                n = iteration(e["ts"])
            else:
                c = e.get("args", {}).get("correlation")
                n = iteration(launch[c]) if c in launch else -1
            if n != it:
                continue
        r = rows.setdefault((e["name"], dev), [0, 0])
        r[0] += 1
        r[1] += e["dur"]
    return rows


def hta_diff(b, t):
    out = {}
    for k in set(b) | set(t):
        bc, bd = b.get(k, [0, 0])
        tc, td = t.get(k, [0, 0])
        status = ("added" if bc == 0 else "deleted" if tc == 0 else "increased" if tc > bc
                  else "decreased" if tc < bc else "unchanged")
        out[k] = (bc, tc, round(float(bd), 3), round(float(td), 3), status)
    return out


def strobe_diff(*args):
    rc, out, err = run(*args, "-f", "json")
    if rc != 0:
        fail("strobe diff %s: exit %d: %s" % (args, rc, err))
        return {}, []
    rows = json.loads(out)
    return ({(r["name"], r["device"]): (r["base_count"], r["test_count"],
                                       round(r["base_duration"], 3),
                                       round(r["test_duration"], 3), r["status"])
             for r in rows}, rows)


if not os.path.exists(RESNET):
    print("SKIP  resnet50: %s missing" % RESNET)
else:
    events = load(RESNET)["traceEvents"]
    # A changed copy: every third kernel of the first convolution kernel's name dropped, the
    # durations of aten::conv2d doubled, and one operator renamed.
    kname = next(e["name"] for e in events if e.get("cat") == "Kernel")
    changed, seen = [], 0
    for e in events:
        e = dict(e)
        if e.get("cat") == "Kernel" and e["name"] == kname:
            seen += 1
            if seen % 3 == 0:
                continue
        if e.get("cat") == "Operator" and e.get("name") == "aten::conv2d":
            e["dur"] = e["dur"] * 2
        if e.get("cat") == "Operator" and e.get("name") == "aten::relu_":
            e["name"] = "aten::relu_renamed"
        changed.append(e)
    mod = tracegen.write(os.path.join(WORK, "resnet50_changed.json"), changed)

    for it in (None, 7):
        extra = [] if it is None else ["--step", str(it)]
        tag = "resnet50" + ("" if it is None else " --step %d" % it)
        got, rows = strobe_diff(RESNET, RESNET, *extra)
        want = hta_diff(hta_rows(events, it), hta_rows(events, it))
        expect(tag + " vs itself: all rows as computed in Python", got, want)
        expect(tag + " vs itself: all unchanged",
               {r["status"] for r in rows}, {"unchanged"})
        got, rows = strobe_diff(RESNET, mod, *extra)
        want = hta_diff(hta_rows(events, it), hta_rows(changed, it))
        expect(tag + " vs changed copy: rows as computed in Python", got, want)
        expect(tag + " vs changed copy: statuses",
               sorted({r["status"] for r in rows}),
               ["added", "decreased", "deleted", "unchanged"])
        change = [abs(r["test_duration"] - r["base_duration"]) for r in rows]
        expect(tag + ": sorted by the largest change", change, sorted(change, reverse=True))

finish()

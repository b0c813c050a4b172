#!/usr/bin/env python3
"""check_steps.py: `strobe steps TRACE` against numbers worked out independently.

1. Small traces written here, their breakdowns worked out by hand (comments below): steps whose
   device work runs past the CPU step, a trailing step without device work (dropped), and a
   trace without ProfilerStep ranges (one step, 0).
2. Bad input: a cut trace (exit 2, one line naming the file), a malformed event (counted).
3. The shared resnet50 trace (skipped with a message when ../shared is missing), against the
   TensorBoard plugin's definitions applied in plain Python: roles by category, step bounds
   moved to the device's, time given to the first role by priority.

Usage: check_steps.py STROBE SHARED_DIR WORK_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, finish, load, write_cut, x  # noqa: E402
import tracegen  # noqa: E402

STROBE, SHARED, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(WORK, exist_ok=True)
COLS = ["Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec",
        "Other", "Total"]


def run(*args):
    return tracegen.run(STROBE, "steps", "-q", *args)


def write(name, events):
    return tracegen.write(os.path.join(WORK, name), events)


def table(out):
    return [[r["step"]] + [round(r[c], 3) for c in COLS] for r in json.loads(out)]


# ---- 1. hand-made traces ---------------------------------------------------------------------
ev = [
    x("user_annotation", "ProfilerStep#1", 0, 100),
    x("user_annotation", "ProfilerStep#2", 100, 100),
    x("user_annotation", "ProfilerStep#3", 200, 100),
    x("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 8),
    x("cpu_op", "aten::mm", 10, 40),
    x("cuda_runtime", "cudaLaunchKernel", 20, 10, correlation=1),
    x("kernel", "gemm", 40, 30, pid=0, tid=7, correlation=1),
    x("cpu_op", "aten::add", 105, 30),
    x("cuda_runtime", "cudaMemcpyAsync", 110, 10, correlation=2),
    x("gpu_memcpy", "Memcpy HtoD", 150, 70, pid=0, tid=7, correlation=2),
    x("cuda_runtime", "cudaMemsetAsync", 122, 2, correlation=3),
    x("gpu_memset", "Memset", 125, 10, pid=0, tid=7, correlation=3),
    x("python_function", "train.py(1): <module>", 0, 300),  # no role
    x("gpu_user_annotation", "ProfilerStep#1", 40, 30, pid=0, tid=7),  # not a step
    {"ph": "X", "cat": "cpu_op", "name": "aten::bad", "ts": "x", "dur": 1, "pid": 1, "tid": 1},
]
p = write("steps.json", ev)
# By hand. Step 1 [0, 100): its cudaLaunchKernel claims gemm [40, 70), which ends inside it.
#   Kernel 30; Runtime [20, 30) 10; DataLoader [0, 8) 8; CPU Exec: aten::mm [10, 50) less the
#   kernel and the runtime call = [10, 20) + [30, 40) = 20; the gpu_user_annotation copy of
#   ProfilerStep#1 is CPU Exec too, but lies under the kernel. Other 100 - 68 = 32.
# Step 2 [100, 200) claims the copy [150, 220) and the memset [125, 135): it ends at 220.
#   Memcpy 70; Memset 10; Runtime [110, 120) + [122, 124) = 12; CPU Exec: aten::add [105, 135)
#   less the memset and the calls = [105, 110) + [120, 122) + [124, 125) = 8; Other
#   120 - 100 = 20.
# Step 3 claims no device work: dropped, as the plugin drops trailing steps.
rc, out, err = run(p, "-f", "json")
expect("steps: exit 0", rc, 0)
expect("steps: rows", table(out), [
    [1, 30.0, 0.0, 0.0, 0.0, 10.0, 8.0, 20.0, 32.0, 100.0],
    [2, 0.0, 70.0, 10.0, 0.0, 12.0, 0.0, 8.0, 20.0, 120.0],
])
expect("steps: the malformed event is counted on stderr",
       "steps.json: 1 malformed event(s) skipped" in err, True)
rc, out, err = run(p, "--format=csv")
expect("csv", out.splitlines(), [
    "step,Kernel,Memcpy,Memset,Communication,Runtime,DataLoader,CPU Exec,Other,Total",
    "1,30.000,0.000,0.000,0.000,10.000,8.000,20.000,32.000,100.000",
    "2,0.000,70.000,10.000,0.000,12.000,0.000,8.000,20.000,120.000",
])
rc, out, err = run(p)
expect("table: exit 0, two steps", (rc, len([l for l in out.splitlines() if l.strip()[:1] in "12"])),
       (0, 2))

# No ProfilerStep: one step 0, the CPU operators' span [10, 60), extended to the end of the
# kernel its runtime call launched (90). Kernel 20, Runtime 2, CPU Exec [10, 30) - [12, 14) +
# [50, 60) = 28, Other 80 - 50 = 30.
p0 = write("nosteps.json", [
    x("cpu_op", "a", 10, 20), x("cpu_op", "b", 50, 10),
    x("cuda_runtime", "cudaLaunchKernel", 12, 2, correlation=1),
    x("kernel", "k", 70, 20, pid=0, tid=7, correlation=1),
])
rc, out, err = run(p0, "-f", "json")
expect("no steps: one step 0", table(out), [[0, 20.0, 0.0, 0.0, 0.0, 2.0, 0.0, 28.0, 30.0, 80.0]])

# ---- 2. bad input ----------------------------------------------------------------------------
cut = write_cut(os.path.join(WORK, "cut.json"))
rc, out, err = run(cut)
expect("cut trace: exit 2, one line naming the file",
       (rc, err.count("\n"), "cut.json" in err), (2, 1, True))

# ---- 3. the shared resnet50 trace ------------------------------------------------------------
RESNET = os.path.join(SHARED, "traces", "kineto_tb_resnet50_nw0.pt.trace.json.gz")


def merged(rs):
    out = []
    for s, e in sorted(rs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def intersect(a, b):
    out, j = [], 0
    for s, e in a:
        for t, u in b:
            if t < e and u > s:
                out.append([max(s, t), min(e, u)])
    return merged(out)


def subtract(a, b):
    out = []
    for s, e in a:
        cur = s
        for t, u in b:
            if u <= cur or t >= e:
                continue
            if t > cur:
                out.append([cur, t])
            cur = max(cur, u)
        if cur < e:
            out.append([cur, e])
    return out


def length(rs):
    return sum(e - s for s, e in rs)


def plugin_steps(events):
    """The plugin's overview numbers, from its definitions (2021 schema categories)."""
    roles = {c: [] for c in COLS[:7]}
    steps, calls, devs = [], [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, name, s = e.get("cat", "").lower(), e["name"], e["ts"]
        t = s + e["dur"]
        a = e.get("args", {})
        if cat == "kernel":
            roles["Kernel"].append((s, t))
        elif cat in ("memcpy", "gpu_memcpy"):
            roles["Memcpy"].append((s, t))
        elif cat in ("memset", "gpu_memset"):
            roles["Memset"].append((s, t))
        elif cat in ("runtime", "cuda_runtime"):
            roles["Runtime"].append((s, t))
            calls.append((s, t, a.get("correlation")))
        elif cat in ("operator", "cpu_op", "user_annotation"):
            if name.startswith("ProfilerStep#"):
                steps.append([s, t, int(name.split("#")[1])])
            elif name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__"):
                roles["DataLoader"].append((s, t))
            else:
                roles["CPU Exec"].append((s, t))
        if cat in ("kernel", "memcpy", "gpu_memcpy", "memset", "gpu_memset"):
            devs.append((a.get("correlation"), s, t))
    steps.sort()
    by_corr = {}
    for d in devs:
        by_corr.setdefault(d[0], []).append(d)
    # Each runtime call wholly inside a step gives it its device work.
    claimed, info = set(), []
    for st in steps:
        mine = [d for (s, t, c) in calls if st[0] <= s and t <= st[1] for d in by_corr.get(c, [])]
        claimed.update(mine)
        info.append((min((d[1] for d in mine), default=None), max((d[2] for d in mine),
                                                                  default=None), len(mine)))
    if claimed:
        prev = steps[0][0]
        if info[0][0] is not None:
            for d in devs:
                if d not in claimed and d[2] < info[0][0]:
                    prev = max(prev, d[2])
        for st, (lo, hi, n) in zip(steps, info):
            st[0] = max(prev, st[0])
            st[1] = max(st[1], hi if hi is not None else st[0], st[0])
            prev = st[1]
        last = max(i for i, (_, _, n) in enumerate(info) if n > 0)
        keep = last + 1
        if last > 0 and info[last - 1][2] * 0.8 > info[last][2]:
            keep = last
        steps = steps[:keep]
    slots, cover = merged([(s, t) for s, t, _ in steps]), {}
    for c in COLS[:7]:
        cover[c] = intersect(slots, merged(roles[c]))
        slots = subtract(slots, cover[c])
    cover["Other"] = slots
    rows = []
    for s, t, n in steps:
        rows.append([n] + [length(intersect([[s, t]], cover[c])) for c in COLS[:8]] + [t - s])
    return rows


if not os.path.exists(RESNET):
    print("SKIP  resnet50: %s missing" % RESNET)
else:
    events = load(RESNET)["traceEvents"]
    want = [[r[0]] + [round(float(v), 3) for v in r[1:]] for r in plugin_steps(events)]
    rc, out, err = run(RESNET, "-f", "json")
    expect("resnet50: exit 0", rc, 0)
    expect("resnet50: the plugin's step breakdown", table(out), want)
    got = table(out)
    expect("resnet50: the roles add up to each step's total",
           [round(sum(r[1:9]), 3) for r in got], [r[9] for r in got])

finish()

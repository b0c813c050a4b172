#!/usr/bin/env python3
"""Checks HTA's time series in strobe (queue --series, memory-bw, overlay) against numbers worked
out independently of strobe's C code (json, gzip and math modules only, no pandas):

  generated: a trace written here, whose queue lengths and bandwidths are worked out by hand in
             the comments below (kernels without their launch, a launch without its kernel,
             overlapping copies, a copy of 0 us, a running sum that rounding takes below 0), the
             overlay's counter events, and the refusals.
  shared:    every trace in SHARED_DIR/traces: HTA's definitions computed here from the JSON as
             Python reads it (trace_counters.py's, as cli/series.h writes them down), queue
             lengths never below 0, and the overlay of each (its counters, its events, strobe
             check, and the independent checkers of SHARED_DIR/validators on a few).

usage: check_series.py STROBE OUT_DIR generated
       check_series.py STROBE OUT_DIR shared SHARED_DIR   (exit 77 when SHARED_DIR is absent)
"""
import glob, gzip, json, math, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, load, write, write_cut, x  # noqa: E402
import tracegen  # noqa: E402

strobe, out_dir, mode = sys.argv[1:4]
os.makedirs(out_dir, exist_ok=True)


def run(args, expect_rc=0):
    p = subprocess.run([strobe] + args, capture_output=True, text=True)
    if p.returncode != expect_rc:
        fail("%s: exit %d, expected %d; stderr: %s" % (args, p.returncode, expect_rc, p.stderr))
    return p


def json_of(cmd, paths, extra=()):
    p = run([cmd, "-q", "-f", "json"] + list(extra) + list(paths))
    try:
        return json.loads(p.stdout), p.stderr
    except ValueError as e:
        fail("%s %s: output is not JSON (%s): %r" % (cmd, paths, e, p.stdout[:200]))
        return {}, p.stderr


def close(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(p, q) for p, q in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def expect_close(what, got, want):
    if not close(got, want):
        expect(what, got, want)


def describe(v):
    n = len(v)
    mean = sum(v) / n
    std = (sum((y - mean) ** 2 for y in v) / (n - 1)) ** 0.5 if n > 1 else None
    s = sorted(v)

    def q(p):
        pos = p * (n - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)
    return {"count": n, "mean": mean, "std": std, "min": s[0], "25%": q(0.25), "50%": q(0.5),
            "75%": q(0.75), "max": s[-1]}


# ---- generated ----------------------------------------------------------------------------------

def generated():
    """One rank, no profiler steps (nothing restricted), GPU events on pid 0, tid = stream.

    Launches (cat cuda_runtime, pid 1 tid 1, 0.5 us each) and their work (correlation, stream):
      L1 cudaLaunchKernel   ts 10  corr 1 -> K1 kernel ts 30 dur 5, stream 7
      L2 cudaLaunchKernel   ts 12  corr 2 -> K2 kernel ts 40 dur 5, stream 7
      (none)                       corr 3 -> K3 kernel ts 20 dur 5, stream 7: no launch
      (none)                       corr 5 -> K5 kernel ts 25 dur 1, stream 9: no launch
      L6 cudaLaunchKernel   ts 14  corr 6 -> no kernel
      L7 cudaMemcpyAsync    ts 50  corr 7 -> Memcpy HtoD [60, 70) 100 GB/s (1 MB in 10 us), 8
      L8 cudaMemcpyAsync    ts 52  corr 8 -> Memcpy HtoD [65, 75)  50 GB/s, stream 11
      L9 cudaMemsetAsync    ts 53  corr 9 -> Memset [80, 80) 2.5 GB/s (0 us: counts 1 us), 8
      L10 cudaMemcpyAsync   ts 54  corr 10 -> Memcpy DtoD [90, 92) 7 GB/s, stream 8
      L11 cudaMemcpyAsync   ts 55  corr 11 -> Memcpy DtoH [100, 102) 0.7 GB/s, stream 10
      L12 cudaMemcpyAsync   ts 56  corr 12 -> Memcpy DtoH [101, 103) 0.1 GB/s, stream 12
    And two CPU operators that cross (tid 2: A [200, 210), B [205, 215)): the overlay's copy ends
    B with A, and says so.

    Queue length (a kernel counts only from its launch: K3 and K5 count nowhere, L6 neither):
      stream 7:  10: 1, 12: 2, 30: 1, 40: 0          -> count 4, mean 1, std sqrt(2/3),
                                                        quartiles .75 1 1.25, min 0, max 2
      stream 8:  50: 1, 53: 2, 54: 3, 60: 2, 80: 1, 90: 0
                                                     -> count 6, mean 1.5, std sqrt(5.5/5),
                                                        quartiles 1 1.5 2, min 0, max 3
      streams 10, 11, 12: 1 at the launch, 0 at the copy -> count 2, mean .5, std sqrt(.5)
      stream 9 has no point; kernels_without_launch: 2 (K3, K5).
    Bandwidth per kind (kinds in name order, all streams of the kind together), GB/s:
      Memcpy DtoD: 90: 7, 92: 0                      -> summary over [7]: count 1, std null
      Memcpy DtoH: 100: .7, 101: .7+.1, 102: (.7+.1)-.7, 103: ((.7+.1)-.7)-.1, which is
                   -2.8e-17 in doubles: shown as 0  -> summary over the first three
      Memcpy HtoD: 60: 100, 65: 150, 70: 50, 75: 0   -> [100, 150, 50]: mean 100, std 50,
                                                        quartiles 75 100 125
      Memset:      80: 2.5, 81: 0                    -> [2.5]
    """
    ev = []

    def launch(name, ts, corr):
        ev.append(x("cuda_runtime", name, ts, 0.5, correlation=corr))

    def work(cat, name, ts, dur, corr, stream, bw=None):
        args = {"stream": stream, "correlation": corr}
        if bw is not None:
            args["memory bandwidth (GB/s)"] = bw
        ev.append(x(cat, name, ts, dur, tid=stream, pid=0, **args))
    launch("cudaLaunchKernel", 10, 1)
    launch("cudaLaunchKernel", 12, 2)
    launch("cudaLaunchKernel", 14, 6)
    launch("cudaMemcpyAsync", 50, 7)
    launch("cudaMemcpyAsync", 52, 8)
    launch("cudaMemsetAsync", 53, 9)
    launch("cudaMemcpyAsync", 54, 10)
    launch("cudaMemcpyAsync", 55, 11)
    launch("cudaMemcpyAsync", 56, 12)
    work("kernel", "k1", 30, 5, 1, 7)
    work("kernel", "k2", 40, 5, 2, 7)
    work("kernel", "k3", 20, 5, 3, 7)
    work("kernel", "k5", 25, 1, 5, 9)
    work("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 60, 10, 7, 8, 100.0)
    work("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 65, 10, 8, 11, 50.0)
    work("gpu_memset", "Memset (Device)", 80, 0, 9, 8, 2.5)
    work("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 90, 2, 10, 8, 7.0)
    work("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 100, 2, 11, 10, 0.7)
    work("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 101, 2, 12, 12, 0.1)
    ev.append(x("cpu_op", "A", 200, 10, tid=2))
    ev.append(x("cpu_op", "B", 205, 10, tid=2))
    path = write(os.path.join(out_dir, "series.json"), ev)

    # queue --series
    q7 = [(10, 1), (12, 2), (30, 1), (40, 0)]
    q8 = [(50, 1), (53, 2), (54, 3), (60, 2), (80, 1), (90, 0)]
    qs = ((7, q7), (8, q8), (10, [(55, 1), (100, 0)]), (11, [(52, 1), (65, 0)]),
          (12, [(56, 1), (101, 0)]))
    # The series' ts are HTA's, aligned: from the earliest event (L1, at 10).
    want = [{"rank": 0, "ts": t - 10, "pid": 0, "tid": st, "stream": st, "queue_length": n}
            for st, pts in qs for t, n in pts]
    got, err = json_of("queue", [path], ["--series"])
    expect("queue --series, generated", got.get("series"), want)
    expect("queue --series, kernels without launch", got.get("kernels_without_launch"),
           [{"rank": 0, "kernels_without_launch": 2}])
    if "2 kernels without their launch" not in err:
        fail("queue --series: stderr does not count the kernels without launch: %r" % err)
    # queue (statistics)
    one = {"count": 4, "mean": 1, "std": (2 / 3) ** 0.5, "min": 0, "25%": 0.75, "50%": 1,
           "75%": 1.25, "max": 2}
    six = {"count": 6, "mean": 1.5, "std": 1.1 ** 0.5, "min": 0, "25%": 1, "50%": 1.5,
           "75%": 2, "max": 3}
    two = {"count": 2, "mean": 0.5, "std": 0.5 ** 0.5, "min": 0, "25%": 0.25, "50%": 0.5,
           "75%": 0.75, "max": 1}
    got, _ = json_of("queue", [path])
    want = [dict({"rank": 0, "stream": st}, **d)
            for st, d in ((7, one), (8, six), (10, two), (11, two), (12, two))]
    expect_close("queue, generated", got.get("summary"), want)
    expect("queue, generated: kernels without launch", got.get("kernels_without_launch"),
           [{"rank": 0, "kernels_without_launch": 2}])
    # csv and table name the kernels without launch too
    p = run(["queue", "-q", "-f", "csv", path])
    if "rank,kernels_without_launch\n0,2" not in p.stdout:
        fail("queue -f csv: no kernels_without_launch table: %r" % p.stdout)

    # memory-bw --series
    dtoh = [0.7, 0.7 + 0.1, 0.7 + 0.1 - 0.7, 0.7 + 0.1 - 0.7 - 0.1]
    if not dtoh[3] < 0:
        fail("the DtoH sum was meant to round below 0: %r" % dtoh)
    kinds = [("Memcpy DtoD", [(90, 7.0), (92, 0.0)]),
             ("Memcpy DtoH", [(100, dtoh[0]), (101, dtoh[1]), (102, dtoh[2]), (103, 0.0)]),
             ("Memcpy HtoD", [(60, 100.0), (65, 150.0), (70, 50.0), (75, 0.0)]),
             ("Memset", [(80, 2.5), (81, 0.0)])]
    want = [{"rank": 0, "ts": t - 10, "pid": 0, "name": k, "memory_bw_gbps": v}
            for k, pts in kinds for t, v in pts]
    got, _ = json_of("memory-bw", [path], ["--series"])
    expect_close("memory-bw --series, generated", got, want)
    # memory-bw (statistics)
    got, _ = json_of("memory-bw", [path])
    want = [dict({"rank": 0, "name": "Memcpy DtoD"}, **describe([7.0])),
            dict({"rank": 0, "name": "Memcpy DtoH"}, **describe(dtoh[:3])),
            dict({"rank": 0, "name": "Memcpy HtoD"}, **describe([100.0, 150.0, 50.0])),
            dict({"rank": 0, "name": "Memset"}, **describe([2.5]))]
    expect_close("memory-bw, generated", got, want)
    expect("memory-bw, HtoD by hand", [got[2][k] for k in ("count", "mean", "std", "25%", "75%")]
           if len(got) > 2 else None, [3, 100, 50, 75, 125])
    p = run(["memory-bw", "-q", "-f", "csv", path])
    if not p.stdout.startswith("rank,name,count,mean,std,min,25%,50%,75%,max\n0,Memcpy DtoD,1,"):
        fail("memory-bw -f csv: %r" % p.stdout[:200])
    # The table format's headers say the unit of the values: the bandwidths' GB/s, the series'
    # times in us (CSV and JSON keep HTA's names, above).
    for extra, want_heads in (([], ["rank", "name", "count", "mean (GB/s)", "std (GB/s)",
                                    "min (GB/s)", "25% (GB/s)", "50% (GB/s)", "75% (GB/s)",
                                    "max (GB/s)"]),
                              (["--series"], ["rank", "ts (us)", "pid", "name",
                                              "memory_bw (GB/s)"])):
        lines = run(["memory-bw", "-q"] + extra + [path]).stdout.splitlines()
        heads = [h.strip() for h in re.split(r"\s{2,}", lines[1].strip())] if len(lines) > 1 else []
        expect("memory-bw %s: table headers" % " ".join(extra), heads, want_heads)

    # overlay: the counters as HTA names them, the events kept
    for out in ("overlay.json", "overlay.json.gz"):
        opath = os.path.join(out_dir, out)
        p = run(["overlay", "-q", path, "-o", opath])
        if "1 event ended after the event around it" not in p.stderr:
            fail("overlay %s: the crossing event is not said: %r" % (out, p.stderr))
        if out.endswith(".gz"):
            with open(opath, "rb") as f:
                if f.read(2) != b"\x1f\x8b":
                    fail("overlay %s: not gzip" % out)
        doc = load(opath)
        counters = [e for e in doc["traceEvents"] if e.get("ph") == "C"]
        want = [{"ph": "C", "name": "Queue Length", "pid": 0, "tid": st, "ts": t, "id": st,
                 "args": {"Queue Length": n}}
                for st, pts in qs for t, n in pts]
        want += [{"ph": "C", "name": k, "pid": 0, "tid": 0, "ts": t, "args": {"Memcpy BW": v}}
                 for k, pts in kinds for t, v in pts]
        expect_close("overlay %s: counter events" % out, counters, want)
        # Every event kept as it was, but B, which crosses A: ended with A (at most 5 us).
        xs = sorted((e["name"], e["ts"], e["dur"]) for e in doc["traceEvents"] if e.get("ph") == "X")
        b = [d for n, t, d in xs if n == "B"]
        if len(b) != 1 or not 4.99 <= b[0] <= 5:
            fail("overlay %s: B not ended with A: %r" % (out, b))
        expect("overlay %s: the trace's events" % out, [e for e in xs if e[0] != "B"],
               sorted((e["name"], e["ts"], e["dur"]) for e in ev if e["name"] != "B"))
        run(["check", "-q", opath])
    # --series picks the counters
    opath = os.path.join(out_dir, "overlay_queue.json")
    run(["overlay", "-q", "--series", "queue", path, opath])
    names = set(e["name"] for e in load(opath)["traceEvents"] if e.get("ph") == "C")
    expect("overlay --series queue", names, {"Queue Length"})
    run(["overlay", "-q", "--series=memory-bw", path, "-o", opath])
    names = set(e["name"] for e in load(opath)["traceEvents"] if e.get("ph") == "C")
    expect("overlay --series memory-bw", names,
           {"Memcpy DtoD", "Memcpy DtoH", "Memcpy HtoD", "Memset"})

    # Refusals: exit 2, one line, the input untouched.
    with open(path) as f:
        before = f.read()
    cut = write_cut(os.path.join(out_dir, "cut.json"))
    for args, what in (([path, "-o", path], "is the input"),
                       ([path, "-o", os.path.join(out_dir, ".", "series.json")], "is the input"),
                       (["-", "-o", opath], "standard input"),
                       ([path, "-o", "-"], "standard output"),
                       ([out_dir, "-o", opath], "a folder"),
                       ([cut, "-o", opath], "byte"),
                       ([os.path.join(out_dir, "missing.json"), "-o", opath], "missing.json"),
                       ([path], "give one TRACE"),
                       ([path, "-o", os.path.join(out_dir, "o.pftrace")], "written as JSON"),
                       ([path, "-o", os.path.join(out_dir, "nodir", "o.json")], "nodir"),
                       (["--series", "bogus", path, "-o", opath], "--series")):
        p = run(["overlay", "-q"] + args, 2)
        if what not in p.stderr or p.stderr.count("\n") != 1:
            fail("overlay %s: stderr %r, wanted one line with %r" % (args, p.stderr, what))
    with open(path) as f:
        if f.read() != before:
            fail("overlay -o INPUT changed the input")
    p = subprocess.run([strobe, "memory-bw", "-q", "-"], input=before, capture_output=True,
                       text=True)
    if p.returncode != 2 or "standard input" not in p.stderr:
        fail("memory-bw -: exit %d, %r" % (p.returncode, p.stderr))
    for cmd in (["memory-bw"], ["memory-bw", "--series"], ["queue", "--series"]):
        p = run(cmd + ["-q", cut], 2)
        if "cut.json" not in p.stderr or p.stderr.count("\n") != 1:
            fail("%s, syntax error: %r" % (cmd, p.stderr))


# ---- shared: HTA's definitions in Python ----------------------------------------------------------

STEP = re.compile(r"^ProfilerStep#[0-9]")
# The launches and memory kernels by name: strobe's definitions before and after the change to
# HTA's full tables (cli/hta.c: hta_is_launch, hta_kernel_type); strobe must give one set's
# numbers throughout.
LAUNCHES_CUDA = ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync")
KERNEL_LAUNCH = re.compile(r"(cuda.*LaunchKernel)|(cuLaunchKernel)|(^runFunction)")
LAUNCHES_HTA = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
                "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution",
                "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
                "hipMemcpyWithStream")
COMMUNICATE = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
MEMORY = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
DEFS = {
    "cuda": (lambda n: n in LAUNCHES_CUDA,
             lambda n: "ncclKernel" not in n and ("Memcpy" in n or "Memset" in n)),
    "hta": (lambda n: KERNEL_LAUNCH.match(n) is not None or n in LAUNCHES_HTA,
            lambda n: not COMMUNICATE.match(n) and MEMORY.match(n) is not None),
}


def num_arg(a, key):
    """An int arg as HTA's int() reads it, else -1."""
    v = a.get(key, -1)
    if isinstance(v, bool):
        return -1
    if isinstance(v, int):
        return v
    try:
        return int(v)
    except (TypeError, ValueError):
        return -1


def pid_num(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return int(v) if isinstance(v, str) and v.isdigit() else 0


def hta_rows(doc):
    """HTA's rows: (ts, end, name, stream, corr, is_gpu, index, pid, tid, bw)."""
    rows = []
    for i, e in enumerate(doc.get("traceEvents", [])):
        if not isinstance(e, dict) or e.get("ph") != "X" or "dur" not in e:
            continue
        cat, name = e.get("cat"), e.get("name")
        if not isinstance(cat, str) or cat in ("", "Trace") or not isinstance(name, str):
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or dur < 0:
            continue
        ts, dur = float(ts), float(dur)
        a = e.get("args") if isinstance(e.get("args"), dict) else {}
        stream, corr = num_arg(a, "stream"), num_arg(a, "correlation")
        gpu = (stream >= 0 and corr >= 0) or name in ("Event Sync", "Context Sync")
        bw = a.get("memory bandwidth (GB/s)", 0.0)
        bw = float(bw) if isinstance(bw, (int, float)) and not isinstance(bw, bool) else 0.0
        rows.append((math.ceil(ts), math.floor(ts + dur), name, stream, corr, gpu, i,
                     pid_num(e.get("pid")), pid_num(e.get("tid")), bw))
    return rows


def restrict(rows):
    """HTA's profiler-step restriction (one rank): the rows kept, each GPU row once per kept CPU
    row of its correlation, in HTA's order (kept GPU rows, then CPU rows), and whether it applied."""
    steps = set(r[2] for r in rows if STEP.match(r[2]))
    if len(steps) < 2:
        return sorted(rows, key=lambda r: r[6]), False
    cpu = [r for r in rows if not r[5]]
    if not cpu:
        return sorted(rows, key=lambda r: r[6]), False
    st = [r[0] for r in cpu if STEP.match(r[2])]
    limit = max(st) if st else min(r[0] for r in cpu)
    kept_cpu = [r for r in cpu if r[0] < limit]
    count = {}
    for r in kept_cpu:
        count[r[4]] = count.get(r[4], 0) + 1
    gpu = []
    for r in sorted((r for r in rows if r[5]), key=lambda r: r[6]):
        gpu += [r] * count.get(r[4], 0)
    return gpu + sorted(kept_cpu, key=lambda r: r[6]), True


def queue_series(all_rows, rows, restricted, is_launch):
    linked = set(r[4] for r in all_rows if r[5] and r[4] != -1)
    kernels = [(k, r) for k, r in enumerate(rows) if r[3] != -1]
    by_corr = {}
    for k, r in kernels:
        by_corr.setdefault(r[4], []).append((k, r))
    pts, launched = [], set()
    for k, r in enumerate(rows):
        if is_launch(r[2]) and not r[5] and r[4] != -1 and r[4] in linked:
            launched.add(r[4])
            for _, g in by_corr.get(r[4], []):
                pts.append((g[3], r[0], 0, k, 1, g[7], g[8]))
    unlaunched = 0
    for k, g in kernels:
        if g[4] in launched and g[4] != -1:
            pts.append((g[3], g[0], 1, k, -1, g[7], g[8]))
        else:
            unlaunched += 1
    pts.sort(key=lambda p: (p[0], p[1], p[2], p[3]))
    out, run_, prev = [], 0, None
    for p in pts:
        if p[0] != prev:
            run_, prev = 0, p[0]
        run_ += p[4]
        out.append({"rank": 0, "ts": p[1], "pid": p[5], "tid": p[6], "stream": p[0],
                    "queue_length": run_})
    return out, unlaunched


def kind_of(name):
    if name[:6] == "Memset":
        return "Memset"
    if name[:6] != "Memcpy":
        return "Memcpy Unknown"
    return name[:11]


def bw_series(rows, is_memory):
    pts = []
    mem = [(k, r) for k, r in enumerate(rows) if r[3] != -1 and is_memory(r[2])]
    for k, r in mem:
        dur = r[1] - r[0] or 1
        pts.append((kind_of(r[2]), r[0], 0, k, r[9], r[7]))
        pts.append((kind_of(r[2]), r[0] + dur, 1, k, -r[9], r[7]))
    pts.sort(key=lambda p: (p[0], p[1], p[2], p[3]))
    out, run_, prev = [], 0.0, None
    for p in pts:
        if p[0] != prev:
            run_, prev = 0.0, p[0]
        run_ += p[4]
        out.append({"rank": 0, "ts": p[1], "pid": p[5], "name": p[0],
                    "memory_bw_gbps": run_ if run_ >= 0 else 0.0})
    return out


def bw_summary(series):
    out = []
    for k in sorted(set(p["name"] for p in series)):
        v = [p["memory_bw_gbps"] for p in series if p["name"] == k and p["memory_bw_gbps"] > 0]
        if v:
            out.append(dict({"rank": 0, "name": k}, **describe(v)))
    return out


def check_findings(path):
    p = subprocess.run([strobe, "check", "-q", "-f", "json", path], capture_output=True,
                       text=True)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        fail("check %s: output is not JSON: %r" % (path, p.stdout[:200]))
        return {}
    return {f.get("kind"): f.get("count") for f in doc.get("findings") or []}


def shared(shared_dir):
    tdir = os.path.join(shared_dir, "traces")
    if not os.path.isdir(tdir):
        print("no %s: skipped" % tdir)
        sys.exit(77)
    checker = os.path.join(shared_dir, "validators", "check_all.sh")
    paths = sorted(glob.glob(os.path.join(tdir, "*.json*")))
    checked = 0
    for path in paths:
        base = os.path.basename(path)
        doc = load(path)
        all_rows = hta_rows(doc)
        rows, restricted = restrict(all_rows)
        got_q, _ = json_of("queue", [path], ["--series"])
        got_b, _ = json_of("memory-bw", [path], ["--series"])
        got_s, _ = json_of("memory-bw", [path])
        negative = [p for p in got_q.get("series", []) if p["queue_length"] < 0]
        if negative:
            fail("queue --series %s: %d negative queue lengths, first %r"
                 % (base, len(negative), negative[0]))
        # --series gives HTA's aligned times (from the earliest row); the overlay the trace's.
        t0 = min((r[0] for r in all_rows), default=0)
        align = lambda pts: [dict(p, ts=p["ts"] - t0) for p in pts]
        matched = None
        for name, (is_launch, is_memory) in DEFS.items():
            series, unlaunched = queue_series(all_rows, rows, restricted, is_launch)
            bws = bw_series(rows, is_memory)
            if (got_q.get("series") == align(series) and
                    got_q.get("kernels_without_launch") ==
                    [{"rank": 0, "kernels_without_launch": unlaunched}] and
                    close(got_b, align(bws)) and close(got_s, bw_summary(bws))):
                matched = name
                break
        if matched is None:
            series, unlaunched = queue_series(all_rows, rows, restricted, DEFS["hta"][0])
            bws = bw_series(rows, DEFS["hta"][1])
            expect("queue --series %s" % base, got_q.get("series"), align(series))
            expect("queue --series %s: kernels without launch" % base,
                   got_q.get("kernels_without_launch"),
                   [{"rank": 0, "kernels_without_launch": unlaunched}])
            expect_close("memory-bw --series %s" % base, got_b, align(bws))
            expect_close("memory-bw %s" % base, got_s, bw_summary(bws))
            continue
        print("ok    %s: queue and memory bandwidth series (%s definitions: %d and %d points)"
              % (base, matched, len(series), len(bws)))
        # The overlay: its counters are the series, its events the trace's.
        out = os.path.join(out_dir, "overlay_" + base.split(".")[0] + ".json.gz")
        run(["overlay", "-q", path, "-o", out])
        odoc = load(out)
        counters = [e for e in odoc["traceEvents"] if e.get("ph") == "C"]
        ql = [e for e in counters if e.get("name") == "Queue Length"]
        expect("overlay %s: queue length counters" % base,
               [(e["args"]["Queue Length"], e["id"], e["pid"], e["tid"]) for e in ql],
               [(p["queue_length"], p["stream"], p["pid"], p["tid"]) for p in series])
        bwc = [e for e in counters if e.get("name") != "Queue Length"]
        if not close([(e["name"], e["args"]["Memcpy BW"], e["pid"]) for e in bwc],
                     [(p["name"], p["memory_bw_gbps"], p["pid"]) for p in bws]):
            expect("overlay %s: bandwidth counters" % base,
                   [(e["name"], e["args"]["Memcpy BW"]) for e in bwc],
                   [(p["name"], p["memory_bw_gbps"]) for p in bws])
        # The counters' times are HTA's, on the copy's base (the trace's own, or one the copy
        # gives a trace without: every time moves by the difference).
        shift = (odoc.get("baseTimeNanoseconds", 0) - doc.get("baseTimeNanoseconds", 0)) / 1000
        expect("overlay %s: queue length counters' ts" % base, [e["ts"] for e in ql],
               [p["ts"] - shift for p in series])
        expect("overlay %s: bandwidth counters' ts" % base, [e["ts"] for e in bwc],
               [p["ts"] - shift for p in bws])
        # strobe check finds nothing the trace itself does not have (its flows without an end).
        f_in, f_out = check_findings(path), check_findings(out)
        for k, n in f_out.items():
            if k not in ("flow_without_end", "flow_without_start") or n > f_in.get(k, 0):
                fail("overlay %s: strobe check finds %s %d (the trace: %r)" % (base, k, n, f_in))
        if os.access(checker, os.X_OK) and base.startswith(("hta_ns_resolution", "hta_amd",
                                                           "kineto_docs")):
            p = subprocess.run([checker, out, "--strict"], capture_output=True, text=True)
            if p.returncode != 0:
                fail("overlay %s: check_all.sh --strict: exit %d: %s"
                     % (base, p.returncode, (p.stdout + p.stderr)[-2000:]))
            else:
                print("ok    overlay %s: check_all.sh --strict" % base)
        checked += 1
    print("%d shared traces checked" % checked)


def string_tids():
    """Two GPU streams whose tids are strings, as Kineto writes them ("stream 7", "stream 8"):
    K7 runs 10..60 on "stream 7" and K8 20..70 on "stream 8", each launched (corr 1, 2). The copy
    keeps them on two threads (their times overlap: on one thread K7 would be cut at K8's start),
    each named by its string, and with numbers for ids."""
    ev = [{"ph": "X", "cat": "kernel", "name": "K7", "pid": 0, "tid": "stream 7", "ts": 10,
           "dur": 50, "args": {"stream": 7, "correlation": 1, "device": 0}},
          {"ph": "X", "cat": "kernel", "name": "K8", "pid": 0, "tid": "stream 8", "ts": 20,
           "dur": 50, "args": {"stream": 8, "correlation": 2, "device": 0}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
           "ts": 5, "dur": 3, "args": {"correlation": 1}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
           "ts": 9, "dur": 3, "args": {"correlation": 2}}]
    path = os.path.join(out_dir, "string_tids.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": ev}, f)
    out = os.path.join(out_dir, "string_tids.overlay.json")
    p = run(["overlay", "-q", path, "-o", out])
    expect("overlay, string tids: nothing cut", "ended" in p.stderr, False)
    with open(out) as f:
        doc = json.load(f)
    k = {e["name"]: e for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"] in ("K7", "K8")}
    expect("overlay, string tids: ids are numbers",
           all(isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int) for e in k.values()),
           True)
    expect("overlay, string tids: two threads", len({k[n]["tid"] for n in k}), 2)
    expect("overlay, string tids: durations kept", sorted(round(e["dur"]) for e in k.values()),
           [50, 50])
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    expect("overlay, string tids: named by their strings",
           sorted(names.get((e["pid"], e["tid"])) for e in k.values()), ["stream 7", "stream 8"])


if mode == "generated":
    generated()
    string_tids()
elif mode == "shared":
    shared(sys.argv[4])
else:
    sys.exit("usage: check_series.py STROBE OUT_DIR generated|shared [SHARED_DIR]")
tracegen.finish()

#!/usr/bin/env python3
"""Checks strobe's HTA kernel analyses against numbers worked out independently of strobe's C code
(json, gzip and math modules only, no pandas):

  counters             HTA's CUPTI counter analysis (get_counter_data_with_operators)
  launches --by-op     HTA's get_aten_op_kernels_and_delay
  kernels --sequences  HTA's get_frequent_cuda_kernel_sequences, and its overlaid trace (-o)

  generated: traces written here, whose numbers are worked out by hand in the docstrings below,
             and the refusals of bad input (exit 2, one line on stderr).
  shared:    SHARED_DIR/traces/hta_cupti_profiler.json.gz against what HTA's own test states for
             it (tests/test_cupti_profiler.py: 77 kernels, the 5th's counters and operators), and
             every row of it against the pairing and nesting recomputed here; launches --by-op on
             every shared trace against HTA's definition recomputed here; an overlaid trace of a
             generated trace through SHARED_DIR/validators/check_all.sh --strict.

usage: check_kernels_hta.py STROBE OUT_DIR generated
       check_kernels_hta.py STROBE OUT_DIR shared SHARED_DIR   (exit 77 when SHARED_DIR is absent)
"""
import bisect, glob, json, math, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, finish, load, mapped_ids, with_ids, write, x  # noqa: E402

strobe, out_dir, mode = sys.argv[1:4]
os.makedirs(out_dir, exist_ok=True)


def run(args, expect_rc=0):
    p = subprocess.run([strobe] + args, capture_output=True, text=True)
    if p.returncode != expect_rc:
        fail("%s: exit %d, expected %d; stderr: %s" % (args, p.returncode, expect_rc, p.stderr))
    return p


def rows_of(cmd, paths, extra=()):
    p = run([cmd, "-q", "-f", "json"] + list(extra) + list(paths))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("%s %s: output is not JSON (%s): %r" % (cmd, paths, e, p.stdout[:200]))
        return []


def parsed(p, what):
    """The JSON on p's stdout, or None after a failure."""
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("%s: output is not JSON (%s): %r" % (what, e, p.stdout[:200]))
        return None


def refused(args, what):
    """A usage or input error: exit 2 and one line on stderr."""
    p = run(args, 2)
    lines = p.stderr.strip().splitlines()
    if len(lines) != 1 or "strobe" not in lines[0]:
        fail("%s (%s): want one line on stderr, got %r" % (args, what, p.stderr))


def kernel(name, ts, dur, corr, stream=7, cat="kernel", tid=None):
    return x(cat, name, ts, dur, tid=stream if tid is None else tid, pid=0, stream=stream,
             correlation=corr)


def launch(ts, dur, corr, name="cudaLaunchKernel", tid=1):
    return x("cuda_runtime", name, ts, dur, tid=tid, correlation=corr)


def op(name, ts, dur, tid=1):
    return x("cpu_op", name, ts, dur, tid=tid)


# ---- counters -----------------------------------------------------------------------------------

def counters_generated():
    """Four cuda_profiler_range kernels (pid 0, tid 0, no correlation), written out of order, and
    four launches whose names start with cudaLaunchKernel (one cudaLaunchKernelExC); a
    cudaMemcpyAsync is no launch. Paired by start: kA (1000) - launch 20, kB (1100) - launch 40,
    kC (1200) - ExC 220, kD (1300) - launch 400.
      launch 20 and 40 lie in aten::convolution [10, 90] in aten::conv2d [0, 100]: op_stack
        "aten::conv2d;aten::convolution", top aten::conv2d, bottom aten::convolution;
      ExC 220 in aten::relu [210, 260] in user_annotation "step" [200, 300] (not a cpu_op):
        "aten::relu" for all three;
      launch 400: no operator: "" for all three.
    Counters, columns in name order c.a, c.b, c.x: kA 7, 5, -1; kB 8, -1, -1; kC -1, 9, and c.x a
    string (null); kD -1, -1, -1. ts 1000..1300 (the earliest row starts at 0), dur 10."""
    cnt = lambda name, ts, **a: dict(x("cuda_profiler_range", name, ts, 10, tid=0, pid=0), args=a)
    ev = [op("aten::conv2d", 0, 100), op("aten::convolution", 10, 80),
          launch(20, 5, 1), launch(40, 5, 2),
          x("user_annotation", "step", 200, 100), op("aten::relu", 210, 50),
          launch(220, 5, 3, "cudaLaunchKernelExC"), launch(400, 5, 4),
          x("cuda_runtime", "cudaMemcpyAsync", 500, 5, correlation=5),
          cnt("kC", 1200, **{"c.b": 9, "c.x": "str"}), cnt("kA", 1000, **{"c.b": 5, "c.a": 7}),
          cnt("kD", 1300), cnt("kB", 1100, **{"c.a": 8})]
    path = write(os.path.join(out_dir, "counters.json"), ev)
    pos = {(e["name"], e["ts"]): k for k, e in enumerate(ev)}
    stack = "aten::conv2d;aten::convolution"
    want = []
    for name, ts, lts, st, top, bottom, vals in (
            ("kA", 1000, 20, stack, "aten::conv2d", "aten::convolution", (7, 5, -1)),
            ("kB", 1100, 40, stack, "aten::conv2d", "aten::convolution", (8, -1, -1)),
            ("kC", 1200, 220, "aten::relu", "aten::relu", "aten::relu", (-1, 9, None)),
            ("kD", 1300, 400, "", "", "", (-1, -1, -1))):
        lname = "cudaLaunchKernelExC" if lts == 220 else "cudaLaunchKernel"
        want.append({"rank": 0, "index": pos[(name, ts)], "index_runtime": pos[(lname, lts)],
                     "name": name, "cat": "cuda_profiler_range", "ts": ts, "dur": 10,
                     "op_stack": st, "top_level_op": top, "bottom_level_op": bottom,
                     "c.a": vals[0], "c.b": vals[1], "c.x": vals[2]})
    expect("counters generated", rows_of("counters", [path]), want)
    got = run(["counters", "-q", "-f", "csv", path]).stdout.splitlines()
    expect("counters csv header", got[0],
           "rank,index,index_runtime,name,cat,ts,dur,op_stack,top_level_op,bottom_level_op,"
           "c.a,c.b,c.x")
    # One launch more than kernels: HTA gives no rows for the rank, and says why.
    path = write(os.path.join(out_dir, "counters_extra.json"), ev + [launch(600, 5, 6)])
    p = run(["counters", "-q", "-f", "json", path])
    expect("counters, 5 launches for 4 kernels", parsed(p, "counters"), [])
    if "5 kernel launches but 4 cuda_profiler_range kernels" not in p.stderr:
        fail("counters, 5 launches for 4 kernels: stderr %r" % p.stderr)
    # No cuda_profiler_range event: no rows, and a note.
    path = write(os.path.join(out_dir, "counters_none.json"), ev[:9])
    p = run(["counters", "-q", "-f", "json", path])
    expect("counters, no profiler range", parsed(p, "counters"), [])
    if "no events of cat cuda_profiler_range" not in p.stderr:
        fail("counters, no profiler range: stderr %r" % p.stderr)
    # More counters than a table holds (54 beside the 10 fixed columns): refused.
    many = dict(("c%02d" % k, k) for k in range(60))
    path_many = write(os.path.join(out_dir, "counters_many.json"),
                      ev[:9] + [cnt("kA", 1000, **many)])
    refused(["counters", path_many], "60 counters")
    refused(["counters", "-"], "standard input")
    refused(["counters", os.path.join(out_dir, "missing.json")], "missing file")
    refused(["counters", "-f", "yaml", path], "bad format")
    refused(["counters"], "no trace")


# ---- launches --by-op ---------------------------------------------------------------------------

def by_op_trace():
    """Thread 1 (and one op on thread 2, aten::foo [0, 2000], which encloses every launch in time:
    HTA looks at every thread). Launch (ts, dur) -> the aten op that encloses it with the latest
    start (of equal starts the shortest) -> its kernel; delays op = launch - op start, runtime =
    kernel - launch start:
      20/10 -> aten::addmm@10 -> gemm@100: 10, 80      40/10 -> addmm@10 -> bias@130: 30, 90
      70/10 -> aten::linear@0 (foo@0 is longer) -> post@150: 70, 80
      215/10 -> addmm@210 -> gemm@300: 5, 85           230/10 -> addmm@210 -> bias@320: 20, 90
      280/10 -> linear@200 -> post@340: 80, 60
      405/10 -> aten::relu@400 -> relu_k@500: 5, 95
      600/5 -> aten::foo@0 (thread 2) -> k8@700: 600, 100
      802/5 cudaMemsetAsync -> aten::zero_@800 -> "Memset (Device)"@900: 2, 98
      1005/5 -> aten::mul@1000, but no kernel of its correlation: nothing
      1100/10 -> aten::abs_@1100 [1100, 1110] (aten::abs@1100 is longer; the bounds count) ->
        abs_k@1200: 0, 100
      aten::div@1300, 1400, 1500 -> div_k: op delays 1, 1, 2; runtime 10, 10, 11
    Calls (thread, op, start) and their first launch's delays; groups (aten_op_name,
    kernel_sequence): count, mean op delay, mean runtime delay:
      div "div_k" 3, 4/3 = 1.333, 31/3 = 10.333    addmm "gemm -> bias" 2, 7.5, 82.5
      linear "post" 2, 75, 70       abs_ "abs_k" 1, 0, 100      foo "k8" 1, 600, 100
      relu "relu_k" 1, 5, 95        zero_ "Memset (Device)" 1, 2, 98
    Default order: occurrence_count, largest first; ties by (aten_op_name, kernel_sequence)."""
    ev = [op("aten::foo", 0, 2000, tid=2),
          op("aten::linear", 0, 100), op("aten::addmm", 10, 50),
          launch(20, 10, 1), launch(40, 10, 2), launch(70, 10, 3),
          op("aten::linear", 200, 100), op("aten::addmm", 210, 50),
          launch(215, 10, 4), launch(230, 10, 5), launch(280, 10, 6),
          op("aten::relu", 400, 20), launch(405, 10, 7),
          launch(600, 5, 8),
          op("aten::zero_", 800, 10), launch(802, 5, 9, "cudaMemsetAsync"),
          op("aten::mul", 1000, 20), launch(1005, 5, 10),
          op("aten::abs", 1100, 20), op("aten::abs_", 1100, 10), launch(1100, 10, 11),
          op("aten::div", 1300, 20), launch(1301, 5, 12),
          op("aten::div", 1400, 20), launch(1401, 5, 13),
          op("aten::div", 1500, 20), launch(1502, 5, 14),
          kernel("gemm", 100, 10, 1), kernel("bias", 130, 10, 2), kernel("post", 150, 10, 3),
          kernel("gemm", 300, 10, 4), kernel("bias", 320, 10, 5), kernel("post", 340, 10, 6),
          kernel("relu_k", 500, 10, 7), kernel("k8", 700, 10, 8),
          kernel("Memset (Device)", 900, 5, 9, cat="gpu_memset"),
          kernel("abs_k", 1200, 10, 11), kernel("div_k", 1311, 5, 12),
          kernel("div_k", 1411, 5, 13), kernel("div_k", 1513, 5, 14)]
    return ev


def by_op_row(name, seq, n, d1, d2):
    return {"rank": 0, "aten_op_name": name, "kernel_sequence": seq, "occurrence_count": n,
            "avg_aten_op_launch_delay": d1, "avg_runtime_delay": d2}


BY_OP = {"div": by_op_row("aten::div", "div_k", 3, 1.333, 10.333),
         "addmm": by_op_row("aten::addmm", "gemm -> bias", 2, 7.5, 82.5),
         "linear": by_op_row("aten::linear", "post", 2, 75, 70),
         "abs_": by_op_row("aten::abs_", "abs_k", 1, 0, 100),
         "foo": by_op_row("aten::foo", "k8", 1, 600, 100),
         "relu": by_op_row("aten::relu", "relu_k", 1, 5, 95),
         "zero_": by_op_row("aten::zero_", "Memset (Device)", 1, 2, 98)}


def by_op_generated():
    path = write(os.path.join(out_dir, "by_op.json"), by_op_trace())
    order = lambda names: [BY_OP[n] for n in names]
    expect("launches --by-op", rows_of("launches", [path], ["--by-op"]),
           order(["div", "addmm", "linear", "abs_", "foo", "relu", "zero_"]))
    expect("launches --by-op --sort-by avg_runtime_delay",
           rows_of("launches", [path], ["--by-op", "--sort-by", "avg_runtime_delay"]),
           order(["abs_", "foo", "zero_", "relu", "addmm", "linear", "div"]))
    expect("launches --by-op --sort-by=occurrence_count,avg_aten_op_launch_delay",
           rows_of("launches", [path],
                   ["--by-op", "--sort-by=occurrence_count,avg_aten_op_launch_delay"]),
           order(["div", "linear", "addmm", "foo", "relu", "zero_", "abs_"]))
    # Two ranks: each rank's rows are its own (rank 1: the same trace).
    folder = os.path.join(out_dir, "by_op_ranks")
    os.makedirs(folder, exist_ok=True)
    for k in range(2):
        write(os.path.join(folder, "r%d.json" % k), by_op_trace(), rank=k)
    got = rows_of("launches", [folder], ["--by-op"])
    want = order(["div", "addmm", "linear", "abs_", "foo", "relu", "zero_"])
    expect("launches --by-op, two ranks", got, want + [dict(r, rank=1) for r in want])
    refused(["launches", "--sort-by", "occurrence_count", path], "--sort-by without --by-op")
    refused(["launches", "--by-op", "--sort-by", "bogus", path], "unknown --sort-by column")
    refused(["launches", "--by-op", "--runtime-cutoff", "5", path], "cutoff with --by-op")
    refused(["launches", "--by-op", os.path.join(out_dir, "missing.json")], "missing file")


# ---- kernels --sequences ------------------------------------------------------------------------

def seq_trace(spans=False, str_tids=False):
    """Thread 1 (CPU), kernels on streams 7 and 8:
      aten::linear A [0, 100]: aten::addmm [10, 60] launches 20 (gemm@200/30), 30 (bias@240/10);
        launch 70 (post@260/5): 3 kernels, durations 45; pattern aten::linear|gemm|bias|post
      aten::linear B [300, 380]: addmm [310, 350] launches 320 (gemm@500/20), 330 (bias@530/10);
        launch 360 (post@545/5): 3 kernels, 35; the same pattern
      aten::linear C [400, 450]: launches 410 (gemm2@620/15), 420 (bias@600/5, stream 8), 430
        (post@630/5): kernels by start: aten::linear|bias|gemm2|post, 25
      aten::linear D [460, 480]: launches 465 (gemm@700/5), 470 (bias@710/5): 2 kernels, 10
      a launch at 100, when A ends (not under A: HTA closes A first), kernel stray@800
      MyWrapper [1000, 1100] holds aten::linear E [1010, 1060] (depth 1, not the shallowest: no
        root) with three launches (gemm, bias, post at 1200, 1240, 1260)
    min_pattern_len 3: aten::linear|gemm|bias|post: count 2, GPU 45 + 35 = 80, CPU 100 + 80 =
    180; aten::linear|bias|gemm2|post: 1, 25, 50. With 2 also aten::linear|gemm|bias: 1, 10, 20
    (after aten::linear|bias|gemm2|post: same count, "b" < "g").
    str_tids: the kernels' tids are Kineto's strings ("stream 7"), and each launch has an ac2g
    flow (s at its start, f at its kernel's start, binding point "e")."""
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
          op("aten::linear", 0, 100), op("aten::addmm", 10, 50),
          launch(20, 5, 1), launch(30, 5, 2), launch(70, 5, 3), launch(100, 5, 12),
          op("aten::linear", 300, 80), op("aten::addmm", 310, 40),
          launch(320, 5, 4), launch(330, 5, 5), launch(360, 5, 6),
          op("aten::linear", 400, 50), launch(410, 5, 7), launch(420, 5, 8), launch(430, 5, 9),
          op("aten::linear", 460, 20), launch(465, 3, 10), launch(470, 3, 11),
          op("MyWrapper", 1000, 100), op("aten::linear", 1010, 50),
          launch(1020, 5, 13), launch(1030, 5, 14), launch(1040, 5, 15),
          kernel("gemm", 200, 30, 1), kernel("bias", 240, 10, 2), kernel("post", 260, 5, 3),
          kernel("gemm", 500, 20, 4), kernel("bias", 530, 10, 5), kernel("post", 545, 5, 6),
          kernel("bias", 600, 5, 8, stream=8), kernel("gemm2", 620, 15, 7),
          kernel("post", 630, 5, 9), kernel("gemm", 700, 5, 10), kernel("bias", 710, 5, 11),
          kernel("stray", 800, 5, 12), kernel("gemm", 1200, 5, 13), kernel("bias", 1240, 5, 14),
          kernel("post", 1260, 5, 15)]
    if str_tids:
        for e in ev[:]:
            if e.get("pid") == 0:
                e["tid"] = "stream %d" % e["tid"]
                c = e["args"]["correlation"]
                lau = [a for a in ev if a.get("cat") == "cuda_runtime" and
                       a["args"]["correlation"] == c][0]
                ev.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": c, "pid": 1,
                           "tid": 1, "ts": lau["ts"]})
                ev.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": c,
                           "pid": 0, "tid": e["tid"], "ts": e["ts"]})
    if spans:
        ev.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
                   "tid": "PyTorch Profiler", "ts": 0, "dur": 2000})
    return ev


P1 = "aten::linear|gemm|bias|post"
P2 = "aten::linear|bias|gemm2|post"
P3 = "aten::linear|gemm|bias"


def seq_row(p, n, gpu, cpu):
    return {"pattern": p, "count": n, "GPU kernel duration (us)": gpu, "CPU op duration (us)": cpu}


def sequences_generated():
    ev = seq_trace()
    path = write(os.path.join(out_dir, "seq.json"), ev)
    base = ["--sequences", "--operator", "aten::linear"]
    expect("kernels --sequences", rows_of("kernels", [path], base),
           [seq_row(P1, 2, 80, 180), seq_row(P2, 1, 25, 50)])
    expect("kernels --sequences --min-pattern-len 2",
           rows_of("kernels", [path], base + ["--min-pattern-len", "2"]),
           [seq_row(P1, 2, 80, 180), seq_row(P2, 1, 25, 50), seq_row(P3, 1, 10, 20)])
    expect("kernels --sequences --min-pattern-len 4", rows_of(
        "kernels", [path], base + ["--min-pattern-len", "4"]), [])
    # A substring: "linear" names the same operators.
    expect("kernels --sequences --operator linear",
           rows_of("kernels", [path], ["--sequences", "--operator", "linear"]),
           [seq_row(P1, 2, 80, 180), seq_row(P2, 1, 25, 50)])
    # The overlaid trace, top 1 pattern: A and B, their addmm, launches and kernels.
    out = os.path.join(out_dir, "seq_overlaid.json")
    rows_of("kernels", [path], base + ["--top-k", "1", "-o", out])
    check_overlay("kernels --sequences -o", ev, load(out), {P1: 2}, spans=False)
    ev2 = seq_trace(spans=True)
    path2 = write(os.path.join(out_dir, "seq_spans.json"), ev2)
    out2 = os.path.join(out_dir, "seq_overlaid_spans.json.gz")
    rows_of("kernels", [path2], base + ["--top-k", "5", "-o", out2])
    check_overlay("kernels --sequences -o (gzip, spans)", ev2, load(out2), {P1: 2, P2: 1},
                  spans=True)
    # Kineto's string tids ("stream 7"): the same analysis; in the overlay, numbers that
    # thread_name events name, the flows' tids the same as their kernels'.
    ev4 = seq_trace(str_tids=True)
    path4 = write(os.path.join(out_dir, "seq_str_tids.json"), ev4)
    out4 = os.path.join(out_dir, "seq_overlaid_str_tids.json")
    expect("kernels --sequences, string tids",
           rows_of("kernels", [path4], base + ["--top-k", "5", "-o", out4]),
           [seq_row(P1, 2, 80, 180), seq_row(P2, 1, 25, 50)])
    doc4 = load(out4)
    check_overlay("kernels --sequences -o (string tids)", ev4, doc4, {P1: 2, P2: 1}, spans=False)
    check_string_tids("kernels --sequences -o (string tids)", doc4["traceEvents"],
                      ["stream 7", "stream 8"])

    ev3 = seq_trace() + [None]
    path3 = write(os.path.join(out_dir, "seq_null.json"), ev3)
    out3 = os.path.join(out_dir, "seq_overlaid_null.json")
    p = run(["kernels", "-q", "-f", "json"] + base + ["-o", out3, path3])
    expect("kernels --sequences, a null element", parsed(p, "kernels --sequences"),
           [seq_row(P1, 2, 80, 180), seq_row(P2, 1, 25, 50)])
    expect("kernels --sequences -o, a null element", load(out3)["traceEvents"][-1], None)
    refused(["kernels", "--sequences", path], "no --operator")
    refused(["kernels", "--operator", "x", path], "--operator without --sequences")
    refused(["kernels", "--sequences", "--operator", "x", "--top-k", "many", path], "bad --top-k")
    refused(["kernels", "--sequences", "--operator", "x", "--rank", "3", path], "absent rank")
    refused(["kernels", "--sequences", "--operator", "x", "--by-type", path], "with --by-type")
    refused(["kernels", "--sequences", "--operator", "aten::linear", "-o",
             os.path.join(out_dir, "no", "such", "dir.json"), path], "unwritable output")
    refused(["kernels", "--sequences", "--operator", "x", os.path.join(out_dir, "missing.json")],
            "missing file")


def check_string_tids(what, got, streams):
    """An overlay of a trace whose kernels have string tids: numeric ids only, a thread_name event
    for each of the streams on pid 0, and each ac2g flow's end on the thread of a kernel that
    starts at its time."""
    expect("%s: numeric pid and tid" % what, [e for e in got if not (
        isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int))], [])
    named = {e["args"]["name"]: e["tid"] for e in got
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == 0}
    expect("%s: the streams' thread names" % what, sorted(set(streams) & set(named)),
           sorted(streams))
    kern = {(e["pid"], e["tid"], e["ts"]) for e in got
            if e.get("ph") == "X" and e.get("pid") == 0}
    ends = [(e["pid"], e["tid"], e["ts"]) for e in got if e.get("ph") == "f"]
    expect("%s: the flows end on their kernels' threads" % what,
           [f for f in ends if f not in kern], [])


def check_overlay(what, ev, doc, patterns, spans):
    """Events under the roots of `patterns` carry args.Patterns; every other X event has empty
    args and, its name being one of HTA's symbols (the rows' names and cats), a symbol id as its
    name; other events are as they were."""
    under = {}
    roots = {P1: [(0, 100), (300, 380)], P2: [(400, 450)]}
    launches_under = {}
    for p in patterns:
        for lo, hi in roots[p]:
            for k, e in enumerate(ev):
                if e.get("tid") == 1 and e.get("pid") == 1 and e["ph"] == "X" and \
                        lo <= e["ts"] and e["ts"] + e["dur"] <= hi and \
                        not (e["ts"] == hi and e["dur"] > 0):
                    under.setdefault(k, {})[p] = patterns[p]
                    c = e.get("args", {}).get("correlation")
                    if c is not None:
                        launches_under.setdefault(c, {})[p] = patterns[p]
    for k, e in enumerate(ev):
        c = e.get("args", {}).get("correlation")
        if e.get("pid") == 0 and c in launches_under:
            under[k] = launches_under[c]
    got = doc.get("traceEvents", [])
    # String ids become numbers, named by metadata events after the trace's own (cli/idmap.h).
    ids = mapped_ids(what, ev, [g for g in got if g is not None])
    nnames = sum(1 for g in got if isinstance(g, dict) and g.get("ph") == "M" and
                 g.get("ts") == 0 and g.get("args", {}).get("name") in ids)
    got = got[:len(got) - nnames]
    if len(got) != len(ev):
        fail("%s: %d events, want %d" % (what, len(got), len(ev)))
        return
    symbols = {}
    for e in ev:
        if e["ph"] == "X" and e.get("cat") not in (None, "", "Trace"):
            for s in (e["cat"], e["name"]):
                symbols.setdefault(s, len(symbols))
    mapping = None
    for k, (e, g) in enumerate(zip(ev, got)):
        if spans and e.get("pid") == "Spans":
            mapping = g.get("args")
            continue
        if k in under:
            want = dict(e, args=dict(e.get("args", {}), Patterns=under[k]))
        elif e["ph"] == "X":
            want = dict(e, args={}, name=str(symbols[e["name"]]))
        else:
            want = e
        expect("%s: event %d" % (what, k), g, with_ids(want, ids))
    if spans:
        expect("%s: the profiler event's symbols" % what, mapping,
               {str(v): s for s, v in symbols.items()})
    return got


# ---- shared traces ------------------------------------------------------------------------------

STEP = re.compile(r"^ProfilerStep#\d")
KERNEL_LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                   "cudaMemcpyAsync", "cudaMemsetAsync",
                   "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
                   "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
                   "hipMemcpyWithStream"}


def hta_rows(doc):
    """HTA's rows, with its rounding of decimal times: dicts with ts, end, name, cat, stream,
    corr, gpu, tid, pos (the place in traceEvents)."""
    evs = doc.get("traceEvents", [])
    rounding = any(isinstance(e.get("ts"), float) for e in evs)
    rows = []
    for pos, e in enumerate(evs):
        cat, dur = e.get("cat"), e.get("dur")
        if e.get("ph") == "i" and e.get("name") == "[memory]" and cat == "cpu_instant_event":
            dur = 0
        if dur is None or not cat or cat == "Trace" or e.get("ph") == "M" or "ts" not in e:
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        try:
            stream = int(args.get("stream", -1))
        except (TypeError, ValueError):
            stream = -1
        corr = args.get("correlation", -1)
        ts = e["ts"]
        end = math.floor(ts + dur) if rounding else ts + dur
        ts = math.ceil(ts) if rounding else ts
        name = e.get("name", "")
        gpu = (stream >= 0 and corr >= 0) or name in ("Event Sync", "Context Sync")
        rows.append({"ts": ts, "end": end, "name": name, "cat": cat, "stream": stream,
                     "corr": corr, "gpu": gpu, "tid": e.get("tid"), "pos": pos, "mult": 1})
    return rows


def restrict(rows):
    """HTA's profiler-step restriction of one rank (hta.h): CPU rows before the last step, the
    kernels of their correlation ids (once per such row)."""
    if len(set(r["name"] for r in rows if STEP.match(r["name"]))) < 2:
        return rows
    cpu = [r for r in rows if not r["gpu"]]
    st = [r["ts"] for r in cpu if STEP.match(r["name"])]
    last = max(st) if st else min(r["ts"] for r in cpu)
    kept = [r for r in cpu if r["ts"] < last]
    count = {}
    for r in kept:
        count[r["corr"]] = count.get(r["corr"], 0) + 1
    return kept + [dict(r, mult=count[r["corr"]]) for r in rows if r["gpu"] and r["corr"] in count]


def by_op_expected(all_rows, rows):
    """get_aten_op_kernels_and_delay over one rank, as cli/cmd_launches.c describes it."""
    partner = {}
    for r in all_rows:
        if not r["gpu"] and r["corr"] != -1:
            partner[r["corr"]] = r["pos"]
    kernels = {}
    for r in rows:
        if r["gpu"] and r["stream"] != -1 and r["corr"] != -1 and r["corr"] in partner:
            kernels.setdefault(partner[r["corr"]], []).append(r)
    ops = sorted((r for r in rows if r["name"].startswith("aten::")),
                 key=lambda r: (r["ts"], -(r["end"] - r["ts"]), r["pos"]))
    starts = [o["ts"] for o in ops]
    calls = {}
    for l in sorted((r for r in rows if r["name"] in KERNEL_LAUNCHES), key=lambda r: r["pos"]):
        ks = kernels.get(l["pos"])
        if not ks:
            continue
        k = min(ks, key=lambda r: (r["ts"], r["pos"]))
        o = None
        for j in range(bisect.bisect_right(starts, l["ts"]) - 1, -1, -1):
            if ops[j]["end"] >= l["end"]:
                o = ops[j]
                break
        if o is None:
            continue
        key = (o["tid"], o["name"], o["ts"])
        calls.setdefault(key, []).append((l["pos"], k["name"], l["ts"] - o["ts"],
                                          k["ts"] - l["ts"]))
    groups = {}
    for key, v in calls.items():
        v.sort()
        g = groups.setdefault((key[1], " -> ".join(e[1] for e in v)), [])
        g.append((v[0][2], v[0][3]))
    r3 = lambda v: round(v * 1000) / 1000  # pandas' round(3): numpy's, x * 1000 to even
    out = [by_op_row(n, s, len(v), r3(sum(a for a, _ in v) / len(v)),
                     r3(sum(b for _, b in v) / len(v)))
           for (n, s), v in sorted(groups.items())]
    out.sort(key=lambda r: -r["occurrence_count"])
    return out


def hta_less(x, y):
    """HTA's order of the ends of rows, (pos, dur, kind, time) with kind -1 opening, 1 closing
    (_less_than and _cmp_events_with_zero_duration, hta/common/trace_call_stack.py)."""
    i, d, k, t = range(4)
    if x[t] != y[t]:
        return x[t] < y[t]
    if x[i] == y[i]:
        return x[k] == -1
    if x[d] == 0 and y[d] > 0:
        return y[k] == 1
    if x[d] > 0 and y[d] == 0:
        return x[k] == -1
    if x[d] == 0 and y[d] == 0:
        if x[k] == -1 and y[k] == -1:
            return x[i] < y[i]
        if x[k] == 1 and y[k] == 1:
            return x[i] > y[i]
        return x[k] == -1
    if x[k] == 1 and y[k] == -1:
        return True
    if x[k] == -1 and y[k] == 1:
        return False
    if x[k] == -1 and x[d] != y[d]:
        return x[d] > y[d]
    if x[k] == 1 and x[d] != y[d]:
        return x[d] < y[d]
    return x[i] < y[i] if x[k] == -1 else x[i] > y[i]


def sequences_expected(doc, all_rows, rows, operator, min_len=3):
    """get_frequent_cuda_kernel_sequences over one rank, as cli/kseq.c describes it."""
    import functools
    ev = doc["traceEvents"]
    threads = {}
    for r in rows:
        e = ev[r["pos"]]
        if r["stream"] == -1 and e.get("pid") != 0 and e.get("tid") != 0:
            threads.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append(r)
    depth, children, node = {}, {}, {}
    cmp = functools.cmp_to_key(lambda a, b: -1 if hta_less(a, b) else (1 if hta_less(b, a) else 0))
    for trows in threads.values():
        ends = []
        for r in trows:
            node[r["pos"]] = r
            ends.append((r["pos"], r["end"] - r["ts"], -1, r["ts"]))
            ends.append((r["pos"], r["end"] - r["ts"], 1, r["end"]))
        stack = []
        for pos, _, kind, _ in sorted(ends, key=cmp):
            if kind == -1:
                depth[pos] = len(stack)
                if stack:
                    children.setdefault(stack[-1], []).append(pos)
                stack.append(pos)
            elif stack:
                stack.pop()
    partner = {}
    for r in all_rows:
        if not r["gpu"] and r["corr"] != -1:
            partner[r["corr"]] = r["pos"]
    kern = {}
    for r in rows:
        if r["gpu"] and r["stream"] != -1 and r["corr"] != -1 and partner.get(r["corr"]) in node:
            kern[r["pos"]] = r
            children.setdefault(partner[r["corr"]], []).append(r["pos"])
            depth[r["pos"]] = depth[partner[r["corr"]]] + 1

    def kernels_under(pos):
        out, todo = [], [pos]
        while todo:
            p = todo.pop()
            if p in kern:
                out.append(kern[p])
            todo.extend(children.get(p, []))
        return out
    cand = [p for p in list(node) + list(kern)
            if operator in (node.get(p) or kern.get(p))["name"]]
    if not cand:
        return []
    low = min(depth[p] for p in cand)
    pats = {}
    for p in sorted(cand):
        if depth[p] != low:
            continue
        r = node.get(p) or kern[p]
        ks = [r] if p in kern else kernels_under(p)
        if len(ks) < min_len:
            continue
        ks.sort(key=lambda k: (k["ts"], k["pos"]))
        key = "|".join([r["name"]] + [k["name"] for k in ks])
        v = pats.setdefault(key, [0, 0, 0])
        v[0] += 1
        v[1] += sum(k["end"] - k["ts"] for k in ks)
        v[2] += r["end"] - r["ts"]
    return [seq_row(k, v[0], v[1], v[2]) for k, v in sorted(pats.items(),
                                                             key=lambda e: (-e[1][0], e[0]))]


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) < 1e-6
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(p, q) for p, q in zip(a, b))
    return a == b


def counters_shared(path):
    """HTA's tests/test_cupti_profiler.py on this trace, and every row recomputed."""
    got = rows_of("counters", [path])
    expect("counters %s: rows" % path, len(got), 77)
    names = set("smsp__sass_thread_inst_executed_op_%s_pred_on.sum" % op
                for op in ("ffma", "fmul", "fadd", "hfma", "hmul", "hadd", "dfma", "dmul", "dadd"))
    if not got or not names <= set(got[0]):
        fail("counters %s: the SASS FLOP counters are not all columns" % path)
        return
    row = sorted(got, key=lambda r: r["ts"])[5]
    expect("counters: 5th kernel's cat", row["cat"], "cuda_profiler_range")
    if "fft2d_r2c_32x32" not in row["name"]:
        fail("counters: 5th kernel's name %r" % row["name"])
    expect("counters: 5th kernel's fadd",
           row["smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"], 86114304)
    expect("counters: 5th kernel's top_level_op", row["top_level_op"], "aten::conv2d")
    expect("counters: 5th kernel's bottom_level_op", row["bottom_level_op"],
           "aten::cudnn_convolution")
    # Every row: the k-th kernel by start with the k-th launch by start, and the cpu_op rows of
    # the launch's thread that enclose it.
    doc = load(path)
    ev = doc["traceEvents"]
    rows = hta_rows(doc)
    kern = sorted((r for r in rows if r["cat"] == "cuda_profiler_range"),
                  key=lambda r: (r["ts"], r["pos"]))
    lau = sorted((r for r in rows if r["cat"].startswith("cuda_runtime") and
                  r["name"].startswith("cudaLaunchKernel")), key=lambda r: (r["ts"], r["pos"]))
    t0 = min(r["ts"] for r in rows)
    want = []
    for k, l in zip(kern, lau):
        le = ev[l["pos"]]
        ops = sorted((r for r in rows if r["cat"] == "cpu_op" and ev[r["pos"]].get("pid") ==
                      le.get("pid") and r["tid"] == l["tid"] and r["ts"] <= l["ts"] and
                      r["end"] >= l["end"]), key=lambda r: (r["ts"], -(r["end"] - r["ts"])))
        w = {"rank": 0, "index": k["pos"], "index_runtime": l["pos"], "name": k["name"],
             "cat": k["cat"], "ts": k["ts"] - t0, "dur": k["end"] - k["ts"],
             "op_stack": ";".join(o["name"] for o in ops),
             "top_level_op": ops[0]["name"] if ops else "",
             "bottom_level_op": ops[-1]["name"] if ops else ""}
        for n in names:
            w[n] = ev[k["pos"]]["args"].get(n, -1)
        want.append(w)
    expect("counters %s: every row" % path, got, want)


def shared(shared_dir):
    tdir = os.path.join(shared_dir, "traces")
    if not os.path.isdir(tdir):
        print("no %s: skipped" % tdir)
        sys.exit(77)
    counters_shared(os.path.join(tdir, "hta_cupti_profiler.json.gz"))
    for path in sorted(glob.glob(os.path.join(tdir, "*.json*"))):
        doc = load(path)
        all_rows = hta_rows(doc)
        want = by_op_expected(all_rows, restrict(all_rows))
        got = rows_of("launches", [path], ["--by-op"])
        # Ties in occurrence_count: compare as sets of rows within each count.
        key = lambda r: (-r["occurrence_count"], r["aten_op_name"], r["kernel_sequence"])
        if not close(sorted(got, key=key), sorted(want, key=key)) or \
                [r["occurrence_count"] for r in got] != [r["occurrence_count"] for r in want]:
            expect("launches --by-op " + os.path.basename(path), got, want)
        for operator in ("aten::conv2d", "aten::linear", "aten::mm", "ProfilerStep#"):
            got = rows_of("kernels", [path], ["--sequences", "--operator", operator])
            want = sequences_expected(doc, all_rows, restrict(all_rows), operator)
            expect("kernels --sequences --operator %s %s" % (operator, os.path.basename(path)),
                   got, want)
    # The overlaid traces through `strobe check` and the independent checkers: generated ones
    # (numeric ids; string tids) and TensorBoard's resnet50 trace (string tids "stream 7" and
    # "25738", the pid "Traces").
    check = os.path.join(shared_dir, "validators", "check_all.sh")
    outs = []
    for name, ev in (("seq_validate", seq_trace()), ("seq_validate_str", seq_trace(True, True))):
        path = write(os.path.join(out_dir, name + ".json"), ev)
        outs.append(os.path.join(out_dir, name + "_overlaid.json"))
        rows_of("kernels", [path], ["--sequences", "--operator", "aten::linear", "-o", outs[-1]])
    resnet = os.path.join(tdir, "kineto_tb_resnet50_nw0.pt.trace.json.gz")
    if os.path.exists(resnet):
        outs.append(os.path.join(out_dir, "resnet50_overlaid.json"))
        rows_of("kernels", [resnet], ["--sequences", "--operator", "aten::conv2d", "-o",
                                      outs[-1]])
        check_string_tids("kernels --sequences -o resnet50", load(outs[-1])["traceEvents"],
                          ["stream 7"])
    for out in outs:
        p = subprocess.run([strobe, "check", "-q", out], capture_output=True, text=True)
        expect("strobe check %s: exit" % os.path.basename(out), (p.returncode, p.stderr),
               (0, ""))
        if not os.path.exists(check):
            continue
        p = subprocess.run([check, out, "--strict"], capture_output=True, text=True)
        if p.returncode != 0:
            fail("check_all.sh --strict %s: exit %d\n%s" % (out, p.returncode, p.stdout[-3000:]))
        else:
            print("ok    check_all.sh --strict", os.path.basename(out))
    if not os.path.exists(check):
        print("no %s: the overlaid traces are not validated" % check)


if mode == "generated":
    counters_generated()
    by_op_generated()
    sequences_generated()
elif mode == "shared":
    shared(sys.argv[4])
else:
    fail("unknown mode %r" % mode)
finish()

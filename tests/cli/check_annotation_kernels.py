#!/usr/bin/env python3
"""Checks `strobe annotations --kernels` (HTA's get_gpu_kernels_with_user_annotations) on traces
written here, whose expected rows are worked out by hand below (json module only, no pandas).

HTA's definition (hta/analyzers/breakdown_analysis.py; see cli/cmd_annotations.c): the kernels
are GPUKernelFilter's rows (stream >= 0 and correlation >= 0, or "Event Sync" / "Context Sync");
the gpu_user_annotation rows, longest first, each give their name to the kernels of their pid and
tid whose [ts, end) overlaps theirs, so the shortest overlapping one stays; "" for none. Names
are shortened by HTA's shorten_name unless --full-names.

usage: check_annotation_kernels.py STROBE OUT_DIR
"""
import json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, finish, write, x  # noqa: E402

strobe, out_dir = sys.argv[1:3]
os.makedirs(out_dir, exist_ok=True)


def run(args, expect_rc=0):
    p = subprocess.run([strobe, "annotations", "-q"] + args, capture_output=True, text=True)
    if p.returncode != expect_rc:
        fail("%s: exit %d, expected %d; stderr: %s" % (args, p.returncode, expect_rc, p.stderr))
    return p


def rows(args):
    p = run(["-f", "json"] + args)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("%s: output is not JSON (%s): %r" % (args, e, p.stdout[:200]))
        return []


COLS = ["ts", "dur", "end", "pid", "tid", "stream", "correlation", "s_name", "s_cat",
        "s_user_annotation"]


def kernel(name, ts, dur, corr, stream=7, **args):
    return x("kernel", name, ts, dur, pid=0, tid=stream, stream=stream, correlation=corr, **args)


def anno(name, ts, dur, tid=7):
    # As Kineto writes them: on the GPU's pid and the stream's tid, without a stream arg.
    return x("gpu_user_annotation", name, ts, dur, pid=0, tid=tid)


# Rank 0. Annotations on pid 0, tid 7:
#   A "## outer step ##"        [100, 500)  dur 400
#   B "fwd::inner<float>(int)"  [150, 300)  dur 150   (in A)
#   C "bwd"                     [320, 480)  dur 160   (in A)
# and on tid 8: D "other stream" [0, 1000). HTA walks A (400), C (160), B (150) on tid 7.
# Shortened (shorten_name: <...> and (...) dropped, then the text after the last space):
#   A -> "##", B -> "fwd::inner", C -> "bwd", D -> "stream".
# The kernels (first row: cpu_op "main" at 0, so the traces' first row is at 0):
#   gemm  [50, 80)    before A: ""                      (name "void gemm<float, 4>(float*)"
#                                                          shortened to "gemm")
#   relu  [160, 180)  A, B: B (the shorter)
#   Event Sync [200, 205), stream -1 (no stream arg), correlation 99: a kernel by its name;
#                     A, B: B. Its name shortens to "Sync", its cat "cuda_sync" stays.
#   copy  [200, 210)  stream/tid 8: only D counts -> D
#   lone  [200, 210)  stream/tid 9: no annotation on tid 9 (A covers the time, not the tid): ""
#   add   [290, 330)  A, B (290 < 300), C (320 < 330): B, the last walked (the shortest)
#   mul   [300, 310)  B ends at 300 ([150, 300) is open on the right): A only -> A
#   sub   [480, 500)  C ends at 480: A -> A
#   div   [500, 505)  A ends at 500: ""
# Not kernels: "nocorr" on stream 7 without a correlation, and the annotations themselves.
r0 = [
    x("cpu_op", "main", 0, 1000, pid=1, tid=1),
    anno("## outer step ##", 100, 400),
    anno("fwd::inner<float>(int)", 150, 150),
    anno("bwd", 320, 160),
    anno("other stream", 0, 1000, tid=8),
    kernel("void gemm<float, 4>(float*)", 50, 30, 1),
    kernel("relu", 160, 20, 2),
    x("cuda_sync", "Event Sync", 200, 5, pid=0, tid=7, correlation=99),
    kernel("copy", 200, 10, 3, stream=8),
    kernel("lone", 200, 10, 4, stream=9),
    x("kernel", "nocorr", 250, 10, pid=0, tid=7, stream=7),
    kernel("add", 290, 40, 5),
    kernel("mul", 300, 10, 6),
    kernel("sub", 480, 20, 7),
    kernel("div", 500, 5, 8),
]
# Rank 1: one kernel, no annotation of its own (HTA's symbol table is the traces', so it gets a
# table, with "" as its annotation); its first row at 10, after rank 0's at 0.
r1 = [x("cpu_op", "main", 10, 100, pid=1, tid=1), kernel("solo", 20, 5, 1)]

folder = os.path.join(out_dir, "ranks")
os.makedirs(folder, exist_ok=True)
write(os.path.join(folder, "rank0.json"), r0, rank=0)
write(os.path.join(folder, "rank1.json"), r1, rank=1)


def row(ts, dur, tid, stream, corr, name, cat, ann):
    return dict(zip(COLS, [ts, dur, ts + dur, 0, tid, stream, corr, name, cat, ann]))


want = [
    row(50, 30, 7, 7, 1, "gemm", "kernel", ""),
    row(160, 20, 7, 7, 2, "relu", "kernel", "fwd::inner"),
    row(200, 5, 7, -1, 99, "Sync", "cuda_sync", "fwd::inner"),
    row(200, 10, 8, 8, 3, "copy", "kernel", "stream"),
    row(200, 10, 9, 9, 4, "lone", "kernel", ""),
    row(290, 40, 7, 7, 5, "add", "kernel", "fwd::inner"),
    row(300, 10, 7, 7, 6, "mul", "kernel", "##"),
    row(480, 20, 7, 7, 7, "sub", "kernel", "##"),
    row(500, 5, 7, 7, 8, "div", "kernel", ""),
]
expect("rank 0 (the first), shortened names", rows(["--kernels", folder]), want)
expect("--rank 0", rows(["--kernels", "--rank", "0", folder]), want)

full = {"gemm": "void gemm<float, 4>(float*)", "Sync": "Event Sync", "##": "## outer step ##",
        "fwd::inner": "fwd::inner<float>(int)", "stream": "other stream"}
want_full = [dict(w, s_name=full.get(w["s_name"], w["s_name"]),
                  s_user_annotation=full.get(w["s_user_annotation"], w["s_user_annotation"]))
             for w in want]
expect("--full-names", rows(["--kernels", "--full-names", folder]), want_full)

expect("--rank 1: no annotation of its own", rows(["--kernels", "--rank", "1", folder]),
       [row(20, 5, 7, 7, 1, "solo", "kernel", "")])

p = run(["-f", "csv", "--kernels", folder])
expect("csv header", p.stdout.splitlines()[0] if p.stdout else "", ",".join(COLS))
expect("csv rows", len(p.stdout.splitlines()), 1 + len(want))

# No gpu_user_annotation in any trace: HTA returns None (no row; standard error says so).
none = write(os.path.join(out_dir, "none.json"), r1)
p = run(["-f", "json", "--kernels", none])
expect("no annotation: no row", json.loads(p.stdout or "[]"), [])
expect("no annotation: said on stderr", "None" in p.stderr, True)

# Bad input and usage: exit 2 with a message.
for args, what in [(["--kernels", "--rank", "5", folder], "no rank 5"),
                   (["--kernels", "--rank", "x", folder], "--rank"),
                   (["--kernels", "--cpu", folder], "--cpu"),
                   (["--rank", "0", folder], "--kernels"),
                   (["--full-names", folder], "--kernels")]:
    p = run(args, expect_rc=2)
    expect("%s: message names %s" % (" ".join(args[:-1]), what), what in p.stderr, True)

finish()

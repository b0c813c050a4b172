#!/usr/bin/env python3
"""Checks strobe's HTA commands (breakdown, overlap, kernels --by-type) against numbers worked
out independently of strobe's C code (json, gzip and math modules only, no pandas):

  generated: traces written here, whose numbers are worked out by hand in the comments below
             (two ranks in a folder, HTA's profiler-step restriction, decimal times rounded as
             HTA rounds them), and the refusals (duplicate ranks, different jobs, no rank, a
             folder without traces) and a malformed event counted on stderr.
  shared:    every trace in SHARED_DIR/traces, computed here by HTA's definitions (see
             cli/hta.h, which cites HTA's sources) from the JSON as Python reads it.

usage: check_hta.py STROBE OUT_DIR generated
       check_hta.py STROBE OUT_DIR shared SHARED_DIR   (exit 77 when SHARED_DIR is absent)
"""
import glob, json, math, os, re, subprocess, sys

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


def rows_of(cmd, paths, extra=()):
    p = run([cmd, "-q", "-f", "json"] + list(extra) + list(paths))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("%s %s: output is not JSON (%s): %r" % (cmd, paths, e, p.stdout[:200]))
        return []


# ---- generated traces ---------------------------------------------------------------------------

def stragglers():
    """HTA's potential stragglers on three ranks, worked out by hand.

    Each rank: ProfilerStep#1 [0,1000], #2 [1000,2000], #3 [2000,3000] (the last, left out by
    the restriction with what it launches). Kernels, each launched in its step (launch ts 10..30
    in #1, 1010..1030 in #2, 2010 in #3), with the launch's correlation:
      ncclKernel_AllReduce, stream 20: step 1 starts 500/600/400, durs 100/60/200 (ranks 0/1/2);
        step 2 starts 1500/1300/1600, durs 100/100/300; rank 1 also one at 1100 (dur 50) in step
        2, not the last; rank 0 also one at 950 of dur 5 in step 1, under 1% of the mean step.
      ncclKernel_Broadcast, stream 21: 700 and 1700, dur 50 on every rank (std 0).
      rank 2: an AllReduce launched in step 3 (dropped by the restriction) at 2500.
    Selected rows (steps 1 and 2): t_min 0, last end 2000, 2 iterations: mean_iter_time 1000,
    min_duration 10. AllReduce durations / 1000: step 1 .1 .06 .2 (std .0721), step 2 .1 .1 .3
    (std .1155): mean .0938 > 0 (Broadcast), so AllReduce on stream 20 is the metric.
    normalized start: step 1 .5 .6 .4, step 2 1.5 1.3 1.6.
      k 2: thresholds .5 and 1.5: rank 0 twice, 1 once, 2 once -> [0 (2), 1 (1)]
      k 1: thresholds .6 and 1.6: 0 none, 1 once, 2 once -> [1 (1)] (with rank 0's short kernel
           as its last it would be [0 (1)])
      k 3: every rank twice -> [0, 1, 2] (2 each); k 4: a step has 3 ranks < 4: none
      --steps 2: rows of step 2: t_min 1000, end 2000, mean 1000; starts .5 .3 .6, one
           iteration, threshold .5 -> ranks 0 and 2 (1 each), rank 1 (0) -> [0 (1), 2 (1)]
    """
    folder = os.path.join(out_dir, "strag")
    os.makedirs(folder, exist_ok=True)
    for f in glob.glob(os.path.join(folder, "*")):
        os.remove(f)
    for k in range(3):
        ev = [x("user_annotation", "ProfilerStep#%d" % n, 1000 * (n - 1), 1000) for n in (1, 2, 3)]

        def launch(ts, corr):
            ev.append(x("cuda_runtime", "cudaLaunchKernel", ts, 5, correlation=corr))

        def kernel(name, ts, dur, corr, stream=20):
            ev.append(x("kernel", name, ts, dur, tid=stream, pid=0, stream=stream,
                        correlation=corr))
        launch(10, 1)
        kernel("ncclKernel_AllReduce", [500, 600, 400][k], [100, 60, 200][k], 1)
        launch(1010, 2)
        kernel("ncclKernel_AllReduce", [1500, 1300, 1600][k], [100, 100, 300][k], 2)
        launch(30, 5)
        kernel("ncclKernel_Broadcast", 700, 50, 5, 21)
        launch(1030, 6)
        kernel("ncclKernel_Broadcast", 1700, 50, 6, 21)
        if k == 1:
            launch(1020, 4)
            kernel("ncclKernel_AllReduce", 1100, 50, 4)
        if k == 0:
            launch(20, 3)
            kernel("ncclKernel_AllReduce", 950, 5, 3)
        if k == 2:
            launch(2010, 9)
            kernel("ncclKernel_AllReduce", 2500, 400, 9)
        write(os.path.join(folder, "rank%d.json" % k), ev, rank=k, world=3)

    def strag(extra):
        return rows_of("ranks", [folder], extra).get("stragglers")
    expect("stragglers, k 2", strag([]), [{"rank": 0, "is_straggler": 2},
                                        {"rank": 1, "is_straggler": 1}])
    expect("stragglers, k 1", strag(["-k", "1"]), [{"rank": 1, "is_straggler": 1}])
    expect("stragglers, k 3", strag(["--candidates", "3"]),
           [{"rank": r, "is_straggler": 2} for r in range(3)])
    p = run(["ranks", "-q", "-f", "json", "-k", "4", folder])
    expect("stragglers, k 4", json.loads(p.stdout or "{}").get("stragglers"), [])
    if "fewer ranks" not in p.stderr:
        fail("stragglers, k 4: stderr does not say why: %r" % p.stderr)
    expect("stragglers, --steps 2", strag(["--steps", "2"]), [{"rank": 0, "is_straggler": 1},
                                                           {"rank": 2, "is_straggler": 1}])
    expect("stragglers, --steps 2,7", strag(["--steps", "2,7"]), strag(["--steps", "2"]))
    p = run(["ranks", "-q", "--steps", "7", folder], 2)
    if "1, 2" not in p.stderr or p.stderr.count("\n") != 1:
        fail("stragglers, --steps 7: %r" % p.stderr)
    for bad in ("x", "1,", ""):
        p = run(["ranks", "-q", "--steps", bad, folder], 2)
    got = rows_of("ranks", [folder])
    expect("ranks, three ranks", [(r["rank"], r["iter"], r["dur"]) for r in got.get("steps")],
           [(k, n, 1000) for k in range(3) for n in (1, 2)])


def annotations():
    """HTA's user-annotation breakdown, worked out by hand.

    One trace (rank 0, no profiler step): GPU annotations A [100,110] and [200,230], B [300,305]
    (cat gpu_user_annotation, stream 7); CPU annotations fwd [0,100] and [150,200] (cat
    user_annotation) and a cpu_op that is neither.
      GPU: A sum 40, max 30, min 10, mean 20, std sqrt(200) = 14.142...; B 5, 5, 5, 5, std 0.
      CPU: fwd sum 150, max 100, min 50, mean 75, std sqrt(1250) = 35.355...
      -n 1: names by sum A (40), B (5); cumulated 40, 45; its 0.8 quantile 44: A is kept as one
      value (40, 40, 40, 40, 0), B past it is "others" over the sums (5, 5, 5, 5, 0).
    """
    path = os.path.join(out_dir, "annotations.json")
    write(path, [x("gpu_user_annotation", "A", 100, 10, tid=7, pid=0, stream=7),
                 x("gpu_user_annotation", "A", 200, 30, tid=7, pid=0, stream=7),
                 x("gpu_user_annotation", "B", 300, 5, tid=7, pid=0, stream=7),
                 x("user_annotation", "fwd", 0, 100), x("user_annotation", "fwd", 150, 50),
                 x("cpu_op", "aten::mm", 10, 20)])

    def row(name, s, mx, mn, mean, std):
        return {"name": name, "sum (us)": s, "max (us)": mx, "min (us)": mn, "mean (us)": mean,
                "stddev": std, "rank": 0}
    got = rows_of("annotations", [path])
    want = [row("A", 40, 30, 10, 20, math.sqrt(200)), row("B", 5, 5, 5, 5, 0)]
    if not close(got, want):
        expect("annotations, GPU", got, want)
    got = rows_of("annotations", [path], ["--cpu"])
    want = [row("fwd", 150, 100, 50, 75, math.sqrt(1250))]
    if not close(got, want):
        expect("annotations --cpu", got, want)
    expect("annotations -n 1", rows_of("annotations", [path], ["-n", "1"]),
           [row("A", 40, 40, 40, 40, 0), row("others", 5, 5, 5, 5, 0)])
    p = run(["annotations", "-q", "-f", "json", os.path.join(out_dir, "strag")])
    expect("annotations, none", json.loads(p.stdout or "null"), [])
    if "no gpu_user_annotation" not in p.stderr:
        fail("annotations, none: stderr does not say so: %r" % p.stderr)
    run(["annotations", "-q", "-n", "x", path], 2)
    allowlist()


def allowlist():
    """--allowlist (HTA's allowlist_patterns), worked out by hand (the rule: cmd_annotations.c).

    GPU annotations: fwd.big 50; bwd 30; opt.step 10 and 6 (sum 16); comm 3; Opt.zero 1.
    By sum: fwd.big, bwd, opt.step, comm, Opt.zero; cumulated 50, 80, 96, 99, 100; the 0.8
    quantile of those, at 0.8 * 4 = 3.2: 99 + 0.2 * (100 - 99) = 99.2, so Opt.zero is past it.
      -n 1: fwd.big kept (50 x4, 0); others over 30, 16, 3, 1: sum 50, max 30, min 1, mean 12.5,
        std sqrt((17.5^2 + 3.5^2 + 9.5^2 + 11.5^2) / 3) = sqrt(541 / 3) = 13.4288...
      -n 1 --allowlist opt: opt.step kept too (16 x4, 0; "Opt.zero" does not match: case);
        others over 30, 3, 1: sum 34, max 30, min 1, mean 34/3, std sqrt(1574/9 / 2) = 16.1967...
        (deviations 56/3, -25/3, -31/3: squares (3136 + 625 + 961) / 9 = 4722/9 = 524.67).
      -n 1 --allowlist ^Opt --allowlist b.d: Opt.zero kept though past the quantile (1 x4),
        bwd kept (30 x4); others over 16, 3: sum 19, max 16, min 3, mean 9.5, std
        sqrt(2 * 6.5^2) = sqrt(84.5) = 9.1924...
      without -n (1000 > 5 names) the allowlist changes nothing: the plain per-name rows.
    Rows by name, bytewise: "Opt.zero" < "bwd" < "fwd.big" < "opt.step" < "others".
    """
    path = os.path.join(out_dir, "allowlist.json")
    spans = [("fwd.big", 50), ("bwd", 30), ("opt.step", 10), ("opt.step", 6), ("comm", 3),
             ("Opt.zero", 1)]
    write(path, [x("gpu_user_annotation", n, 100 * i, d, tid=7, pid=0, stream=7)
                 for i, (n, d) in enumerate(spans)])

    def row(name, s, mx, mn, mean, std):
        return {"name": name, "sum (us)": s, "max (us)": mx, "min (us)": mn, "mean (us)": mean,
                "stddev": std, "rank": 0}

    def one(name, s):
        return row(name, s, s, s, s, 0)

    cases = [
        (["-n", "1"], [one("fwd.big", 50), row("others", 50, 30, 1, 12.5, math.sqrt(541 / 3))]),
        (["-n", "1", "--allowlist", "opt"],
         [one("fwd.big", 50), one("opt.step", 16),
          row("others", 34, 30, 1, 34 / 3, math.sqrt(4722 / 9 / 2))]),
        (["-n", "1", "--allowlist", "^Opt", "--allowlist=b.d"],
         [one("Opt.zero", 1), one("bwd", 30), one("fwd.big", 50),
          row("others", 19, 16, 3, 9.5, math.sqrt(84.5))]),
        (["--allowlist", "opt"],
         [row("Opt.zero", 1, 1, 1, 1, 0), row("bwd", 30, 30, 30, 30, 0), row("comm", 3, 3, 3, 3, 0),
          row("fwd.big", 50, 50, 50, 50, 0), row("opt.step", 16, 10, 6, 8, math.sqrt(8))]),
    ]
    for extra, want in cases:
        got = rows_of("annotations", [path], extra)
        if not close(got, want):
            expect("annotations %s" % " ".join(extra), got, want)
        else:
            print("ok    annotations %s" % " ".join(extra))
    p = run(["annotations", "-q", "--allowlist", "(", path], 2)
    expect("annotations --allowlist (: one line naming the pattern",
           (p.stderr.count("\n"), "bad --allowlist pattern" in p.stderr), (1, True))


def generated():
    folder = os.path.join(out_dir, "ranks")
    os.makedirs(folder, exist_ok=True)
    for f in glob.glob(os.path.join(folder, "*")):
        os.remove(f)
    # Rank 0 (integer microseconds). Two profiler steps: the CPU rows kept are those that start
    # before ProfilerStep#2 (ts 100), so the launch at 110 and its kernel (corr 6) are dropped.
    # Kernels (stream arg): gemm [100,150], relu [140,170], nccl [160,200] (stream 20),
    # softmax [220,230], Memcpy HtoD [240,250]; the annotation without a stream is no kernel.
    #   all merged: [100,200] [220,230] [240,250] -> kernel_time 150, busy 120, idle 30
    #   COMPUTATION (gemm, relu, softmax): [100,170] [220,230] -> compute_time 80
    #   non_compute_time = 150 - 80 - 30 = 40; pctg 20.00, 53.33, 26.67
    #   overlap: comm [160,200] (40) against compute [100,170]: 10 -> 25.00
    #   kernel types (COMPUTATION, COMMUNICATION): states computed alone [100,160] 60 and
    #   [220,230] 10 -> 70; both [160,170] 10; communication alone [170,200] 30. All 110:
    #   COMPUTATION 70 (63.6), COMMUNICATION 30 (27.3), COMPUTATION overlapping COMMUNICATION
    #   10 (9.1). With --memory the Memcpy's 10 is MEMORY (all 120: 58.3, 25.0, 8.3, 8.3).
    r0 = [
        x("user_annotation", "ProfilerStep#1", 0, 100),
        x("user_annotation", "ProfilerStep#2", 100, 100),
        x("cuda_runtime", "cudaLaunchKernel", 10, 5, correlation=1),
        x("cuda_runtime", "cudaLaunchKernel", 20, 5, correlation=2),
        x("cuda_runtime", "cudaLaunchKernel", 30, 5, correlation=3),
        x("cuda_runtime", "cudaLaunchKernel", 40, 5, correlation=4),
        x("cuda_runtime", "cudaMemcpyAsync", 50, 5, correlation=5),
        x("cuda_runtime", "cudaLaunchKernel", 110, 5, correlation=6),
        x("kernel", "gemm", 100, 50, tid=7, pid=0, stream=7, correlation=1),
        x("kernel", "relu", 140, 30, tid=7, pid=0, stream=7, correlation=2),
        x("kernel", "ncclKernel_AllReduce", 160, 40, tid=20, pid=0, stream=20, correlation=4),
        x("kernel", "softmax", 220, 10, tid=7, pid=0, stream=7, correlation=3),
        x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 240, 10, tid=7, pid=0, stream=7,
          correlation=5),
        x("kernel", "late", 300, 100, tid=7, pid=0, stream=7, correlation=6),
        x("gpu_user_annotation", "annotation", 100, 300, tid=7, pid=0),
    ]
    # Rank 1 (decimal microseconds, rounded as HTA rounds: ts up, ts + dur down).
    #   gemm 10.4 + 5.2 -> [11,15]; nccl 12.5 + 10 -> [13,22]
    #   all: [11,22] -> kernel_time 11, idle 0; compute 4; non_compute 7; 0.00 36.36 63.64
    #   overlap: comm [13,22] (9) against [11,15]: 2 -> 22.22
    #   types: COMPUTATION alone [11,13] 2, both [13,15] 2, COMMUNICATION alone [15,22] 7.
    r1 = [
        x("user_annotation", "ProfilerStep#1", 0.0, 50.0),
        x("user_annotation", "ProfilerStep#2", 50.0, 50.0),
        x("cuda_runtime", "cudaLaunchKernel", 1.0, 1.0, correlation=1),
        x("cuda_runtime", "cudaLaunchKernel", 2.0, 1.0, correlation=2),
        x("kernel", "gemm", 10.4, 5.2, tid=7, pid=0, stream=7, correlation=1),
        x("kernel", "ncclKernel_AllReduce", 12.5, 10.0, tid=20, pid=0, stream=20, correlation=2),
    ]
    write(os.path.join(folder, "rank0.json"), r0, rank=0)
    write(os.path.join(folder, "rank1.json"), r1, rank=1)
    got = rows_of("breakdown", [folder])
    expect("breakdown, generated ranks", got, [
        {"rank": 0, "idle_time": 30, "compute_time": 80, "non_compute_time": 40,
         "kernel_time": 150, "idle_time_pctg": 20.00, "compute_time_pctg": 53.33,
         "non_compute_time_pctg": 26.67},
        {"rank": 1, "idle_time": 0, "compute_time": 4, "non_compute_time": 7,
         "kernel_time": 11, "idle_time_pctg": 0.00, "compute_time_pctg": 36.36,
         "non_compute_time_pctg": 63.64}])
    got = rows_of("overlap", [os.path.join(folder, "rank1.json"), os.path.join(folder, "rank0.json")])
    expect("overlap, generated ranks", got, [{"rank": 0, "comp_comm_overlap_pctg": 25.00},
                                          {"rank": 1, "comp_comm_overlap_pctg": 22.22}])
    got = rows_of("kernels", [folder], ["--by-type"])
    expect("kernels --by-type, generated ranks: types", got.get("kernel_types"), [
        # All ranks: COMPUTATION alone 70 + 2, COMMUNICATION alone 30 + 7, both 10 + 2: 121.
        {"kernel_type": "COMPUTATION", "sum": 72, "percentage": 59.5},
        {"kernel_type": "COMMUNICATION", "sum": 37, "percentage": 30.6},
        {"kernel_type": "COMPUTATION overlapping COMMUNICATION", "sum": 12, "percentage": 9.9}])
    # Per kernel, by type name, name, rank (one call each: std 0).
    k = lambda n, d, t, r: {"name": n, "sum (ns)": d, "max (ns)": d, "min (ns)": d,
                            "stddev": 0, "mean (ns)": d, "kernel_type": t, "rank": r}
    expect("kernels --by-type, generated ranks: kernels", got.get("kernels"), [
        k("ncclKernel_AllReduce", 40, "COMMUNICATION", 0),
        k("ncclKernel_AllReduce", 9, "COMMUNICATION", 1),
        k("gemm", 50, "COMPUTATION", 0), k("gemm", 4, "COMPUTATION", 1),
        k("relu", 30, "COMPUTATION", 0), k("softmax", 10, "COMPUTATION", 0)])
    got = rows_of("kernels", [folder], ["--by-type", "--memory"])
    expect("kernels --by-type --memory: types", got.get("kernel_types"), [
        # The Memcpy's 10 on rank 0 is MEMORY alone: 131 in all.
        {"kernel_type": "COMPUTATION", "sum": 72, "percentage": 55.0},
        {"kernel_type": "COMMUNICATION", "sum": 37, "percentage": 28.2},
        {"kernel_type": "COMPUTATION overlapping COMMUNICATION", "sum": 12, "percentage": 9.2},
        {"kernel_type": "MEMORY", "sum": 10, "percentage": 7.6}])
    # Statistics: a runs 2 and 4 (sum 6, mean 3, std sqrt(2)), b runs 1.
    stats = os.path.join(out_dir, "stats.json")
    write(stats, [x("kernel", "a", 0, 2, tid=7, pid=0, stream=7, correlation=1),
                  x("kernel", "a", 10, 4, tid=7, pid=0, stream=7, correlation=2),
                  x("kernel", "b", 20, 1, tid=7, pid=0, stream=7, correlation=3)])
    got = rows_of("kernels", [stats], ["--by-type"]).get("kernels")
    if not (isinstance(got, list) and len(got) == 2 and abs(got[0]["stddev"] - 2 ** 0.5) < 1e-12):
        fail("kernels --by-type std: %s" % got)
    else:
        got[0]["stddev"] = "sqrt2"
    expect("kernels --by-type statistics", got, [
        {"name": "a", "sum (ns)": 6, "max (ns)": 4, "min (ns)": 2, "stddev": "sqrt2",
         "mean (ns)": 3, "kernel_type": "COMPUTATION", "rank": 0},
        k("b", 1, "COMPUTATION", 0)])
    # "others": 12 kernels k01..k12 of 12, 11, ... 1 us. Cumulated: 12 23 33 42 50 57 63 68 72 75
    # 77 78; its 0.8 quantile (position 8.8): 72 + 0.8 * 3 = 74.4. Past it (75, 77, 78), and from
    # the 11th on: the kernels of 3, 2 and 1 are "others" (sum 6, max 3, min 1, mean 2, std 1);
    # the 9 others keep their rows, their sum as max, min and mean.
    many = os.path.join(out_dir, "many.json")
    write(many, [x("kernel", "k%02d" % (13 - d), 100 * d, d, tid=7, pid=0, stream=7,
                   correlation=d) for d in range(1, 13)])
    want = sorted([k("k%02d" % (13 - d), d, "COMPUTATION", 0) for d in range(4, 13)] +
                  [{"name": "others", "sum (ns)": 6, "max (ns)": 3, "min (ns)": 1, "stddev": 1,
                    "mean (ns)": 2, "kernel_type": "COMPUTATION", "rank": 0}],
                  key=lambda r: r["name"])
    expect("kernels --by-type others", rows_of("kernels", [many], ["--by-type"]).get("kernels"),
           want)

    # launches, rank 0 of the folder: launch ts 10, 20, 30, 40, 50 (5 us each); kernels at 100,
    # 140, 220, 160, 240: delay = kernel ts - launch ts + 5. Corr 6 is past the last step.
    expect("launches, generated ranks", rows_of("launches", [folder]), {
        "launches": [
            {"rank": 0, "correlation": 1, "cpu_duration": 5, "gpu_duration": 50, "launch_delay": 95},
            {"rank": 0, "correlation": 2, "cpu_duration": 5, "gpu_duration": 30, "launch_delay": 125},
            {"rank": 0, "correlation": 3, "cpu_duration": 5, "gpu_duration": 10, "launch_delay": 195},
            {"rank": 0, "correlation": 4, "cpu_duration": 5, "gpu_duration": 40, "launch_delay": 125},
            {"rank": 0, "correlation": 5, "cpu_duration": 5, "gpu_duration": 10, "launch_delay": 195},
            # rank 1: launches at 1 and 2 (1 us), kernels [11,15] and [13,22]
            {"rank": 1, "correlation": 1, "cpu_duration": 1, "gpu_duration": 4, "launch_delay": 11},
            {"rank": 1, "correlation": 2, "cpu_duration": 1, "gpu_duration": 9, "launch_delay": 12}],
        "summary": [{"rank": 0, "short_kernels": 0, "runtime_outliers": 0, "launch_delay_outliers": 4},
                    {"rank": 1, "short_kernels": 0, "runtime_outliers": 0, "launch_delay_outliers": 0}]})
    # Short kernels and outliers: launch 1 [0,10] -> kernel at 12 for 3 (short; delay 22);
    # launch 2 [20,80] -> kernel at 200 for 5 (runtime outlier; delay 240); cudaMemcpyAsync 3
    # [30,32] -> two device events of its correlation (the join gives both): at 40 for 1 (short;
    # delay 12) and at 50 for 4 (delay 22). A launch without device work and a synchronization
    # (not a launch) give no row.
    launch = os.path.join(out_dir, "launch.json")
    write(launch, [
        x("cuda_runtime", "cudaLaunchKernel", 0, 10, correlation=1),
        x("cuda_runtime", "cudaLaunchKernel", 20, 60, correlation=2),
        x("cuda_runtime", "cudaMemcpyAsync", 30, 2, correlation=3),
        x("cuda_runtime", "cudaLaunchKernel", 90, 2, correlation=4),
        x("cuda_runtime", "cudaStreamSynchronize", 95, 2, correlation=5),
        x("kernel", "k1", 12, 3, tid=7, pid=0, stream=7, correlation=1),
        x("kernel", "k2", 200, 5, tid=7, pid=0, stream=7, correlation=2),
        x("gpu_memcpy", "Memcpy DtoD", 40, 1, tid=7, pid=0, stream=7, correlation=3),
        x("gpu_memcpy", "Memcpy DtoD", 50, 4, tid=8, pid=0, stream=8, correlation=3),
        x("cuda_sync", "cudaStreamSynchronize", 96, 1, tid=7, pid=0, stream=7, correlation=5)])
    rows = [{"rank": 0, "correlation": c, "cpu_duration": a, "gpu_duration": b, "launch_delay": d}
            for c, a, b, d in ((1, 10, 3, 22), (2, 60, 5, 240), (3, 2, 1, 12), (3, 2, 4, 22))]
    expect("launches, short kernels and outliers", rows_of("launches", [launch]), {
        "launches": rows, "summary": [{"rank": 0, "short_kernels": 2, "runtime_outliers": 1,
                                       "launch_delay_outliers": 1}]})
    expect("launches with other cutoffs", rows_of("launches", [launch], [
        "--runtime-cutoff", "100", "--launch-delay-cutoff=10"]), {
        "launches": rows, "summary": [{"rank": 0, "short_kernels": 3, "runtime_outliers": 0,
                                       "launch_delay_outliers": 4}]})

    # idle, rank 0 of the folder, stream 7 by ts: gemm [100,150], relu [140,170], softmax
    # [220,230], Memcpy [240,250]; their launches (10 to 50) all start before the previous
    # kernel ends. Gaps: relu -10 (kernel_wait, < 30), softmax 50 (other), Memcpy 10
    # (kernel_wait): kernel_wait 0, other 50 (ratios 0.00, 1.00). Stream 20 and rank 1's
    # streams have one kernel each: other 0, ratio 0/0 (null).
    r = lambda rk, st, c, t, q: {"rank": rk, "stream": st, "idle_category": c, "idle_time": t,
                                 "idle_time_ratio": q}
    expect("idle, generated ranks", rows_of("idle", [folder]), [
        r(0, 7, "kernel_wait", 0, 0.0), r(0, 7, "other", 50, 1.0), r(0, 20, "other", 0, None),
        r(1, 7, "other", 0, None), r(1, 20, "other", 0, None)])
    # idle, launch.json, stream 7 by ts: k1 [12,15], Memcpy [40,41] (launched at 30, after
    # 15: host_wait 25), the sync [96,97] (its runtime at 95, after 41: host_wait 55), k2
    # [200,205] (launched at 20: gap 103, other). host_wait 80 (0.44), other 103 (0.56).
    # Stream 8 has one copy. With a delay of 200 the 103 is kernel_wait.
    expect("idle, host wait", rows_of("idle", [launch]), [
        r(0, 7, "host_wait", 80, 0.44), r(0, 7, "other", 103, 0.56), r(0, 8, "other", 0, None)])
    expect("idle, consecutive kernel delay", rows_of("idle", [launch], [
        "--consecutive-kernel-delay", "200"]), [
        r(0, 7, "host_wait", 80, 0.44), r(0, 7, "kernel_wait", 103, 0.56),
        r(0, 7, "other", 0, 0.0), r(0, 8, "other", 0, None)])

    # queue, rank 0: stream 7 gets launches at 10, 20, 30, 50 (corr 1, 2, 3, 5; corr 6's at 110
    # is past the last step) and kernels at 100, 140, 220, 240: lengths 1 2 3 4 3 2 1 0 (mean
    # 2, std sqrt(12/7), quartiles 1 2 3); stream 20 a launch at 40 and its kernel at 160:
    # 1 0. Rank 1: each stream 1 0.
    q = lambda rk, st, n, mean, std, mn, a, b, c, mx: {
        "rank": rk, "stream": st, "count": n, "mean": mean, "std": std, "min": mn, "25%": a,
        "50%": b, "75%": c, "max": mx}
    one = lambda rk, st: q(rk, st, 2, 0.5, 0.5 ** 0.5, 0, 0.25, 0.5, 0.75, 1)
    got = rows_of("queue", [folder])
    want = {"summary": [q(0, 7, 8, 2, (12 / 7) ** 0.5, 0, 1, 2, 3, 4), one(0, 20), one(1, 7),
                        one(1, 20)], "blocked": [],
            "kernels_without_launch": [{"rank": 0, "kernels_without_launch": 0},
                                       {"rank": 1, "kernels_without_launch": 0}]}
    if not close(got, want):
        expect("queue, generated ranks", got, want)
    # With a capacity of 3, rank 0's stream 7 is at 3 or more from 30 to 140 (the points at 30,
    # 50 and 100): 110 of its trace's 240 (rows from 0 to 240: the kept step at 0, the Memcpy
    # at 240). Rank 1 never reaches 3.
    got = rows_of("queue", [folder], ["--max-queue-length", "3"]).get("blocked")
    want = [{"rank": 0, "stream": 7, "duration_at_max_queue_length": 110,
             "relative_duration_at_max_queue_length": 110 / 240}]
    if not close(got, want):
        expect("queue, blocked on a full queue", got, want)

    # ranks: each rank's ProfilerStep#1 (the last step, #2, is left out by the restriction);
    # times from the earliest event of both ranks (0): rank 0 [0,100], rank 1 [0,50].
    got = rows_of("ranks", [folder])
    expect("ranks, generated", got.get("steps"), [
        {"rank": 0, "iter": 1, "ts": 0, "dur": 100, "end": 100},
        {"rank": 1, "iter": 1, "ts": 0, "dur": 50, "end": 50}])
    stragglers()
    annotations()

    # Refusals: the message names the files.
    dup = os.path.join(out_dir, "dup")
    os.makedirs(dup, exist_ok=True)
    write(os.path.join(dup, "a.json"), r1, rank=1)
    write(os.path.join(dup, "b.json"), r1, rank=1)
    p = run(["breakdown", "-q", dup], 2)
    if "a.json" not in p.stderr or "b.json" not in p.stderr or "rank 1" not in p.stderr:
        fail("duplicate ranks: stderr does not name both files and the rank: %r" % p.stderr)
    jobs = os.path.join(out_dir, "jobs")
    os.makedirs(jobs, exist_ok=True)
    write(os.path.join(jobs, "a.json"), r0, rank=0, world=2)
    write(os.path.join(jobs, "b.json"), r1, rank=1, world=4)
    p = run(["overlap", "-q", jobs], 2)
    if "a.json" not in p.stderr or "b.json" not in p.stderr or "different jobs" not in p.stderr:
        fail("different jobs: stderr does not name both files: %r" % p.stderr)
    norank = os.path.join(out_dir, "norank.json")
    write(norank, r1)
    p = run(["breakdown", "-q", norank, os.path.join(folder, "rank0.json")], 2)
    if "norank.json" not in p.stderr or "no rank" not in p.stderr:
        fail("no rank: stderr does not name the file: %r" % p.stderr)
    # One trace without a rank is rank 0.
    expect("one trace without a rank", [r["rank"] for r in rows_of("breakdown", [norank])], [0])
    empty = os.path.join(out_dir, "empty")
    os.makedirs(empty, exist_ok=True)
    p = run(["breakdown", "-q", empty], 2)
    if "empty" not in p.stderr or "no trace" not in p.stderr:
        fail("empty folder: %r" % p.stderr)
    # A malformed event (a dur that is not a number) is skipped and counted.
    bad = os.path.join(out_dir, "bad.json")
    write(bad, r1 + [x("kernel", "broken", 1, "x", tid=7, pid=0, stream=7)])
    p = run(["breakdown", "-q", "-f", "json", bad])
    if "1 malformed event" not in p.stderr:
        fail("malformed event not counted on stderr: %r" % p.stderr)
    expect("malformed event skipped", json.loads(p.stdout or "[]"), rows_of("breakdown", [norank]))
    # A syntax error: exit 2, one line with the file and the byte offset.
    cut = write_cut(os.path.join(out_dir, "cut.json"))
    missing = os.path.join(out_dir, "missing.json")
    for cmd in (["breakdown"], ["overlap"], ["kernels", "--by-type"], ["launches"], ["idle"],
                ["queue"], ["ranks"], ["annotations"]):
        p = run(cmd + ["-q", cut], 2)
        if "cut.json" not in p.stderr or "byte" not in p.stderr or p.stderr.count("\n") != 1:
            fail("%s, syntax error: %r" % (cmd, p.stderr))
        p = run(cmd + ["-q", missing], 2)
        if "missing.json" not in p.stderr or p.stderr.count("\n") != 1:
            fail("%s, missing file: %r" % (cmd, p.stderr))
        p = run(cmd + ["-q", "-f", "json", bad])
        if "1 malformed event" not in p.stderr:
            fail("%s: malformed event not counted on stderr: %r" % (cmd, p.stderr))
        p = run(cmd + ["-q"], 2)
        if p.stderr.count("\n") != 1 or "--help" not in p.stderr:
            fail("%s without a trace: %r" % (cmd, p.stderr))
    # Every other command that reads a trace says the same line about the malformed event.
    for cmd in (["kernels", bad], ["stacks", bad], ["steps", bad], ["diff", bad, norank],
                ["summary", bad]):
        p = run([cmd[0], "-q"] + cmd[1:])
        want = "strobe %s: %s: 1 malformed event(s) skipped; `strobe check` lists them\n" % (
            cmd[0], bad)
        if p.stderr != want:
            fail("%s: malformed event: stderr %r, expected %r" % (cmd[0], p.stderr, want))


# ---- HTA's definitions, here in Python, for the shared traces -------------------------------------

STEP = re.compile(r"^ProfilerStep#(\d+)")


def hta_rows(doc):
    """HTA's rows: (ts, end, name, stream, corr, is_gpu) with its rounding."""
    evs = doc.get("traceEvents", [])
    rounding = any(isinstance(e.get("ts"), float) or "ts" not in e for e in evs)
    rows = []
    for pos, e in enumerate(evs):
        cat = e.get("cat")
        dur = e.get("dur")
        if e.get("ph") == "i" and e.get("name") == "[memory]" and cat == "cpu_instant_event":
            dur = 0
        if dur is None or cat is None or cat == "" or cat == "Trace" or e.get("ph") == "M":
            continue
        if "ts" not in e:
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        try:
            stream = int(args.get("stream", -1))
        except (TypeError, ValueError):
            stream = -1
        corr = args.get("correlation", -1)
        ts = e["ts"]
        if rounding:
            end = math.floor(ts + dur)
            ts = math.ceil(ts)
        else:
            end = ts + dur
        name = e.get("name", "")
        gpu = (stream >= 0 and corr >= 0) or name in ("Event Sync", "Context Sync")
        rows.append((ts, end, name, stream, corr, gpu, len(rows), pos))
    return rows


def restrict(ranks):
    steps = set(r[2] for rows in ranks.values() for r in rows if STEP.match(r[2]))
    if len(steps) < 2:
        return ranks
    out = {}
    for rank, rows in ranks.items():
        cpu = [r for r in rows if not r[5]]
        if not cpu:
            out[rank] = rows
            continue
        st = [r[0] for r in cpu if STEP.match(r[2])]
        last = max(st) if st else min(r[0] for r in cpu)
        kept = [r for r in cpu if r[0] < last]
        count = {}
        for r in kept:
            count[r[4]] = count.get(r[4], 0) + 1
        gpu = [r for r in rows if r[5] for _ in range(count.get(r[4], 0))]
        out[rank] = gpu + kept
    return out


# HTA's patterns as HTA writes them (hta/common/types.py at f4d0062c), applied with re.match as
# HTA's GroupingPattern.match does; strobe matches them with its own code (cli/hta.c).
COMMUNICATE = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
MEMORY = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
KERNEL_LAUNCH = re.compile(r"(cuda.*LaunchKernel)|(cuLaunchKernel)|(^runFunction)")
# TraceSymbolTable.get_runtime_launch_events_query's names (hta/common/trace_symbol_table.py).
RUNTIME_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                    "cudaMemcpyAsync", "cudaMemsetAsync",
                    "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
                    "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
                    "hipMemcpyWithStream")


def kernel_type(name):
    if COMMUNICATE.match(name):
        return "COMMUNICATION"
    if MEMORY.match(name):
        return "MEMORY"
    return "COMPUTATION"


def is_launch(name):
    return KERNEL_LAUNCH.match(name) is not None or name in RUNTIME_LAUNCHES


def merge(rows):
    rows = sorted(rows, key=lambda r: r[0])
    out, cummax = [], None
    for r in rows:
        if cummax is None or r[0] > cummax:
            out.append([r[0], r[1]])
        else:
            out[-1][1] = max(out[-1][1], r[1])
        cummax = r[1] if cummax is None else max(cummax, r[1])
    return out


def breakdown(rows):
    k = [r for r in rows if r[3] != -1]
    m = merge(k)
    kernel = m[-1][1] - m[0][0] if m else 0
    idle = kernel - sum(e - s for s, e in m)
    compute = sum(e - s for s, e in merge([r for r in k if kernel_type(r[2]) == "COMPUTATION"]))
    return idle, compute, kernel - compute - idle, kernel


def overlap(rows):
    k = [r for r in rows if r[3] != -1]
    comm = merge([r for r in k if kernel_type(r[2]) == "COMMUNICATION"])
    comp = merge([r for r in k if kernel_type(r[2]) == "COMPUTATION"])
    both = 0
    for a, b in comm:
        for c, d in comp:
            both += max(0, min(b, d) - max(a, c))
    total = sum(e - s for s, e in comm)
    return None if total == 0 else round(100 * (both / total), 2)


TYPES = ["COMPUTATION", "COMMUNICATION", "MEMORY"]


def kernel_types(rows, ntypes):
    """get_gpu_kernel_breakdown's first table for one rank: {label: time}."""
    k = [r for r in rows if r[3] != -1]
    edges = []
    for bit, t in enumerate(TYPES[:ntypes]):
        for s_, e in merge([r for r in k if kernel_type(r[2]) == t]):
            edges += [(s_, 1 << bit), (e, -(1 << bit))]
    edges.sort(key=lambda e: e[0])
    out, running = {}, 0
    for i in range(len(edges) - 1):
        running += edges[i][1]
        if running > 0:
            label = " overlapping ".join(t for b, t in enumerate(TYPES) if running & (1 << b))
            out[label] = out.get(label, 0) + edges[i + 1][0] - edges[i][0]
    return out


def stats(v):
    n = len(v)
    mean = sum(v) / n
    std = (sum((x - mean) ** 2 for x in v) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return {"sum (ns)": sum(v), "max (ns)": max(v), "min (ns)": min(v), "stddev": std,
            "mean (ns)": mean}


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    t = pos - lo
    return v[lo] + (v[hi] - v[lo]) * t if t < 0.5 else v[hi] - (v[hi] - v[lo]) * (1 - t)


def kernel_rows(rows, rank, ntypes):
    out = []
    for t in TYPES[:ntypes]:
        by = {}
        for r in rows:
            if r[3] != -1 and kernel_type(r[2]) == t:
                by.setdefault(r[2], []).append(r[1] - r[0])
        g = sorted(((n, stats(v)) for n, v in by.items()),
                   key=lambda e: (-e[1]["sum (ns)"], e[0]))
        if len(g) > 10:
            cum, c = [], 0
            for n, st in g:
                c += st["sum (ns)"]
                cum.append(c)
            q = quantile(cum, 0.8)
            keep, others = [], []
            for i, (n, st) in enumerate(g):
                if cum[i] > q or i >= 10:
                    others.append(st["sum (ns)"])
                else:
                    keep.append((n, stats([st["sum (ns)"]])))
            g = keep + ([("others", stats(others))] if others else [])
        for n, st in g:
            d = {"name": n}
            d.update(st)
            d.update({"kernel_type": t, "rank": rank})
            out.append(d)
    return out


def annotation_rows(doc, rows, rank, cat, num=1000, allow=()):
    """get_gpu_user_annotation_breakdown: the rows of that cat by name, as kernel_rows groups
    kernels (num_kernels 1000), sorted by name and rank; names that a pattern of allow finds
    (re.search) are never "others"."""
    evs = doc.get("traceEvents", [])
    by = {}
    for r in rows:
        if evs[r[7]].get("cat") == cat:
            by.setdefault(r[2], []).append(r[1] - r[0])
    g = sorted(((n, stats(v)) for n, v in by.items()), key=lambda e: (-e[1]["sum (ns)"], e[0]))
    if len(g) > num:
        cum, c = [], 0
        for n, st in g:
            c += st["sum (ns)"]
            cum.append(c)
        q = quantile(cum, 0.8)
        keep, others = [], []
        for i, (n, st) in enumerate(g):
            if (cum[i] > q or i >= num) and not any(re.search(a, n) for a in allow):
                others.append(st["sum (ns)"])
            else:
                keep.append((n, stats([st["sum (ns)"]])))
        g = keep + ([("others", stats(others))] if others else [])
    out = []
    for n, st in sorted(g):
        out.append({"name": n, "sum (us)": st["sum (ns)"], "max (us)": st["max (ns)"],
                    "min (us)": st["min (ns)"], "mean (us)": st["mean (ns)"],
                    "stddev": st["stddev"], "rank": rank})
    return out


def close(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def launches(rows, rank):
    """cuda_kernel_launch_stats: rows in file order (restrict() puts kernels first)."""
    corrs = set(r[4] for r in rows if is_launch(r[2]))
    cpu = sorted([r for r in rows if r[3] == -1 and r[4] in corrs], key=lambda r: r[6])
    gpu = sorted([r for r in rows if r[3] != -1 and r[4] in corrs], key=lambda r: r[6])
    out = []
    for c in cpu:
        for g in gpu:
            if g[4] == c[4]:
                out.append({"rank": rank, "correlation": c[4], "cpu_duration": c[1] - c[0],
                            "gpu_duration": g[1] - g[0],
                            "launch_delay": g[0] - c[0] + (c[1] - c[0])})
    summary = {"rank": rank,
               "short_kernels": sum(1 for r in out if r["cpu_duration"] <= 50
                                    and r["gpu_duration"] < r["cpu_duration"]),
               "runtime_outliers": sum(1 for r in out if r["cpu_duration"] > 50),
               "launch_delay_outliers": sum(1 for r in out if r["launch_delay"] > 100)}
    return {"launches": out, "summary": [summary]}


def runtime_of(all_rows):
    """index_correlation before the restriction: kernel position -> CPU row position (the last
    of its correlation), or event 0 for a kernel with a correlation and no CPU row."""
    last = {}
    for r in all_rows:
        if not r[5] and r[4] != -1:
            last[r[4]] = r[7]
    out = {}
    for r in all_rows:
        if r[5] and r[4] != -1:
            out[r[7]] = last.get(r[4], 0 if r[4] >= 0 else None)
    return out


def idle_rows(all_rows, rows, restricted, rank, delay=30):
    link = runtime_of(all_rows)
    ts_of = {r[7]: r[0] for r in rows}
    k = [r for r in rows if r[3] != -1]
    order = sorted(k, key=lambda r: ((1 if restricted and not r[5] else 0), r[7]))
    streams = []
    for r in order:
        if r[3] not in streams:
            streams.append(r[3])
    out = []
    for st in streams:
        ks = sorted([r for r in k if r[3] == st],
                    key=lambda r: (r[0], (1 if restricted and not r[5] else 0), r[7]))
        sums = {"other": 0}
        for i in range(1, len(ks)):
            prev_end = ks[i - 1][1]
            gap = ks[i][0] - prev_end
            rt = ts_of.get(link.get(ks[i][7]))
            c = ("host_wait" if rt is not None and rt > prev_end else
                 "kernel_wait" if gap < delay else "other")
            sums[c] = sums.get(c, 0) + gap
        total = sum(sums.values())
        for c in ("host_wait", "kernel_wait", "other"):
            if c in sums:
                out.append({"rank": rank, "stream": st, "idle_category": c, "idle_time": sums[c],
                            "idle_time_ratio": None if total == 0 else round(sums[c] / total, 2)})
    return out


def describe(v):
    n = len(v)
    mean = sum(v) / n
    std = (sum((x - mean) ** 2 for x in v) / (n - 1)) ** 0.5 if n > 1 else None
    return {"count": n, "mean": mean, "std": std, "min": min(v), "25%": quantile(v, 0.25),
            "50%": quantile(v, 0.5), "75%": quantile(v, 0.75), "max": max(v)}


def queue(all_rows, rows, restricted, rank, cap=None):
    linked = set(r[4] for r in all_rows if r[5] and r[4] != -1)
    order = lambda r: ((1 if restricted and not r[5] else 0), r[7])
    kernels = sorted([r for r in rows if r[3] != -1], key=order)
    steps = []
    for r in sorted(rows, key=order):
        if is_launch(r[2]) and not r[5] and r[4] != -1 and r[4] in linked:
            for k in kernels:
                if k[4] == r[4]:
                    steps.append((k[3], r[0], 0, order(r), 1, k[4]))
    # HTA's semi-join: a kernel counts only when a launch has its correlation (the launch made a
    # step for every kernel of it).
    launched = set(x[5] for x in steps)
    for k in kernels:
        if k[4] in launched:
            steps.append((k[3], k[0], 1, order(k), -1, k[4]))
    out, blocked = [], []
    for st in sorted(set(x[0] for x in steps)):
        run_, vals = 0, []
        series = sorted([x for x in steps if x[0] == st], key=lambda x: (x[1], x[2], x[3]))
        for x in series:
            run_ += x[4]
            vals.append(run_)
        if cap is not None and max(vals) >= cap:
            full = sum(series[i + 1][1] - series[i][1] for i in range(len(vals) - 1)
                       if vals[i] >= cap)
            span = max(r[0] for r in rows) - min(r[0] for r in rows)
            blocked = [{"rank": rank, "stream": st, "duration_at_max_queue_length": full,
                        "relative_duration_at_max_queue_length": full / span}]
        d = {"rank": rank, "stream": st}
        d.update(describe(vals))
        out.append(d)
    return blocked if cap is not None else out


def steps(all_rows, rows, rank):
    t0 = min(r[0] for r in all_rows) if all_rows else 0
    out = []
    for r in sorted([r for r in rows if not r[5] and r[3] == -1], key=lambda r: r[7]):
        if r[2].startswith("ProfilerStep"):
            m = re.match(r"ProfilerStep\s*#\s*(\d+)", r[2])
            out.append({"rank": rank, "iter": int(m.group(1)) if m else -1, "ts": r[0] - t0,
                        "dur": r[1] - r[0], "end": r[1] - t0})
    return out


def pct(a, b):
    return None if b == 0 else round(100 * (a / b), 2)


def shared(shared_dir):
    tdir = os.path.join(shared_dir, "traces")
    if not os.path.isdir(tdir):
        print("no %s: skipped" % tdir)
        sys.exit(77)
    paths = sorted(glob.glob(os.path.join(tdir, "*.json*")))
    checked = 0
    for path in paths:
        doc = load(path)
        all_rows = hta_rows(doc)
        ranks = restrict({0: all_rows})
        rows = ranks[0]
        restricted = len(set(r[2] for r in all_rows if STEP.match(r[2]))) >= 2
        idle, compute, other, kernel = breakdown(rows)
        want = [{"rank": 0, "idle_time": idle, "compute_time": compute,
                 "non_compute_time": other, "kernel_time": kernel,
                 "idle_time_pctg": pct(idle, kernel), "compute_time_pctg": pct(compute, kernel),
                 "non_compute_time_pctg": pct(other, kernel)}]
        expect("breakdown " + os.path.basename(path), rows_of("breakdown", [path]), want)
        expect("overlap " + os.path.basename(path), rows_of("overlap", [path]),
               [{"rank": 0, "comp_comm_overlap_pctg": overlap(rows)}])
        for ntypes, extra in ((2, []), (3, ["--memory"])):
            got = rows_of("kernels", [path], ["--by-type"] + extra)
            types = kernel_types(rows, ntypes)
            total = sum(types.values())
            want = [{"kernel_type": n, "sum": v, "percentage": round(100 * v / total, 1)}
                    for n, v in sorted(types.items(), key=lambda e: (-e[1], e[0])) if v]
            expect("kernels --by-type %s %s: types" % (extra, os.path.basename(path)),
                   got.get("kernel_types"), want)
            want = sorted(kernel_rows(rows, 0, ntypes),
                          key=lambda r: (r["kernel_type"], r["name"], r["rank"]))
            if not close(got.get("kernels"), want):
                expect("kernels --by-type %s %s: kernels" % (extra, os.path.basename(path)),
                       got.get("kernels"), want)
        expect("idle " + os.path.basename(path), rows_of("idle", [path]),
               idle_rows(all_rows, rows, restricted, 0))
        got, want = rows_of("queue", [path]).get("summary"), queue(all_rows, rows, restricted, 0)
        if not close(got, want):
            expect("queue " + os.path.basename(path), got, want)
        got = rows_of("ranks", [path])
        expect("ranks " + os.path.basename(path), got.get("steps"), steps(all_rows, rows, 0))
        # One rank: HTA's standard deviation across ranks is NaN everywhere, so no straggler.
        expect("ranks, stragglers " + os.path.basename(path), got.get("stragglers"), [])
        got = rows_of("queue", [path], ["--max-queue-length", "100"]).get("blocked")
        want = queue(all_rows, rows, restricted, 0, 100)
        if not close(got, want):
            expect("queue --max-queue-length 100 " + os.path.basename(path), got, want)
        expect("launches " + os.path.basename(path), rows_of("launches", [path]), launches(rows, 0))
        for cat, extra in (("gpu_user_annotation", []), ("user_annotation", ["--cpu"])):
            got = rows_of("annotations", [path], extra)
            want = annotation_rows(doc, rows, 0, cat)
            if not close(got, want):
                expect("annotations %s %s" % (extra, os.path.basename(path)), got, want)
        # The traces, counted from the trace itself: the MI250 trace's 12 hipLaunchKernel,
        # 2 hipExtModuleLaunchKernel and 2 hipMemcpyWithStream each have one device event of
        # their correlation (16 launch rows, none before); the Triton example's one
        # cuLaunchKernel has its kernel (1 row, none before).
        want_launches = {"hta_amd_mi250_rocm6_2.json.gz": 16, "hta_triton_example.json.gz": 1}
        if os.path.basename(path) in want_launches:
            names = [e.get("name") for e in doc.get("traceEvents", [])]
            corr = {}
            for e in doc.get("traceEvents", []):
                a = e.get("args") if isinstance(e.get("args"), dict) else {}
                corr.setdefault(a.get("correlation"), []).append(e.get("name"))
            paired = sum(1 for c, ns in corr.items() if c is not None and len(ns) == 2
                         and sum(is_launch(n) for n in ns) == 1)
            got = rows_of("launches", [path])["launches"]
            expect("launches %s: the issue's launches" % os.path.basename(path),
                   (len(got), paired), (want_launches[os.path.basename(path)],) * 2)
            if "hipLaunchKernel" in names:
                expect("launches %s: hip names" % os.path.basename(path),
                       sorted(set(n for n in names if is_launch(n))),
                       ["hipExtModuleLaunchKernel", "hipLaunchKernel", "hipMemcpyWithStream"])
        if os.path.basename(path).startswith("hta_ns_resolution_rank0"):
            # HTA's test_cpu_user_annotation_breakdown_with_allowlist on this trace: 8 rows,
            # "5 original + 2 for Optimizer + 1 others", 2 of them with "Optimizer".
            extra = ["--cpu", "-n", "5", "--allowlist", "Optimizer"]
            got = rows_of("annotations", [path], extra)
            expect("annotations %s %s: HTA's test" % (" ".join(extra), os.path.basename(path)),
                   (len(got), sum("Optimizer" in r["name"] for r in got)), (8, 2))
            want = annotation_rows(doc, rows, 0, "user_annotation", 5, ["Optimizer"])
            if not close(got, want):
                expect("annotations %s %s" % (" ".join(extra), os.path.basename(path)), got, want)
        checked += 1
    print("%d shared traces checked" % checked)


if mode == "generated":
    generated()
elif mode == "shared":
    shared(sys.argv[4])
else:
    sys.exit("usage: check_hta.py STROBE OUT_DIR generated|shared [SHARED_DIR]")
tracegen.finish()

#!/usr/bin/env python3
"""Checks HTA's definitions by name (cli/hta.c's table: kernel types and launches) on traces of
three devices, written here, with every number worked out by hand in the comments:

  mtia: an MTIA trace in the shape of HTA's MTIA test data (tests/data/mtia_trace_single_rank):
        launches named "runFunction - job_prep_and_submit_for_execution" (cat mtia_runtime),
        device events of cat mtia_ccp_events with a stream and a correlation, copies named
        dma_*, a collective named hccl_*. It has no "device_type" metadata, so HTA takes its
        ordinary profiler-step restriction (trace.py's MTIA branch keys on that metadata).
  mtia_steps: an MTIA trace with "device_type": "MTIA" and three profiler steps: HTA's MTIA
        branch (filter_mtia_kernels_for_one_rank, _fix_mtia_memory_kernels) decides what is
        kept: the steps' span, the last step included, and the dma kernels within a step;
        mtia_ranks: the lowest rank's device_type decides for all ranks; mtia_categories: the
        branch's CPU-event and kernel categories against HTA's patterns.
  rocm: a ROCm trace as Kineto writes it on an MI250 (the shape of HTA's amd_trace test data):
        hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyWithStream; the runtime rows carry
        "stream": "0x0", which int() cannot read, so they are CPU rows (stream -1).
  cuda: the names the old definitions got wrong: cudaLaunchKernelExC and cuLaunchKernel are
        launches, cudaGraphLaunch is not; ncclDevKernel_* is COMMUNICATION (^nccl); a kernel
        with Memcpy inside its name is COMPUTATION (the pattern is ^Memcpy); and "." in HTA's
        patterns stops at a newline (re.match), so "x\\nncclKernel" is COMPUTATION and
        "cuda\\nLaunchKernel" is no launch.

The patterns (hta/common/types.py at f4d0062c, HTA's get_kernel_type order):
  COMMUNICATION  (^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)
  MEMORY         (^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)
  launch         (cuda.*LaunchKernel)|(cuLaunchKernel)|(^runFunction), and the names of
                 TraceSymbolTable.get_runtime_launch_events_query (cudaMemcpyAsync,
                 cudaMemsetAsync, hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyAsync,
                 hipMemsetAsync, hipMemcpyWithStream)
The formulas (breakdown, overlap, kernel-type states, launch rows, idle categories, queue
lengths) are those of cli/hta.h and the commands' comments; check_hta.py checks the same
formulas against the shared traces.

usage: check_hta_devices.py STROBE OUT_DIR
"""
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, x  # noqa: E402
import tracegen  # noqa: E402

strobe, out_dir = sys.argv[1:3]
os.makedirs(out_dir, exist_ok=True)


def rows_of(cmd, path, extra=()):
    p = subprocess.run([strobe, cmd, "-q", "-f", "json"] + list(extra) + [path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail("%s %s: exit %d: %s" % (cmd, path, p.returncode, p.stderr))
        return None
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("%s %s: output is not JSON (%s)" % (cmd, path, e))
        return None


def close(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(p, q) for p, q in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def expect_close(what, got, want):
    if close(got, want):
        print("ok   ", what)
    else:
        expect(what, got, want)


def write_doc(path, events, **meta):
    doc = {"schemaVersion": 1}
    doc.update(meta)
    doc["traceEvents"] = events
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def breakdown_row(idle, compute, non_compute, kernel):
    return {"rank": 0, "idle_time": idle, "compute_time": compute,
            "non_compute_time": non_compute, "kernel_time": kernel,
            "idle_time_pctg": round(100 * idle / kernel, 2),
            "compute_time_pctg": round(100 * compute / kernel, 2),
            "non_compute_time_pctg": round(100 * non_compute / kernel, 2)}


def launch(c, cpu, gpu, delay):
    return {"rank": 0, "correlation": c, "cpu_duration": cpu, "gpu_duration": gpu,
            "launch_delay": delay}


def kernel(name, durs, ktype):
    n = len(durs)
    mean = sum(durs) / n
    std = math.sqrt(sum((d - mean) ** 2 for d in durs) / (n - 1)) if n > 1 else 0
    return {"name": name, "sum (ns)": sum(durs), "max (ns)": max(durs), "min (ns)": min(durs),
            "stddev": std, "mean (ns)": mean, "kernel_type": ktype, "rank": 0}


def idle(stream, cat, t, ratio):
    return {"rank": 0, "stream": stream, "idle_category": cat, "idle_time": t,
            "idle_time_ratio": ratio}


def queue(stream, n, mean, std, mn, q1, q2, q3, mx):
    return {"rank": 0, "stream": stream, "count": n, "mean": mean, "std": std, "min": mn,
            "25%": q1, "50%": q2, "75%": q3, "max": mx}


# ---- MTIA -----------------------------------------------------------------------------------

RUN = "runFunction - job_prep_and_submit_for_execution"


def mtia():
    """MTIA, integer microseconds. CPU (pid 100): ProfilerStep#1 [0,1000], ProfilerStep#2
    [1000,2000] (two steps: what starts at or after 1000, the last step's start, is dropped with
    what it launched), aten::mul [10,100], an mtiaStreamSynchronize (mtia_runtime, no launch).
    Launches L (mtia_runtime, named RUN) -> device event K (mtia_ccp_events, pid 0, tid = stream):
      L1 [20,50]   corr 1 -> K1 customized_fba_mul_const-dtype_Float  stream 1   [60,160]
      L2 [60,80]   corr 2 -> K2 dma_request_read                      stream 102 [100,146]
      L3 [200,210] corr 3 -> K3 customized_fba_add                    stream 1   [300,350]
      L4 [250,255] corr 4 -> K4 hccl_all_reduce                       stream 801 [320,420]
      L7 [210,215] corr 7 -> K7 customized_fba_mul_const-dtype_Float  stream 1   [360,390]
      L5 [500,530] corr 5 -> K5 dma_request_write                     stream 102 [600,620]
      L6 [1100,1110] corr 6 -> K6 customized_late stream 1 [1200,1300]: dropped (after 1000).
    Types: K1 K3 K7 COMPUTATION, K2 K5 MEMORY (^dma), K4 COMMUNICATION (^hccl).

    breakdown: all merged [60,160] [300,420] [600,620]: kernel_time 620 - 60 = 560, busy
      100 + 120 + 20 = 240, idle 320; COMPUTATION merged [60,160] [300,350] [360,390]: 180;
      non_compute 560 - 180 - 320 = 60 (K4 alone [350,360] [390,420] 40, K5 20).
      Percentages 57.14, 32.14, 10.71. (The old definitions took dma_* and hccl_* for
      computation: compute 240, non_compute 0.)
    overlap: COMMUNICATION [320,420] (100) against COMPUTATION: [320,350] 30 + [360,390] 30:
      60.00 (the old definitions: no communication, null).
    kernels --by-type: COMPUTATION alone [60,160] 100 + [300,320] 20 = 120; both [320,350]
      + [360,390] = 60; COMMUNICATION alone [350,360] + [390,420] = 40. 220 in all: 54.5,
      27.3, 18.2. With --memory, MEMORY [100,146] [600,620]: COMPUTATION alone [60,100] 40 +
      [146,160] 14 + [300,320] 20 = 74; COMPUTATION overlapping MEMORY [100,146] 46; MEMORY
      alone 20; the COMMUNICATION states as before. 240 in all: 74 (30.8), 60 (25.0),
      46 (19.2), 40 (16.7), 20 (8.3).
      Kernels: hccl_all_reduce 100; customized_fba_add 50; customized_fba_mul_const-dtype_Float
      100 and 30 (sum 130, mean 65, std sqrt(2 * 35^2) = 35 sqrt 2); dma_request_read 46,
      dma_request_write 20.
    launches (cpu_duration, gpu_duration, launch_delay = gpu ts - cpu ts + cpu_duration), in
      the launches' file order L1 L2 L3 L4 L7 L5: (30, 100, 70), (20, 46, 60), (10, 50, 110),
      (5, 100, 75), (5, 30, 155), (30, 20, 130). Short kernels (cpu <= 50, gpu < cpu): L5's,
      1; runtime outliers (cpu > 50): 0; launch delay outliers (> 100): 3. (The old
      definitions knew no runFunction: no launch.)
    idle, streams in the order of their first kernel (1, 102, 801); a gap is host_wait when
      the kernel's launch starts after the previous kernel ends, else kernel_wait under 30 us,
      else other:
      stream 1: K1 -> K3 gap 140, L3 at 200 > 160: host_wait; K3 -> K7 gap 10, L7 at 210 <
        350: kernel_wait. 150 in all: host_wait 140 (0.93), kernel_wait 10 (0.07), other 0.
      stream 102: K2 -> K5 gap 454, L5 at 500 > 146: host_wait 454 (1.00), other 0 (0.00).
      stream 801: one kernel: other 0, ratio 0/0 (null).
    queue (+1 at a launch, -1 when its kernel starts; at one time a launch first):
      stream 1: 20 +1, 60 -1, 200 +1, 210 +1, 300 -1, 360 -1: 1 0 1 2 1 0: count 6, mean 5/6,
        std sqrt((3 (1/6)^2 + 2 (5/6)^2 + (7/6)^2) / 5) = sqrt(17/30); sorted 0 0 1 1 1 2:
        quartiles 0.25, 1, 1; min 0, max 2 (the old definitions: -1 -2 -3, negative).
      stream 102: 1 0 1 0: mean 0.5, std sqrt(1/3), sorted 0 0 1 1: 0, 0.5, 1.
      stream 801: 1 0: mean 0.5, std sqrt(1/2), 0.25, 0.5, 0.75.
    """
    cpu = dict(pid=100, tid=100)
    ev = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "MTIA 0"}},
        x("user_annotation", "ProfilerStep#1", 0, 1000, **cpu),
        x("user_annotation", "ProfilerStep#2", 1000, 1000, **cpu),
        x("cpu_op", "aten::mul", 10, 90, **cpu),
    ]
    launches = [(1, 20, 30), (2, 60, 20), (3, 200, 10), (4, 250, 5), (7, 210, 5), (5, 500, 30),
                (6, 1100, 10)]
    kernels = [(1, "customized_fba_mul_const-dtype_Float", 1, 60, 100),
               (2, "dma_request_read", 102, 100, 46), (3, "customized_fba_add", 1, 300, 50),
               (4, "hccl_all_reduce", 801, 320, 100),
               (7, "customized_fba_mul_const-dtype_Float", 1, 360, 30),
               (5, "dma_request_write", 102, 600, 20), (6, "customized_late", 1, 1200, 100)]
    for c, ts, dur in launches:
        ev.append(x("mtia_runtime", RUN, ts, dur, correlation=c, **cpu))
    ev.append(x("mtia_runtime", "mtiaStreamSynchronize", 700, 5, correlation=8, **cpu))
    for c, name, st, ts, dur in kernels:
        ev.append(x("mtia_ccp_events", name, ts, dur, pid=0, tid=st, stream=st, correlation=c,
                    device=0))
    path = write_doc(os.path.join(out_dir, "mtia.json"), ev)

    expect("mtia: breakdown", rows_of("breakdown", path), [breakdown_row(320, 180, 60, 560)])
    expect("mtia: overlap", rows_of("overlap", path), [{"rank": 0, "comp_comm_overlap_pctg": 60.0}])
    got = rows_of("kernels", path, ["--by-type"]) or {}
    expect("mtia: kernels --by-type: types", got.get("kernel_types"), [
        {"kernel_type": "COMPUTATION", "sum": 120, "percentage": 54.5},
        {"kernel_type": "COMPUTATION overlapping COMMUNICATION", "sum": 60, "percentage": 27.3},
        {"kernel_type": "COMMUNICATION", "sum": 40, "percentage": 18.2}])
    comm_comp = [kernel("hccl_all_reduce", [100], "COMMUNICATION"),
                 kernel("customized_fba_add", [50], "COMPUTATION"),
                 kernel("customized_fba_mul_const-dtype_Float", [100, 30], "COMPUTATION")]
    expect_close("mtia: kernels --by-type: kernels", got.get("kernels"), comm_comp)
    got = rows_of("kernels", path, ["--by-type", "--memory"]) or {}
    expect("mtia: kernels --by-type --memory: types", got.get("kernel_types"), [
        {"kernel_type": "COMPUTATION", "sum": 74, "percentage": 30.8},
        {"kernel_type": "COMPUTATION overlapping COMMUNICATION", "sum": 60, "percentage": 25.0},
        {"kernel_type": "COMPUTATION overlapping MEMORY", "sum": 46, "percentage": 19.2},
        {"kernel_type": "COMMUNICATION", "sum": 40, "percentage": 16.7},
        {"kernel_type": "MEMORY", "sum": 20, "percentage": 8.3}])
    expect_close("mtia: kernels --by-type --memory: kernels", got.get("kernels"), comm_comp + [
        kernel("dma_request_read", [46], "MEMORY"), kernel("dma_request_write", [20], "MEMORY")])
    expect("mtia: launches", rows_of("launches", path), {
        "launches": [launch(1, 30, 100, 70), launch(2, 20, 46, 60), launch(3, 10, 50, 110),
                     launch(4, 5, 100, 75), launch(7, 5, 30, 155), launch(5, 30, 20, 130)],
        "summary": [{"rank": 0, "short_kernels": 1, "runtime_outliers": 0,
                     "launch_delay_outliers": 3}]})
    expect("mtia: idle", rows_of("idle", path), [
        idle(1, "host_wait", 140, 0.93), idle(1, "kernel_wait", 10, 0.07), idle(1, "other", 0, 0.0),
        idle(102, "host_wait", 454, 1.0), idle(102, "other", 0, 0.0),
        idle(801, "other", 0, None)])
    got = (rows_of("queue", path) or {}).get("summary")
    expect_close("mtia: queue", got, [
        queue(1, 6, 5 / 6, math.sqrt(17 / 30), 0, 0.25, 1, 1, 2),
        queue(102, 4, 0.5, math.sqrt(1 / 3), 0, 0, 0.5, 1, 1),
        queue(801, 2, 0.5, math.sqrt(0.5), 0, 0.25, 0.5, 0.75, 1)])


def mtia_steps():
    """MTIA with the metadata HTA's branch keys on ("device_type": "MTIA", read by
    Trace.get_device_type from the first rank's top-level keys) and three profiler steps, so that
    _filter_irrelevant_gpu_kernels takes filter_mtia_kernels_for_one_rank (hta/common/trace.py at
    05dc179d) instead of the last-step restriction. Integer microseconds. CPU (pid 100):
    ProfilerStep#1 [100,1100], #2 [1100,2100], #3 [2100,2600] (user_annotation, a CPU event cat):
    the span is [100, 2600], from the first step's ts to the last step's end. aten::mul [200,300]
    (cpu_op). Launches L (mtia_runtime: CPU events by (^(.+)_runtime)) -> device events K
    (mtia_ccp_events: KERNEL_CATEGORY_PATTERN; pid 0, tid = stream), in this file order:
      L0 [10,30]     corr 10 -> K0 customized_early  stream 1   [40,90]
      L1 [120,150]   corr 1  -> K1 customized_mul    stream 1   [160,260]
      L2 [1120,1140] corr 2  -> K2 customized_add    stream 1   [1300,1400]
      L3 [2120,2130] corr 3  -> K3 customized_late   stream 1   [2200,2260]
      L4 [2550,2650] corr 4  -> K4 customized_after  stream 1   [2700,2750]
      D1 dma_read   stream 102, corr 99 (no CPU row has it)     [500,540]
      D2 dma_write  no stream, tid 7, no correlation            [1500,1530]
      D3 dma_late   stream 102, corr -1                         [2650,2700]
    The MTIA branch keeps: the CPU events with 100 <= ts and end <= 2600: the steps, aten::mul,
      L1 L2 L3 (not L0: ts 10 < 100; not L4: end 2650 > 2600, and so not K4); the kernels of
      their correlations: K1 K2 K3 (K3 in the last step: kept, where the other branch drops
      what starts at or after the last step's start); the memory kernels (^dma) whose ts lies
      in a step's [ts, ts + dur]: D1 (500, step 1, though nothing launched it) and D2 (1500,
      step 2), which has stream -1 and so takes its tid, 7, as its stream; not D3 (2650 > 2600).
    GPU rows (stream != -1): K1 [160,260] K2 [1300,1400] K3 [2200,2260] on stream 1, D1
      [500,540] on 102, D2 [1500,1530] on 7.
    breakdown: kernel_time 2260 - 160 = 2100; merged busy 100 + 40 + 100 + 30 + 60 = 330, idle
      1770; COMPUTATION (customized_*) 260; non_compute 2100 - 260 - 1770 = 70 (D1 40, D2 30):
      84.29, 12.38, 3.33.
    kernels --by-type: COMPUTATION 260 (100.0); with --memory: COMPUTATION 260 (260/330 =
      78.8), MEMORY 70 (21.2). Kernels: customized_add 100, customized_late 60, customized_mul
      100, dma_read 40, dma_write 30 (one each: std 0).
    launches (cpu_duration, gpu_duration, launch_delay = gpu ts - cpu ts + cpu_duration), L1 L2
      L3: (30, 100, 160 - 120 + 30 = 70), (20, 100, 1300 - 1120 + 20 = 200), (10, 60, 2200 -
      2120 + 10 = 90); short kernels (cpu <= 50, gpu < cpu) 0; runtime outliers (cpu > 50) 0;
      launch delay outliers (> 100): L2's, 1.
    idle, streams in the order of their first kernel in file order (1, 102, 7): stream 1: K1 ->
      K2 gap 1040, L2 at 1120 > 260: host_wait; K2 -> K3 gap 800, L3 at 2120 > 1400:
      host_wait; 1840 (1.00), other 0 (0.00). Streams 102 and 7: one kernel each: other 0,
      ratio null.
    queue: stream 1: +1 120, -1 160, +1 1120, -1 1300, +1 2120, -1 2200: 1 0 1 0 1 0: count 6,
      mean 0.5, std sqrt(6 * 0.25 / 5) = sqrt(0.3); sorted 0 0 0 1 1 1: quartiles 0, 0.5, 1;
      min 0, max 1. D1 and D2 have no launch: no queue row for 102 or 7.
    The same trace without "device_type" takes the other branch: CPU rows before the last
      step's start (2100): L0 L1 L2 ...; kernels K0 K1 K2 (D1: no kept correlation; D2 a CPU
      row, stream -1): kernel_time 1400 - 40 = 1360, busy 50 + 100 + 100 = 250, idle 1110,
      compute 250, non_compute 0: 81.62, 18.38, 0.0.
    """
    cpu = dict(pid=100, tid=100)
    ev = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "MTIA 0"}},
        x("user_annotation", "ProfilerStep#1", 100, 1000, **cpu),
        x("user_annotation", "ProfilerStep#2", 1100, 1000, **cpu),
        x("user_annotation", "ProfilerStep#3", 2100, 500, **cpu),
        x("cpu_op", "aten::mul", 200, 100, **cpu),
    ]
    for c, ts, dur in ((10, 10, 20), (1, 120, 30), (2, 1120, 20), (3, 2120, 10), (4, 2550, 100)):
        ev.append(x("mtia_runtime", RUN, ts, dur, correlation=c, **cpu))
    dev = []
    for c, name, ts, dur in ((10, "customized_early", 40, 50), (1, "customized_mul", 160, 100),
                             (2, "customized_add", 1300, 100), (3, "customized_late", 2200, 60),
                             (4, "customized_after", 2700, 50)):
        dev.append((ts, x("mtia_ccp_events", name, ts, dur, pid=0, tid=1, stream=1,
                          correlation=c, device=0)))
    dev.append((500, x("mtia_ccp_events", "dma_read", 500, 40, pid=0, tid=102, stream=102,
                       correlation=99, device=0)))
    dev.append((1500, x("mtia_ccp_events", "dma_write", 1500, 30, pid=0, tid=7, device=0)))
    dev.append((2650, x("mtia_ccp_events", "dma_late", 2650, 50, pid=0, tid=102, stream=102,
                        correlation=-1, device=0)))
    ev += [e for _, e in sorted(dev, key=lambda d: d[0])]
    path = write_doc(os.path.join(out_dir, "mtia_steps.json"), ev, device_type="MTIA")

    expect("mtia steps: breakdown", rows_of("breakdown", path),
           [breakdown_row(1770, 260, 70, 2100)])
    got = rows_of("kernels", path, ["--by-type"]) or {}
    expect("mtia steps: kernels --by-type: types", got.get("kernel_types"),
           [{"kernel_type": "COMPUTATION", "sum": 260, "percentage": 100.0}])
    got = rows_of("kernels", path, ["--by-type", "--memory"]) or {}
    expect("mtia steps: kernels --by-type --memory: types", got.get("kernel_types"), [
        {"kernel_type": "COMPUTATION", "sum": 260, "percentage": 78.8},
        {"kernel_type": "MEMORY", "sum": 70, "percentage": 21.2}])
    expect_close("mtia steps: kernels --by-type --memory: kernels",
                 sorted(got.get("kernels") or [], key=lambda k: k.get("name", "")), [
                     kernel("customized_add", [100], "COMPUTATION"),
                     kernel("customized_late", [60], "COMPUTATION"),
                     kernel("customized_mul", [100], "COMPUTATION"),
                     kernel("dma_read", [40], "MEMORY"), kernel("dma_write", [30], "MEMORY")])
    expect("mtia steps: launches", rows_of("launches", path), {
        "launches": [launch(1, 30, 100, 70), launch(2, 20, 100, 200), launch(3, 10, 60, 90)],
        "summary": [{"rank": 0, "short_kernels": 0, "runtime_outliers": 0,
                     "launch_delay_outliers": 1}]})
    expect("mtia steps: idle", rows_of("idle", path), [
        idle(1, "host_wait", 1840, 1.0), idle(1, "other", 0, 0.0),
        idle(102, "other", 0, None), idle(7, "other", 0, None)])
    got = (rows_of("queue", path) or {}).get("summary")
    expect_close("mtia steps: queue", got,
                 [queue(1, 6, 0.5, math.sqrt(0.3), 0, 0, 0.5, 1, 1)])

    plain = write_doc(os.path.join(out_dir, "mtia_steps_no_device_type.json"), ev)
    expect("mtia steps without device_type: breakdown", rows_of("breakdown", plain),
           [breakdown_row(1110, 250, 0, 1360)])


def mtia_ranks():
    """HTA's branch is chosen by the first rank's metadata alone (Trace.get_device_type: the
    first key of self.traces, the lowest rank), and taken for every rank. Each rank's trace:
    ProfilerStep#1 [0,100], #2 [100,200] (user_annotation); L1 [10,20] corr 1 -> K1 k_a
    stream 1 [30,50]; L2 [120,130] corr 2 -> K2 k_b stream 1 [150,170] (K2 in the last step).
      MTIA branch: span [0,200]: L1 L2 K1 K2: kernel_time 170 - 30 = 140, busy 40, idle 100,
        compute 40, non_compute 0: 71.43, 28.57, 0.0.
      last-step restriction (before 100): L1 K1: kernel_time 20, idle 0, compute 20: 0.0,
        100.0, 0.0.
    "device_type": "MTIA" on rank 0 only: both ranks take the MTIA branch; on rank 1 only:
    neither does."""
    def doc(folder, rank, mtia):
        cpu = dict(pid=100, tid=100)
        ev = [x("user_annotation", "ProfilerStep#1", 0, 100, **cpu),
              x("user_annotation", "ProfilerStep#2", 100, 100, **cpu),
              x("mtia_runtime", RUN, 10, 10, correlation=1, **cpu),
              x("mtia_runtime", RUN, 120, 10, correlation=2, **cpu),
              x("mtia_ccp_events", "k_a", 30, 20, pid=0, tid=1, stream=1, correlation=1),
              x("mtia_ccp_events", "k_b", 150, 20, pid=0, tid=1, stream=1, correlation=2)]
        meta = {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}
        if mtia:
            meta["device_type"] = "MTIA"
        os.makedirs(folder, exist_ok=True)
        write_doc(os.path.join(folder, "rank%d.json" % rank), ev, **meta)

    def rows(idle, compute, kernel):
        out = []
        for rank in (0, 1):
            r = breakdown_row(idle, compute, 0, kernel)
            r["rank"] = rank
            out.append(r)
        return out

    first = os.path.join(out_dir, "mtia_rank0")
    doc(first, 0, True)
    doc(first, 1, False)
    expect("mtia device_type on rank 0: breakdown", rows_of("breakdown", first),
           rows(100, 40, 140))
    second = os.path.join(out_dir, "mtia_rank1")
    doc(second, 0, False)
    doc(second, 1, True)
    expect("mtia device_type on rank 1: breakdown", rows_of("breakdown", second),
           rows(0, 20, 20))


# ---- ROCm -----------------------------------------------------------------------------------

def rocm():
    """ROCm, decimal microseconds as Kineto writes them on ROCm (whole values here, so HTA's
    rounding keeps them). No profiler step: nothing is restricted. CPU rows (cuda_runtime,
    "stream": "0x0"), device rows on stream 0 (pid 2, a GPU's index):
      hipLaunchKernel          [0,10]   corr 1 -> Cijk_Ailk_Bjlk_SB (kernel)       [20,50]
      hipExtModuleLaunchKernel [15,20]  corr 2 -> void at::native::elementwise     [60,70]
      hipMemcpyWithStream      [80,120] corr 3 -> Memcpy HtoD (Host -> Device)     [90,100]
      hipDeviceSynchronize     [130,135] corr 4 (no launch, no device row)
    breakdown: merged [20,50] [60,70] [90,100]: kernel_time 80, busy 50, idle 30; COMPUTATION
      [20,50] [60,70] 40; non_compute 80 - 40 - 30 = 10 (the copy): 37.5, 50.0, 12.5.
    kernels --by-type --memory: COMPUTATION 40 (80.0), MEMORY 10 (20.0).
    launches: (10, 30, 20 - 0 + 10 = 30), (5, 10, 60 - 15 + 5 = 50), (40, 10, 90 - 80 + 40 =
      50); short kernels: the copy's (40 <= 50, 10 < 40): 1; no outlier. (The old definitions
      knew no hip name: no launch, as the issue found on the shared MI250 trace.)
    queue, stream 0: +1 at 0, 15, 80; -1 at 20, 60, 90: 1 2 1 0 1 0: count 6, mean 5/6,
      std sqrt(17/30) (as MTIA's stream 1), sorted 0 0 1 1 1 2: 0.25, 1, 1, max 2.
    """
    cpu = dict(pid=597913, tid=597913)
    ev = []
    for c, name, ts, dur in ((1, "hipLaunchKernel", 0.0, 10.0),
                             (2, "hipExtModuleLaunchKernel", 15.0, 5.0),
                             (3, "hipMemcpyWithStream", 80.0, 40.0),
                             (4, "hipDeviceSynchronize", 130.0, 5.0)):
        ev.append(x("cuda_runtime", name, ts, dur, correlation=c, stream="0x0", **cpu))
    for c, cat, name, ts, dur in ((1, "kernel", "Cijk_Ailk_Bjlk_SB", 20.0, 30.0),
                                  (2, "kernel", "void at::native::elementwise", 60.0, 10.0),
                                  (3, "gpu_memcpy", "Memcpy HtoD (Host -> Device)", 90.0, 10.0)):
        ev.append(x(cat, name, ts, dur, pid=2, tid=0, stream=0, correlation=c, device=2))
    path = write_doc(os.path.join(out_dir, "rocm.json"), ev)
    expect("rocm: breakdown", rows_of("breakdown", path), [breakdown_row(30, 40, 10, 80)])
    got = rows_of("kernels", path, ["--by-type", "--memory"]) or {}
    expect("rocm: kernels --by-type --memory: types", got.get("kernel_types"), [
        {"kernel_type": "COMPUTATION", "sum": 40, "percentage": 80.0},
        {"kernel_type": "MEMORY", "sum": 10, "percentage": 20.0}])
    expect("rocm: launches", rows_of("launches", path), {
        "launches": [launch(1, 10, 30, 30), launch(2, 5, 10, 50), launch(3, 40, 10, 50)],
        "summary": [{"rank": 0, "short_kernels": 1, "runtime_outliers": 0,
                     "launch_delay_outliers": 0}]})
    got = (rows_of("queue", path) or {}).get("summary")
    expect_close("rocm: queue", got, [queue(0, 6, 5 / 6, math.sqrt(17 / 30), 0, 0.25, 1, 1, 2)])


# ---- CUDA names -----------------------------------------------------------------------------

def cuda():
    """CUDA, integer microseconds, no profiler step. Launches -> kernels:
      cudaLaunchKernelExC  [0,5]   corr 1 -> ncclDevKernel_AllReduce_Sum_f32_RING_LL st 20 [10,60]
      cuLaunchKernel       [10,15] corr 2 -> triton_poi_fused_add_0     stream 7  [20,40]
      cudaLaunchKernel     [20,25] corr 3 -> void foo_Memcpy_kernel     stream 7  [45,55]
      cudaMemsetAsync      [30,35] corr 4 -> Memset (Device)            stream 7  [70,75]
      "cuda\\nLaunchKernel" [40,45] corr 5 -> "x\\nncclKernel"           stream 7  [80,90]
      cudaGraphLaunch      [50,55] corr 6 -> k_graph                    stream 7  [100,105]
    Types: the ncclDevKernel COMMUNICATION; Memset MEMORY; the others COMPUTATION (Memcpy not at
    the start; ncclKernel past a newline). Launches: corr 1 to 4 (not 5: "." stops at the
    newline; not cudaGraphLaunch).
    breakdown: merged [10,60] [70,75] [80,90] [100,105]: kernel_time 95, busy 70, idle 25;
      COMPUTATION [20,40] [45,55] [80,90] [100,105]: 45; non_compute 95 - 45 - 25 = 25:
      26.32, 47.37, 26.32.
    overlap: COMMUNICATION [10,60] (50), COMPUTATION within it 20 + 10: 60.00.
    kernels --by-type: COMMUNICATION alone [10,20] [40,45] [55,60] 20; both [20,40] [45,55] 30;
      COMPUTATION alone [80,90] [100,105] 15. 65 in all: 30 (46.2), 20 (30.8), 15 (23.1).
    launches: (5, 50, 10 - 0 + 5 = 15), (5, 20, 15), (5, 10, 30), (5, 5, 45): no short kernel
      (5 < 5 is false), no outlier.
    """
    ev = []
    for c, name, ts in ((1, "cudaLaunchKernelExC", 0), (2, "cuLaunchKernel", 10),
                        (3, "cudaLaunchKernel", 20), (4, "cudaMemsetAsync", 30),
                        (5, "cuda\nLaunchKernel", 40), (6, "cudaGraphLaunch", 50)):
        ev.append(x("cuda_runtime", name, ts, 5, correlation=c))
    for c, cat, name, st, ts, dur in (
            (1, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, 10, 50),
            (2, "kernel", "triton_poi_fused_add_0", 7, 20, 20),
            (3, "kernel", "void foo_Memcpy_kernel", 7, 45, 10),
            (4, "gpu_memset", "Memset (Device)", 7, 70, 5),
            (5, "kernel", "x\nncclKernel", 7, 80, 10),
            (6, "kernel", "k_graph", 7, 100, 5)):
        ev.append(x(cat, name, ts, dur, pid=0, tid=st, stream=st, correlation=c))
    path = write_doc(os.path.join(out_dir, "cuda_names.json"), ev)
    expect("cuda names: breakdown", rows_of("breakdown", path), [breakdown_row(25, 45, 25, 95)])
    expect("cuda names: overlap", rows_of("overlap", path),
           [{"rank": 0, "comp_comm_overlap_pctg": 60.0}])
    got = rows_of("kernels", path, ["--by-type"]) or {}
    expect("cuda names: kernels --by-type: types", got.get("kernel_types"), [
        {"kernel_type": "COMPUTATION overlapping COMMUNICATION", "sum": 30, "percentage": 46.2},
        {"kernel_type": "COMMUNICATION", "sum": 20, "percentage": 30.8},
        {"kernel_type": "COMPUTATION", "sum": 15, "percentage": 23.1}])
    expect("cuda names: launches", rows_of("launches", path), {
        "launches": [launch(1, 5, 50, 15), launch(2, 5, 20, 15), launch(3, 5, 10, 30),
                     launch(4, 5, 5, 45)],
        "summary": [{"rank": 0, "short_kernels": 0, "runtime_outliers": 0,
                     "launch_delay_outliers": 0}]})


# ---- the matchers against HTA's patterns ------------------------------------------------------

# HTA's patterns as HTA writes them, applied here by Python's re as HTA applies them; strobe has
# its own matchers (cli/hta.c), compared here name by name.
COMMUNICATE = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
MEMORY = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
KERNEL_LAUNCH = re.compile(r"(cuda.*LaunchKernel)|(cuLaunchKernel)|(^runFunction)")
RUNTIME_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                    "cudaMemcpyAsync", "cudaMemsetAsync", RUN, "hipLaunchKernel",
                    "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
                    "hipMemcpyWithStream")
NAMES = ["nccl", "ncc", "ncclAllReduce", "xncclKernel_y", "x\nncclKernel", "hip", "hi",
         "hipMemcpyAsync", "hccl_x", "hcc", "Memcpy", "xMemcpy", "hipMemset", "Memset (Device)",
         "memset", "dma", "dm", "adma", "cudaLaunchKernel", "cudaXLaunchKernelY", "cudaLaunchKerne",
         "cuda\nLaunchKernel", "cuLaunchKernelEx", "acuLaunchKernel", "runFunction", "runfunction",
         RUN, "cudaMemcpyAsync", "cudaMemcpyAsyncX", "hipMemcpyWithStream", "hipLaunchKernelX",
         "gemm", ""]


# The categories of HTA's MTIA branch (hta/common/types.py at f4d0062c), applied by
# TraceSymbolTable.get_symbol_ids with pandas' str.match, that is re.match.
CPU_EVENTS = re.compile(r"(^cpu_op)|(^user_annotation$)|(^(.+)_runtime)")
KERNEL_CATS = re.compile("(kernel)|(gpu_mem.+)|(mtia_ccp_events)")
CPU_CATS = ["cpu_op", "cpu_op_x", "xcpu_op", "user_annotation", "user_annotation\n",
            "user_annotation_x", "gpu_user_annotation", "mtia_runtime", "cuda_runtime", "_runtime",
            "a_runtime", "x\n_runtime", "cuda_driver", "python_function", "xpu_runtime_y"]
KERNEL_CAT_NAMES = ["kernel", "kernelx", "Kernel", "gpu_memcpy", "gpu_mem", "gpu_mem\nx",
                    "mtia_ccp_events", "mtia_ccp_events_x", "cuda_sync", "xkernel"]


def mtia_categories():
    """Each category of CPU_CATS as the cat of the launch (RUN, corr 1, [10,20]) of a kernel
    (mtia_ccp_events, stream 1, [30,50]), and each of KERNEL_CAT_NAMES as the kernel's cat under
    a launch of cat mtia_runtime, in an MTIA trace with ProfilerStep#1 [0,100] and #2 [100,200]:
    the branch keeps the launch when CPU_EVENTS takes its cat (its kernel then by the
    correlation), and the kernel when KERNEL_CATS takes its cat or, being within the steps'
    span, CPU_EVENTS does; launches then has one row, else none."""
    got, want = {}, {}
    for i, (launch_cat, kernel_cat) in enumerate(
            [(c, "mtia_ccp_events") for c in CPU_CATS] +
            [("mtia_runtime", c) for c in KERNEL_CAT_NAMES]):
        cpu = dict(pid=100, tid=100)
        path = write_doc(os.path.join(out_dir, "mtia_cat%02d.json" % i), [
            x("user_annotation", "ProfilerStep#1", 0, 100, **cpu),
            x("user_annotation", "ProfilerStep#2", 100, 100, **cpu),
            x(launch_cat, RUN, 10, 10, correlation=1, **cpu),
            x(kernel_cat, "k", 30, 20, pid=0, tid=1, stream=1, correlation=1)],
            device_type="MTIA")
        key = "%r -> %r" % (launch_cat, kernel_cat)
        got[key] = len((rows_of("launches", path) or {}).get("launches") or [])
        want[key] = int(CPU_EVENTS.match(launch_cat) is not None and
                        (KERNEL_CATS.match(kernel_cat) is not None or
                         CPU_EVENTS.match(kernel_cat) is not None))
    expect("MTIA branch: launches kept by the categories of %d traces" % len(got), got, want)


def matchers():
    """Each name of NAMES as a kernel (stream 7) and as the CPU row of its correlation: its
    kernel type (kernels --by-type --memory) is the first pattern of COMMUNICATE, MEMORY that
    re.match takes, else COMPUTATION; the CPU row is a launch (one launches row) when
    KERNEL_LAUNCH takes it or RUNTIME_LAUNCHES holds it."""
    got_types, want_types, got_launch, want_launch = {}, {}, {}, {}
    for i, name in enumerate(NAMES):
        path = write_doc(os.path.join(out_dir, "name%02d.json" % i), [
            x("cuda_runtime", name, 0, 5, correlation=1),
            x("kernel", name, 10, 5, pid=0, tid=7, stream=7, correlation=1)])
        rows = (rows_of("kernels", path, ["--by-type", "--memory"]) or {}).get("kernels") or []
        got_types[name] = [r.get("kernel_type") for r in rows]
        want_types[name] = ["COMMUNICATION" if COMMUNICATE.match(name) else
                            "MEMORY" if MEMORY.match(name) else "COMPUTATION"]
        got_launch[name] = len((rows_of("launches", path) or {}).get("launches") or [])
        want_launch[name] = int(KERNEL_LAUNCH.match(name) is not None or name in RUNTIME_LAUNCHES)
    expect("kernel types of %d names, as HTA's patterns" % len(NAMES), got_types, want_types)
    expect("launches of %d names, as HTA's patterns and list" % len(NAMES), got_launch,
           want_launch)


mtia()
mtia_steps()
mtia_ranks()
rocm()
cuda()
matchers()
mtia_categories()
tracegen.finish()

#!/usr/bin/env python3
"""torch_check.py: the torch workload of issue 30 on a GPU, under torch.profiler and under
strobe.profiler in one process, compared op by op; scripts/gpu-check.sh runs it.

    python3 tests/gpu/torch_check.py OUT_DIR [--device cuda|cpu] [--workload-only]
                                     [--capture-range]
    python3 tests/gpu/torch_check.py --check-trace TRACE [--ranges N]

Checks (exit 1 when one fails, 77 when torch has no usable device):
  - the operator names and call counts of the two tables agree exactly;
  - per operator, strobe's self device time is within 5% of torch.profiler's (operators with
    at least 20 us of device time in both; shorter ones are listed, not judged);
  - every kernel, copy and memset in strobe's trace is linked to a CPU operator or range
    (its "External id" is one of theirs, or its correlation one of the runtime calls').
The traces go to OUT_DIR (torch.json, strobe.json) for the checkers.
--workload-only runs the workload once, unprofiled (for strobe record --torch); with
--capture-range it is wrapped in torch.cuda.profiler.start()/stop() (cudaProfilerStart/Stop),
for strobe record --capture-range cuda-profiler-api.
--device cpu runs the same comparison without device columns (a dry run of this script).
--check-trace checks a trace of the workload written by strobe record --torch: torch's operators
in it, device events, every one linked; with --ranges N, exactly N "train_step" ranges (what a
capture range kept).
"""
import argparse
import json
import os
import sys
import threading

import torch


def workload(dev, steps=3, prof=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 64)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256, device=dev)
    for _ in range(steps):
        with torch.autograd.profiler.record_function("train_step"):
            y = model(x).relu().sum()
            y.backward()
            opt.step()
            opt.zero_grad()
        if prof is not None:
            prof.step()
    if dev != "cpu":
        torch.cuda.synchronize()


def rows(averages):
    """name -> (count, self device us) from key_averages()."""
    out = {}
    for a in averages:
        dev = getattr(a, "self_device_time_total", None)
        if dev is None:
            dev = getattr(a, "self_cuda_time_total", 0.0)
        out[a.key] = (a.count, float(dev or 0.0))
    return out


def linked(trace_path):
    """(device events, unlinked device events) of a Kineto JSON trace."""
    doc = json.load(open(trace_path))
    ev = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]
    host_ext, rt_corr = set(), set()
    for e in ev:
        a = e.get("args") or {}
        if e.get("cat") in ("cpu_op", "user_annotation"):
            if "External id" in a:
                host_ext.add(a["External id"])
        elif e.get("cat") in ("cuda_runtime", "cuda_driver"):
            if "correlation" in a:
                rt_corr.add(a["correlation"])
    dev = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    bad = [e for e in dev if (e.get("args") or {}).get("External id") not in host_ext and
           (e.get("args") or {}).get("correlation") not in rt_corr]
    return dev, bad


def check_trace(path, ranges):
    doc = json.load(open(path))
    ev = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]
    ops = sum(1 for e in ev if e.get("cat") == "cpu_op" and e.get("name", "").startswith("aten::"))
    steps = sum(1 for e in ev if e.get("name") == "train_step")
    devs, bad = linked(path)
    print("%s: %d aten:: operators, %d train_step ranges, %d device events, %d not linked"
          % (path, ops, steps, len(devs), len(bad)))
    ok = ops > 0 and devs and not bad and (ranges is None or steps == ranges)
    print("check-trace: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--check-trace")
    ap.add_argument("--ranges", type=int)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--workload-only", action="store_true")
    ap.add_argument("--capture-range", action="store_true")
    args = ap.parse_args()
    if args.check_trace:
        return check_trace(args.check_trace, args.ranges)
    if not args.out:
        ap.error("OUT_DIR is needed")
    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("SKIP: torch %s sees no CUDA device" % torch.__version__)
        return 77
    os.makedirs(args.out, exist_ok=True)
    if args.workload_only:
        workload(dev, steps=2)  # warm-up, outside any capture range
        if args.capture_range:
            torch.cuda.profiler.start()
        workload(dev)
        t = threading.Thread(target=workload, args=(dev, 1))
        t.start()
        t.join()
        if args.capture_range:
            torch.cuda.profiler.stop()
        return 0

    import strobe.profiler as sp
    workload(dev, steps=2)  # warm-up: allocator, cuBLAS handles, kernels loaded

    tacts = [torch.profiler.ProfilerActivity.CPU]
    sacts = [sp.ProfilerActivity.CPU]
    if dev == "cuda":
        tacts.append(torch.profiler.ProfilerActivity.CUDA)
        sacts.append(sp.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=tacts, record_shapes=True) as tp:
        workload(dev, prof=tp)
    tp.export_chrome_trace(os.path.join(args.out, "torch.json"))
    with sp.profile(activities=sacts, record_shapes=True) as spf:
        workload(dev, prof=spf)
    spath = os.path.join(args.out, "strobe.json")
    spf.export_chrome_trace(spath)

    t, s = rows(tp.key_averages()), rows(spf.key_averages())
    failures = []
    for name in sorted(set(t) | set(s)):
        tc, td = t.get(name, (0, 0.0))
        sc, sd = s.get(name, (0, 0.0))
        if tc != sc:
            failures.append("%s: %d calls under torch.profiler, %d under strobe" % (name, tc, sc))
        if td >= 20.0 and sd >= 20.0:
            ratio = sd / td
            print("%-50s %6d calls  device %10.1f us (torch) %10.1f us (strobe)  %+.1f%%"
                  % (name[:50], sc, td, sd, (ratio - 1) * 100))
            if abs(ratio - 1) > 0.05:
                failures.append("%s: self device time %.1f us under strobe, %.1f under torch"
                                % (name, sd, td))
        elif td or sd:
            print("%-50s %6d calls  device %10.1f us (torch) %10.1f us (strobe)  (too short to"
                  " judge)" % (name[:50], sc, td, sd))
    devs, bad = linked(spath)
    print("strobe trace: %d device events, %d not linked to a CPU operator" % (len(devs), len(bad)))
    if dev == "cuda" and not devs:
        failures.append("no device events in strobe's trace")
    for e in bad[:10]:
        failures.append("unlinked %s %s" % (e.get("cat"), e.get("name", "")[:80]))
    for f in failures:
        print("FAIL:", f)
    print("torch_check: %s" % ("PASS" if not failures else "FAIL"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

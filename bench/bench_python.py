#!/usr/bin/env python3
"""bench_python.py: what a record_function enter+exit costs with the profiler on, strobe's
beside torch's, in one interpreter, with the floor of an empty `with` block; and what with_stack
costs per Python call.

    python3 bench/bench_python.py [--iters N] [--repeat R]

strobe must be importable (pip install --no-build-isolation ./python, or PYTHONPATH). torch is
measured when it imports in the same interpreter: run it with Debian's /usr/bin/python3 (which
has python3-torch) to get both side by side. Each figure is the best of R runs of N iterations,
in nanoseconds per iteration; "- floor" subtracts the empty `with` block of the same run.
"""
import argparse
import contextlib
import json
import os
import platform
import sys
import time

import strobe
import strobe.profiler as sp


def per_iter(fn, iters, repeat):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn(iters)
        dt = (time.perf_counter_ns() - t0) / iters
        best = dt if best is None or dt < best else best
    return best


def floor_null(n):
    cm = contextlib.nullcontext()
    for _ in range(n):
        with cm:
            pass


def floor_c_off(n):
    # A C context manager that does nothing: strobe's record_function with no profiler running
    # (its __enter__ and __exit__ are C methods that find nothing recording).
    cm = sp.record_function("floor")
    for _ in range(n):
        with cm:
            pass


def strobe_rf(n):
    rf = sp.record_function
    for _ in range(n):
        with rf("bench::range"):
            pass


def strobe_rf_reused(n):
    cm = sp.record_function("bench::range")
    for _ in range(n):
        with cm:
            pass


def empty():
    pass


def calls(n):
    f = empty
    for _ in range(n):
        f()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()
    if a.iters < 1 or a.repeat < 1:
        ap.error("--iters and --repeat must be at least 1")
    n, r = a.iters, a.repeat
    res = {"python": sys.version.split()[0], "executable": sys.executable, "cpu": cpu_model(),
           "iters": n, "repeat": r, "strobe": strobe.__version__}

    res["floor_nullcontext_ns"] = per_iter(floor_null, n, r)
    res["floor_c_with_ns"] = per_iter(floor_c_off, n, r)
    res["strobe_off_ns"] = per_iter(strobe_rf, n, r)
    with sp.profile(activities=[sp.ProfilerActivity.CPU]) as prof:
        res["strobe_on_ns"] = per_iter(strobe_rf, n, r)
        res["strobe_on_reused_ns"] = per_iter(strobe_rf_reused, n, r)
    count = sum(1 for e in prof.events() if e.name == "bench::range")
    if count != 2 * n * r:
        sys.exit("bench_python: strobe recorded %d ranges, expected %d" % (count, 2 * n * r))

    res["calls_off_ns"] = per_iter(calls, n, r)
    with sp.profile(with_stack=True):
        res["calls_with_stack_ns"] = per_iter(calls, n, r)

    try:
        import warnings
        warnings.simplefilter("ignore")
        import torch
        import torch.profiler as tp
    except Exception as e:  # noqa: BLE001 - any failure means no torch here
        res["torch"] = "not measured: %s" % e
    else:
        res["torch"] = torch.__version__

        def torch_rf(k):
            rf = tp.record_function
            for _ in range(k):
                with rf("bench::range"):
                    pass

        with tp.profile(activities=[tp.ProfilerActivity.CPU]):
            res["torch_on_ns"] = per_iter(torch_rf, max(n // 10, 1), r)
        with tp.profile(activities=[tp.ProfilerActivity.CPU], with_stack=True):
            res["torch_calls_with_stack_ns"] = per_iter(calls, max(n // 10, 1), r)

    if a.json:
        print(json.dumps(res, indent=1))
        return
    fl = res["floor_c_with_ns"]
    print("python %s (%s), %s; best of %d x %d iterations, ns per iteration"
          % (res["python"], res["executable"], res["cpu"], r, n))
    rows = [("empty with (contextlib.nullcontext)", res["floor_nullcontext_ns"]),
            ("empty with (C context manager): floor", fl),
            ("strobe record_function, profiler off", res["strobe_off_ns"]),
            ("strobe record_function, profiler on", res["strobe_on_ns"]),
            ("strobe, one record_function reused, on", res["strobe_on_reused_ns"])]
    if "torch_on_ns" in res:
        rows.append(("torch record_function, profiler on", res["torch_on_ns"]))
    for name, v in rows:
        print("  %-42s %9.1f   (- floor %8.1f)" % (name, v, v - fl))
    if "torch_on_ns" in res:
        print("  strobe / torch (minus floor): %.3f" % ((res["strobe_on_ns"] - fl) /
                                                      (res["torch_on_ns"] - fl)))
    else:
        print("  torch: %s" % res["torch"])
    d = res["calls_with_stack_ns"] - res["calls_off_ns"]
    print("  Python call: %.1f ns off, %.1f ns with_stack: %.1f ns per call"
          % (res["calls_off_ns"], res["calls_with_stack_ns"], d))
    if "torch_calls_with_stack_ns" in res:
        print("  torch with_stack: %.1f ns per call (%.1f ns over no profiler)"
              % (res["torch_calls_with_stack_ns"],
                 res["torch_calls_with_stack_ns"] - res["calls_off_ns"]))


if __name__ == "__main__":
    main()

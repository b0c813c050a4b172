#!/usr/bin/env python3
"""bench_torch.py: what recording one tiny torch operator costs, five ways in one run.

    python3 bench/bench_torch.py [--iters N] [--repeat R] [--strobe PATH] [--json]

The loop is `a.add_(1)` on a 1-element tensor, N times (default 100000). Each way's figure is the
best of R runs (default 5), interleaved with the others so that a noisy moment hurts them all
alike, in nanoseconds per operator; "added" is the figure minus the same run's loop with no
profiler:

  none                   the loop alone
  floor                  a do-nothing global RecordFunction callback (the observer's
                         strobe_torch_observer_floor(1)): what torch's callback design costs any
                         observer; "floor+inputs" asks torch for the inputs too (needsInputs)
  torch.profiler         CPU activity, without and with record_shapes
  strobe.profiler        the same, through the torch observer
  strobe record --torch  the loop run again in a child under `strobe record --torch` (PATH: the
                         strobe binary, default build/strobe next to this folder), which prints
                         its own best figure

strobe (the Python package, with its torch observer) and torch must import in this interpreter:
Debian's /usr/bin/python3 with python3-torch, and PYTHONPATH pointing at an installed strobe
package. A way that cannot run here is reported as skipped, with the reason.
"""
import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def loop(a, n):
    add = a.add_
    t0 = time.perf_counter_ns()
    for _ in range(n):
        add(1)
    return (time.perf_counter_ns() - t0) / n


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def inner(iters, repeat):
    """The loop alone, for the child under strobe record: prints its best figure."""
    a = torch.zeros(1)
    best = min(loop(a, iters) for _ in range(repeat))
    print("BEST %.1f" % best)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--strobe", default=os.path.join(HERE, "..", "build", "strobe"))
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.iters < 1 or args.repeat < 1:
        sys.exit("bench_torch: --iters and --repeat must be at least 1")
    torch.set_num_threads(1)
    if args.inner:
        inner(args.iters, args.repeat)
        return

    a = torch.zeros(1)
    ways = {}  # name -> context-manager factory, or None when skipped
    skipped = {}

    try:
        import strobe.profiler as sp
        from strobe import _torch as st
        obs = st.load()
    except Exception as e:  # noqa: BLE001: any failure means the way is skipped, with why
        sp = obs = None
        skipped["floor"] = skipped["floor+inputs"] = "no observer: %s" % e
        skipped["strobe.profiler"] = skipped["strobe.profiler shapes"] = skipped["floor"]

    @contextlib.contextmanager
    def floor(mode):
        rc = obs.strobe_torch_observer_floor(mode)
        if rc != 0:
            raise RuntimeError("strobe_torch_observer_floor(%d) returned %d" % (mode, rc))
        try:
            yield
        finally:
            obs.strobe_torch_observer_floor(0)

    def torch_prof(shapes):
        return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      record_shapes=shapes)

    def strobe_prof(shapes):
        return sp.profile(activities=[sp.ProfilerActivity.CPU], record_shapes=shapes)

    ways["none"] = contextlib.nullcontext
    if obs is not None:
        ways["floor"] = lambda: floor(1)
        ways["floor+inputs"] = lambda: floor(2)
    ways["torch.profiler"] = lambda: torch_prof(False)
    ways["torch.profiler shapes"] = lambda: torch_prof(True)
    if sp is not None:
        ways["strobe.profiler"] = lambda: strobe_prof(False)
        ways["strobe.profiler shapes"] = lambda: strobe_prof(True)

    best = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(args.repeat):
            for name, make in ways.items():
                with make():
                    dt = loop(a, args.iters)
                best[name] = min(best.get(name, dt), dt)

    # strobe record --torch: the loop in a child recorded from its start.
    if os.access(args.strobe, os.X_OK):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "bench_torch.json")
            cmd = [args.strobe, "record", "--torch", "-o", out, "--", sys.executable,
                   os.path.abspath(__file__), "--inner", "--iters", str(args.iters),
                   "--repeat", str(args.repeat)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            figs = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("BEST ")]
            if p.returncode == 0 and figs:
                best["strobe record --torch"] = float(figs[-1])
            else:
                skipped["strobe record --torch"] = ("status %d: %s" % (
                    p.returncode, (p.stderr.strip().splitlines() or ["no output"])[-1]))
    else:
        skipped["strobe record --torch"] = "no strobe binary at %s" % args.strobe

    base = best["none"]
    fig = {"cpu": cpu_model(), "torch": torch.__version__, "python": platform.python_version(),
           "iters": args.iters, "repeat": args.repeat, "ns_per_op": best,
           "added_ns": {k: v - base for k, v in best.items()}, "skipped": skipped}
    if args.json:
        print(json.dumps(fig, indent=1))
        return
    print("%s; torch %s, Python %s; a.add_(1) x %d, best of %d" % (
        fig["cpu"], fig["torch"], fig["python"], args.iters, args.repeat))
    print("%-24s %10s %10s" % ("way", "ns/op", "added"))
    for k, v in best.items():
        print("%-24s %10.1f %10.1f" % (k, v, v - base))
    for k, why in skipped.items():
        print("%-24s skipped: %s" % (k, why))
    if "floor" in best and "strobe.profiler" in best:
        print("strobe.profiler over the floor: %.1f ns (goal: at most 60)" %
              (best["strobe.profiler"] - best["floor"]))
    if "floor+inputs" in best and "strobe.profiler shapes" in best:
        print("strobe.profiler shapes over the floor with inputs: %.1f ns (goal: at most 150)" %
              (best["strobe.profiler shapes"] - best["floor+inputs"]))


if __name__ == "__main__":
    main()

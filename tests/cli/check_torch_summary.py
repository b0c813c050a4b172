#!/usr/bin/python3
"""`strobe summary` against torch's own key_averages(), on a trace torch writes in this test.

Debian's python3-torch (1.13, built without Kineto) profiles with the legacy profiler, whose
export_chrome_trace() writes the legacy format: a bare JSON array, "pid": "CPU functions", no
"cat", integer microseconds. The workload below runs operators, nested record_function ranges,
ProfilerStep#N names (torch groups them as ProfilerStep*) and autograd's backward. (torch merges
an only child of its parent's name into it, and the legacy export writes its events after that:
test_cli_real_traces checks the merge on Kineto traces, which are written before it.) torch's
numbers are its key_averages() (a negative self time, which torch's rounding can give, is
expected as 0): per key, "# of Calls" (count), self_cpu_time_total and
cpu_time_total in microseconds; the test compares `strobe summary -f json` of the exported trace
with them, row by row: the same names, the same counts, and the times within 1 ns per call
(torch's times are the trace's own integers, so they should agree exactly).

usage: check_torch_summary.py STROBE OUT_DIR   (exit 77 when torch cannot be imported)
"""
import json, os, subprocess, sys

try:
    import torch
except Exception as e:  # ImportError, or a broken install
    print("torch cannot be imported (%s): skipped" % e)
    sys.exit(77)

strobe, out_dir = sys.argv[1:3]
os.makedirs(out_dir, exist_ok=True)
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def workload():
    torch.manual_seed(0)
    x = torch.randn(32, 48)
    w = torch.randn(48, 16, requires_grad=True)
    for step in range(3):
        with torch.autograd.profiler.record_function("ProfilerStep#%d" % step):
            with torch.autograd.profiler.record_function("forward"):
                y = torch.nn.functional.relu(x @ w)
                z = torch.cat([y, y * 2], dim=1).sum() / 2.0
            with torch.autograd.profiler.record_function("backward"):
                z.backward()
            with torch.no_grad():
                w -= 0.01 * w.grad
                w.grad.zero_()


with torch.autograd.profiler.profile() as prof:
    workload()
trace = os.path.join(out_dir, "torch_legacy.json")
prof.export_chrome_trace(trace)

# torch's rows: key -> (count, self us, total us).
want = {}
for e in prof.key_averages():
    want[e.key] = (e.count, float(e.self_cpu_time_total), float(e.cpu_time_total))

run = subprocess.run([strobe, "summary", trace, "--format", "json"], capture_output=True,
                     text=True)
if run.returncode != 0:
    fail("strobe summary exited %d: %s" % (run.returncode, run.stderr.strip()))
    sys.exit(1)
got = {}
for r in json.loads(run.stdout)["rows"]:
    if r["Name"] in got:
        fail("row %r twice" % r["Name"])
    got[r["Name"]] = (r["# of Calls"], r["Self CPU"], r["CPU total"])

for key in sorted(set(want) | set(got)):
    if key not in got:
        fail("torch's row %r is missing: %s" % (key, want[key]))
        continue
    if key not in want:
        fail("row %r is not torch's: %s" % (key, got[key]))
        continue
    (wc, ws, wt), (gc, gs, gt) = want[key], got[key]
    if ws < 0:
        # torch's legacy events are rounded to whole microseconds, so a child can end past its
        # parent and torch's row sum go below zero; strobe never shows a negative self time (a
        # row whose sum would be negative shows 0), as issue 16 asks.
        print("note: %r: torch's self time %.3f us is negative; strobe must show 0" % (key, ws))
        ws = 0.0
    tol = 0.001 * wc
    if wc != gc or abs(ws - gs) > tol or abs(wt - gt) > tol:
        fail("%r: torch calls %d self %.3f total %.3f us, strobe %d %.3f %.3f" %
             (key, wc, ws, wt, gc, gs, gt))
if "ProfilerStep*" not in want:
    fail("the workload made no ProfilerStep* row: the test does not test that")
print("%s: %d rows of torch %s's key_averages() compared, %d failures" %
      (trace, len(want), torch.__version__, failures))
sys.exit(1 if failures else 0)

"""tracegen.py: what the CLI checks (check_diff.py, check_steps.py, check_hta.py) share: writing
Kineto-style traces by hand, reading traces back, running strobe, and counting failures.

Imported by scripts in this folder; each puts this folder first on sys.path, so that it is found
whatever the working directory (ctest runs them from the build tree).
"""
import gzip
import json
import subprocess
import sys

failures = 0


def fail(msg):
    """Counts a failure and prints it."""
    global failures
    failures += 1
    print("FAIL ", msg)


def expect(what, got, want):
    """Fails, printing both values, unless got == want."""
    if got != want:
        fail("%s:\n  got  %s\n  want %s" % (what, got, want))
    else:
        print("ok   ", what)


def finish():
    """Exits 1 when anything failed, else 0."""
    if failures:
        print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


def x(cat, name, ts, dur, tid=1, pid=1, **args):
    """A complete ("X") event; args (stream=7, correlation=3, ...) only when given."""
    e = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid}
    if args:
        e["args"] = args
    return e


def write(path, events, rank=None, world=2):
    """Writes {"traceEvents": events} to path (with distributedInfo when rank is given)."""
    doc = {"schemaVersion": 1, "traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def write_cut(path):
    """Writes a trace cut off in the middle of an event (a JSON syntax error)."""
    with open(path, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": }')
    return path


def load(path):
    """A trace (.json or .json.gz) as a dict; a bare array of events becomes its traceEvents."""
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        doc = json.load(f)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def run(strobe, *args):
    """Runs strobe with args: (exit status, stdout, stderr)."""
    p = subprocess.run([strobe, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

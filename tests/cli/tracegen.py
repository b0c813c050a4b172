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


def mapped_ids(what, ev, got):
    """The numbers an overlay (strobe critical-path -o, strobe kernels --sequences -o) gave the
    string pids and tids of the events ev it copied, read from the process_name and thread_name
    events it added for them (cli/idmap.h), as {string: number}; fails unless every event of got
    has a numeric pid and tid, the names are one per string pid and one per (pid, string tid),
    and the numbers are distinct and none of the trace's numeric ids. Decimal strings are their
    value, unnamed."""
    for g in got:
        if not (isinstance(g, dict) and isinstance(g.get("pid"), int) and
                isinstance(g.get("tid"), int)):
            fail("%s: an event without a numeric pid and tid: %r" % (what, g))
            return {}
    strs = {v for e in ev if isinstance(e, dict) for v in (e.get("pid"), e.get("tid"))
            if isinstance(v, str) and not v.isdigit()}
    nums = {v for e in ev if isinstance(e, dict) for v in (e.get("pid"), e.get("tid"))
            if isinstance(v, int)}
    ids = {}
    for g in got:
        if g.get("ph") == "M" and g.get("ts") == 0 and g.get("name") in ("process_name",
                                                                         "thread_name"):
            n = g.get("args", {}).get("name")
            if n in strs:
                ids[n] = g["pid"] if g["name"] == "process_name" else g["tid"]
    expect("%s: a number for each string id" % what, sorted(ids), sorted(strs))
    expect("%s: the numbers are distinct, not the trace's" % what,
           len(set(ids.values())) == len(ids) and not set(ids.values()) & nums, True)

    def num(v):
        return ids.get(v, int(v) if isinstance(v, str) and v.isdigit() else v)

    procs = {num(e["pid"]) for e in ev if isinstance(e, dict) and e.get("pid") in ids}
    threads = {(num(e.get("pid")), num(e["tid"])) for e in ev
               if isinstance(e, dict) and e.get("tid") in ids}
    named = sorted((g["name"], g["pid"], g["tid"]) for g in got
                   if g.get("ph") == "M" and g.get("ts") == 0 and
                   g.get("args", {}).get("name") in strs)
    expect("%s: the names of the mapped ids" % what, named,
           sorted([("process_name", p, 0) for p in procs] +
                  [("thread_name", p, t) for p, t in threads]))
    return ids


def with_ids(e, ids):
    """Event e with its string pid and tid as mapped_ids() numbers them."""
    if not isinstance(e, dict):
        return e
    e = dict(e)
    for k in ("pid", "tid"):
        v = e.get(k)
        if isinstance(v, str):
            e[k] = int(v) if v.isdigit() else ids.get(v, v)
    return e


def run(strobe, *args):
    """Runs strobe with args: (exit status, stdout, stderr)."""
    p = subprocess.run([strobe, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

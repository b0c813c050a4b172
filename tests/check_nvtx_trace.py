#!/usr/bin/env python3
"""Checks the trace nvtx_target wrote (see tests/nvtx_target.c for what it did).

Usage: check_nvtx_trace.py TRACE TIDS_FILE MODE   (MODE: save, stream or optin)

Every expectation below comes from nvtx_target.c's calls, not from strobe's output: names, the
thread each range ran on (the tids nvtx_target printed), nesting, categories and args."""
import json
import sys

trace, tids_file, mode = sys.argv[1], sys.argv[2], sys.argv[3]
tids = {}
for line in open(tids_file):
    k, v = line.split()
    tids[k] = int(v)
events = json.load(open(trace))["traceEvents"]
failed = False


def check(ok, msg):
    global failed
    if not ok:
        print("FAIL:", msg)
        failed = True


thread_names = {e["tid"]: e["args"]["name"] for e in events
                if e.get("ph") == "M" and e.get("name") == "thread_name"}
slices = [e for e in events if e.get("ph") == "X"]
instants = [e for e in events if e.get("ph") == "i"]


def one(name, kind=slices):
    got = [e for e in kind if e.get("name") == name]
    check(len(got) == 1, "%r: 1 event expected, %d found" % (name, len(got)))
    return got[0] if got else None


def end(e):
    return e["ts"] + e["dur"]


def inside(child, parent, what):
    if child is None or parent is None:
        return
    check(child["tid"] == parent["tid"], "%s: on thread %s, its parent on %s" % (
        what, child["tid"], parent["tid"]))
    check(parent["ts"] <= child["ts"] and end(child if child.get("ph") == "X" else
                                              dict(child, dur=0)) <= end(parent),
          "%s: [%s, +%s] not inside [%s, +%s]" % (what, child["ts"], child.get("dur"),
                                                  parent["ts"], parent["dur"]))


def args_are(e, want, what):
    if e is None:
        return
    got = {k: v for k, v in e.get("args", {}).items()
           if k not in ("Ev Idx", "External id", "User External id")}
    check(got == want, "%s: args %r, expected %r" % (what, got, want))


main, worker = tids["main"], tids["worker"]

# Nothing from before the session or after its stop; nothing from a thread not enabled.
for e in slices + instants:
    n = e.get("name", "")
    check(not n.startswith("before") and not n.startswith("after"), "recorded outside: %r" % n)
    check(n != "worker not enabled", "recorded on a thread not enabled (per-thread mode)")

# Thread names: nvtxNameOsThreadA on the thread itself and on another thread.
check(thread_names.get(main) == "nvtx-main", "main thread named %r" % thread_names.get(main))
check(thread_names.get(worker) == "nvtx-worker",
      "worker thread named %r" % thread_names.get(worker))

# Push/pop: on the thread that made them, nested as made, user annotations without args.
outer, inner, tick = one("outer"), one("inner"), one("tick", instants)
for e in (outer, inner):
    if e:
        check(e["tid"] == main, "%s on thread %s, not main" % (e["name"], e["tid"]))
        check(e.get("cat") == "user_annotation", "%s: cat %r" % (e["name"], e.get("cat")))
        args_are(e, {}, e["name"])
inside(inner, outer, "inner in outer")
inside(tick, inner, "tick in inner")
rep = [e for e in slices if e.get("name") == "repeat"]
check(len(rep) == 3 and all(e["tid"] == main for e in rep), "3 'repeat' ranges on main: %d" % len(rep))

# W strings, converted to UTF-8.
wide, wmark = one("wide \u00e9 \u2713"), one("wide mark \u00fc", instants)
inside(wmark, wide, "W mark in W range")

# Ex: color, a named category, every payload type.
args_are(one("ex-colored"), {"category": "io", "color": "#112233", "payload": 42}, "ex-colored")
# Named after its use: the name reaches the range when it is decoded later (at stop). A streamed
# range may have been written before the naming: then it keeps the number.
late = one("late-category")
if mode == "stream" and late and late.get("args", {}).get("category") == 9:
    args_are(late, {"category": 9}, "late-category (streamed before the naming)")
else:
    args_are(late, {"category": "late"}, "late-category (named after its use)")
args_are(one("p-double"), {"payload": 2.5}, "p-double")
args_are(one("p-i64"), {"payload": -9000000000}, "p-i64")
args_are(one("p-u32"), {"payload": 4000000000}, "p-u32")
args_are(one("p-i32"), {"payload": -7}, "p-i32")
args_are(one("p-float"), {"payload": -0.25}, "p-float")

# Domains: a registered string in alpha; a range of beta's named category 3 inside it; a mark.
reg, beta, bmark = one("reg-alpha"), one("beta-range"), one("beta-mark", instants)
args_are(reg, {"domain": "alpha"}, "reg-alpha")
args_are(beta, {"domain": "beta", "category": "compute"}, "beta-range")
args_are(bmark, {"domain": "beta", "payload": -5}, "beta-mark")
inside(beta, reg, "beta-range in reg-alpha")
inside(bmark, beta, "beta-mark in beta-range")

# A reused buffer: each range has the text it had then.
one("dyn 0")
one("dyn 1")

# The worker's range and mark.
wr, wm = one("worker-range"), one("worker-mark", instants)
if wr:
    check(wr["tid"] == worker, "worker-range on %s, not the worker" % wr["tid"])
inside(wm, wr, "worker-mark in worker-range")

# Start/end ranges: on a track of their own ("Backend: NVTX"), never on a program thread;
# async-op spans the worker's range that ended it; ov1 at least 4 ms (two sleeps of 2 ms).
for n in ("async-op", "ov1", "ov2"):
    e = one(n)
    if e is None:
        continue
    check(thread_names.get(e["tid"], "").startswith("Backend: NVTX"),
          "%s on thread %s (%r), not the NVTX start/end track" % (n, e["tid"],
                                                                  thread_names.get(e["tid"])))
    check(e["tid"] not in (main, worker), "%s on a program thread" % n)
a, o1 = one("async-op"), one("ov1")
if a and wr:
    check(a["ts"] <= wr["ts"] and end(a) >= wr["ts"],
          "async-op [%s, %s] does not reach the worker's range at %s" % (a["ts"], end(a), wr["ts"]))
if o1:
    check(o1["dur"] >= 4000, "ov1 lasted %s us, at least 4000 expected" % o1["dur"])

# Every thread's slices nest (no partial overlap).
by_tid = {}
for e in slices:
    by_tid.setdefault(e["tid"], []).append(e)
for tid, evs in by_tid.items():
    evs.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in evs:
        while stack and end(stack[-1]) <= e["ts"]:
            stack.pop()
        check(not stack or end(e) <= end(stack[-1]),
              "thread %s: %r overlaps %r without nesting" % (tid, e["name"],
                                                             stack[-1]["name"] if stack else ""))
        stack.append(e)

if failed:
    sys.exit(1)
print("ok: %s: %d slices, %d instants" % (mode, len(slices), len(instants)))

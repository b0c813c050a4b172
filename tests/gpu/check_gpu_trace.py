#!/usr/bin/env python3
"""Checks a strobe CUDA trace against the manifest of the workload that made it.

    check_gpu_trace.py TRACE MANIFEST   TRACE: .json or .json.gz; MANIFEST: from gpu-workload
    check_gpu_trace.py --self-test      builds a good synthetic trace and bad ones; checks that
                                        the good one passes and each bad one fails the right check

Prints PASS or FAIL per check, with the first few offending events, then a summary line.
Exit status: 0 all checks pass, 1 a check failed, 2 the inputs cannot be read.
Standard library only.

Contents: loading, helpers, the checks (one function each), the runner, the self-test."""
import copy
import gzip
import json
import re
import sys

# ---- Loading ----------------------------------------------------------------------------------


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


# ---- Helpers ----------------------------------------------------------------------------------

LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
DEVICE_PROPERTY_KEYS = ("id", "name", "totalGlobalMem", "computeMajor", "computeMinor",
                        "maxThreadsPerBlock", "maxThreadsPerMultiprocessor", "regsPerBlock",
                        "warpSize", "sharedMemPerBlock", "numSms")
SHOW = 5  # offending events printed per check


def ns(us):
    """A ts or dur (microseconds, three decimals) as integer nanoseconds."""
    return int(round(float(us) * 1000.0))


def brief(e):
    return "%s %r cat=%s pid=%s tid=%s ts=%s dur=%s" % (e.get("ph"), e.get("name"), e.get("cat"),
                                                       e.get("pid"), e.get("tid"), e.get("ts"),
                                                       e.get("dur"))


def kernel_matches(trace_name, kname):
    """True when a trace kernel name is kernel `kname` (extern "C" in the workload: a plain
    name, possibly decorated as "void kname(...)" by a demangler)."""
    return re.search(r"(^|[\s:])" + re.escape(kname) + r"($|[\s(<])", trace_name) is not None


def corr(e):
    v = (e.get("args") or {}).get("correlation")
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


class Trace:
    def __init__(self, doc):
        self.doc = doc
        self.events = doc.get("traceEvents", []) if isinstance(doc, dict) else []
        self.x = [e for e in self.events if isinstance(e, dict) and e.get("ph") == "X"]
        self.by_cat = {}
        for e in self.x:
            self.by_cat.setdefault(e.get("cat"), []).append(e)
        self.launch = {}  # correlation -> launch call (cuda_runtime / cuda_driver)
        self.launch_dups = []
        for c in LAUNCH_CATS:
            for e in self.by_cat.get(c, []):
                k = corr(e)
                if k is None:
                    continue
                if k in self.launch:
                    self.launch_dups.append(e)
                self.launch[k] = e
        self.flows = {"s": {}, "f": {}}
        for e in self.events:
            if isinstance(e, dict) and e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
                try:
                    self.flows[e["ph"]].setdefault(int(e.get("id")), []).append(e)
                except (TypeError, ValueError):
                    pass

    def cat(self, c):
        return self.by_cat.get(c, [])


class Result:
    def __init__(self, name):
        self.name, self.problems, self.notes = name, [], []

    def fail(self, msg):
        self.problems.append(msg)

    def note(self, msg):
        self.notes.append(msg)


# ---- Checks -----------------------------------------------------------------------------------
# Each takes (trace, manifest, result) and calls result.fail() for each problem found.


def check_counts(t, m, r):
    kernels = t.cat("kernel")
    for kname, want in sorted(m["kernels"].items()):
        got = sum(1 for e in kernels if kernel_matches(e.get("name", ""), kname))
        r.note("%s: %d (manifest %d)" % (kname, got, want))
        if got != want:
            r.fail("kernel %s: %d in the trace, %d in the manifest" % (kname, got, want))
    if len(kernels) != m["kernels_total"]:
        others = sorted({e.get("name") for e in kernels
                         if not any(kernel_matches(e.get("name", ""), k) for k in m["kernels"])})
        r.fail("kernels: %d in the trace, %d in the manifest; unexpected names: %s"
               % (len(kernels), m["kernels_total"], others[:SHOW]))
    copies = t.cat("gpu_memcpy")
    r.note("gpu_memcpy: %d (manifest %d)" % (len(copies), m["memcpys_total"]))
    if len(copies) != m["memcpys_total"]:
        r.fail("gpu_memcpy: %d in the trace, %d in the manifest"
               % (len(copies), m["memcpys_total"]))
    for d, want in sorted(m["memcpys"].items()):
        got = sum(1 for e in copies if d in e.get("name", ""))
        if got != want:
            r.fail("gpu_memcpy %s: %d in the trace (by name), %d in the manifest" % (d, got, want))
    sets = t.cat("gpu_memset")
    r.note("gpu_memset: %d (manifest %d)" % (len(sets), m["memsets_total"]))
    if len(sets) != m["memsets_total"]:
        r.fail("gpu_memset: %d in the trace, %d in the manifest" % (len(sets), m["memsets_total"]))


def device_events(t):
    return [e for c in DEVICE_CATS for e in t.cat(c)]


def check_kernel_args(t, m, r):
    for e in t.cat("kernel"):
        a = e.get("args") or {}
        missing = [k for k in ("correlation", "External id", "stream", "device") if k not in a]
        if missing:
            r.fail("kernel without args %s: %s" % (missing, brief(e)))


def check_launch_links(t, m, r):
    """Every device event has a launch call with its correlation, on a CPU thread, and starts no
    earlier than that call."""
    if t.launch_dups:
        r.fail("%d launch calls share a correlation id, e.g. %s"
               % (len(t.launch_dups), brief(t.launch_dups[0])))
    for e in device_events(t):
        c = corr(e)
        if c is None:
            r.fail("no numeric correlation: %s" % brief(e))
            continue
        call = t.launch.get(c)
        if call is None:
            r.fail("no cuda_runtime/cuda_driver event with correlation %d: %s" % (c, brief(e)))
            continue
        if ns(e["ts"]) < ns(call["ts"]):
            r.fail("starts %.3f us before its launch %r (correlation %d): %s"
                   % ((ns(call["ts"]) - ns(e["ts"])) / 1000.0, call.get("name"), c, brief(e)))


def check_flows(t, m, r):
    """Every kernel has an ac2g flow: "s" at its launch call, "f" with "bp":"e" at the kernel.
    The kernels of one graph launch share its correlation id: one "f" each, one "s" or more."""
    for e in t.cat("kernel"):
        c = corr(e)
        if c is None:
            r.fail("no correlation, so no flow: %s" % brief(e))
            continue
        starts, call = t.flows["s"].get(c, []), t.launch.get(c)
        if not starts:
            r.fail("no flow start (ph s, id %d): %s" % (c, brief(e)))
        elif call is not None:
            b, en = ns(call["ts"]), ns(call["ts"]) + ns(call.get("dur", 0))
            for s in starts:
                if (s.get("pid"), s.get("tid")) != (call.get("pid"), call.get("tid")) or \
                        not b <= ns(s["ts"]) <= en:
                    r.fail("flow start id %d is not on its launch call %s: %s"
                           % (c, brief(call), brief(s)))
        here = [f for f in t.flows["f"].get(c, [])
                if (f.get("pid"), f.get("tid"), ns(f["ts"])) == (e.get("pid"), e.get("tid"),
                                                                 ns(e["ts"]))]
        if len(here) != 1:
            r.fail("%d flow ends (ph f, id %d) at the kernel, want 1 (%d with that id in all): %s"
                   % (len(here), c, len(t.flows["f"].get(c, [])), brief(e)))
        elif here[0].get("bp") != "e":
            r.fail("flow end id %d without \"bp\":\"e\": %s" % (c, brief(here[0])))
    # Flow ends that point at no kernel: a viewer draws arrows into nothing.
    at = {(e.get("pid"), e.get("tid"), ns(e["ts"])) for e in device_events(t)}
    stray = [f for fs in t.flows["f"].values() for f in fs
             if (f.get("pid"), f.get("tid"), ns(f["ts"])) not in at]
    if stray:
        r.fail("%d flow ends are at no device event, e.g. %s" % (len(stray), brief(stray[0])))


def enclosing(t, call):
    """CPU ranges on the launch call's thread that contain it."""
    b, en = ns(call["ts"]), ns(call["ts"]) + ns(call.get("dur", 0))
    return [e for e in t.x
            if e is not call and e.get("cat") in ("cpu_op", "user_annotation")
            and (e.get("pid"), e.get("tid")) == (call.get("pid"), call.get("tid"))
            and ns(e["ts"]) <= b and en <= ns(e["ts"]) + ns(e.get("dur", 0))]


def check_external_ids(t, m, r):
    """Every device event's "External id" is that of a CPU range around its launch (every launch
    of the workload runs inside an operator)."""
    for e in device_events(t):
        a = e.get("args") or {}
        ext, call = a.get("External id"), t.launch.get(corr(e))
        if ext is None or call is None:
            if e.get("cat") == "kernel" and ext is None:
                r.fail("kernel without External id: %s" % brief(e))
            continue
        ids = [(o.get("args") or {}).get("External id") for o in enclosing(t, call)]
        if ext not in ids:
            r.fail("External id %s is not that of a range around its launch %r (theirs: %s): %s"
                   % (ext, call.get("name"), ids, brief(e)))


def check_graph(t, m, r):
    """Graph kernels link to cudaGraphLaunch calls; each call has the graph's kernels."""
    per_call = {}
    for e in t.cat("kernel"):
        if not any(kernel_matches(e.get("name", ""), k) for k in m["graph_kernels"]):
            continue
        call = t.launch.get(corr(e))
        if call is None:
            continue  # reported by the launch check
        if not re.match(r"cu(da)?GraphLaunch", call.get("name", "")):
            r.fail("graph kernel linked to %r, not cudaGraphLaunch: %s"
                   % (call.get("name"), brief(e)))
            continue
        per_call.setdefault(corr(e), []).append(e)
    r.note("%d graph launches with kernels (manifest %d), kernels per launch: %s"
           % (len(per_call), m["graph_launches"], sorted({len(v) for v in per_call.values()})))
    if len(per_call) != m["graph_launches"]:
        r.fail("%d cudaGraphLaunch calls have kernels, the manifest launched %d"
               % (len(per_call), m["graph_launches"]))
    for c, ks in sorted(per_call.items()):
        if len(ks) != m["kernels_per_graph"]:
            r.fail("cudaGraphLaunch (correlation %d) has %d kernels, want %d"
                   % (c, len(ks), m["kernels_per_graph"]))


def check_streams_threads(t, m, r):
    kernels = t.cat("kernel")
    streams = sorted({(e.get("pid"), e.get("tid")) for e in kernels}, key=str)
    r.note("kernel streams (pid, tid): %s" % streams)
    want = [s for s in m.get("streams", []) if s]
    got_ids = {(e.get("args") or {}).get("stream") for e in kernels}
    for s in want:
        if s not in got_ids:
            r.fail("stream %s (cudaStreamGetId) has no kernel; kernel streams: %s"
                   % (s, sorted(got_ids, key=str)))
    if len(streams) < 2:
        r.fail("kernels on %d stream(s), want 2 or more" % len(streams))
    for e in kernels:
        if (e.get("args") or {}).get("stream") not in (None, e.get("tid")):
            r.fail("kernel tid %s is not its stream arg: %s" % (e.get("tid"), brief(e)))
            break
    hosts = sorted({(t.launch[corr(e)].get("pid"), t.launch[corr(e)].get("tid"))
                    for e in kernels if corr(e) in t.launch}, key=str)
    r.note("host threads launching kernels (pid, tid): %s" % hosts)
    if len(hosts) < m.get("host_threads", 2):
        r.fail("kernels launched from %d host thread(s), want %d"
               % (len(hosts), m.get("host_threads", 2)))
    for v in list(streams) + list(hosts):
        if any(isinstance(x, str) for x in v):
            r.fail("string pid/tid %s (numbers expected)" % (v,))


def check_device_properties(t, m, r):
    props = t.doc.get("deviceProperties")
    if not isinstance(props, list) or not props:
        r.fail("deviceProperties missing or empty: %r" % (props,))
        return
    for p in props:
        missing = [k for k in DEVICE_PROPERTY_KEYS if k not in p]
        if missing:
            r.fail("device %s lacks %s" % (p.get("id"), missing))
    r.note("devices: %s" % ", ".join("%s %s (sm_%s%s)" % (p.get("id"), p.get("name"),
                                                          p.get("computeMajor"),
                                                          p.get("computeMinor")) for p in props))
    pids = {e.get("pid") for e in device_events(t)}
    ids = {p.get("id") for p in props}
    if not pids <= ids:
        r.fail("device events on pids %s, deviceProperties ids %s" % (sorted(pids, key=str),
                                                                      sorted(ids, key=str)))


def overlaps(evs):
    """Pairs (event, enclosing candidate) of one track that overlap without nesting."""
    out, stack = [], []
    for e in sorted(evs, key=lambda e: (ns(e["ts"]), -ns(e.get("dur", 0)))):
        b = ns(e["ts"])
        en = b + ns(e.get("dur", 0))
        while stack and ns(stack[-1]["ts"]) + ns(stack[-1].get("dur", 0)) <= b:
            stack.pop()
        if stack and en > ns(stack[-1]["ts"]) + ns(stack[-1].get("dur", 0)):
            out.append((e, stack[-1]))
            continue
        stack.append(e)
    return out


def check_nesting(t, m, r):
    """On each pid/tid, X events form a proper tree: two events either nest or do not overlap.
    Kineto puts cuda_sync events on the stream's track, where a sync legitimately overlaps the
    kernel it waits for: those overlaps are reported, not failed (the validators judge them)."""
    tracks = {}
    for e in t.x:
        if "ts" in e:
            tracks.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    bad, sync_bad = [], 0
    for key, evs in sorted(tracks.items(), key=lambda kv: str(kv[0])):
        bad += [(key, a, b) for a, b in overlaps([e for e in evs if e.get("cat") != "cuda_sync"])]
        sync_bad += len(overlaps(evs)) - len(overlaps([e for e in evs
                                                       if e.get("cat") != "cuda_sync"]))
    for key, a, b in bad[:SHOW]:
        r.fail("on %s: %s overlaps %s without nesting" % (key, brief(a), brief(b)))
    if len(bad) > SHOW:
        r.fail("... %d overlaps in all" % len(bad))
    r.note("%d tracks, %d X events" % (len(tracks), len(t.x)))
    if sync_bad:
        r.note("%d more overlaps involve cuda_sync events (not failed)" % sync_bad)


def check_warnings(t, m, r):
    meta = t.doc.get("strobe") or {}
    warnings = meta.get("warnings") or []
    for w in warnings:
        r.note("trace warning: %s" % w)
        if "not traced" in w or ("CUDA" in w and "drop" in w.lower()):
            r.fail("trace warning: %s" % w)
    stats = meta.get("stats") or {}
    for k in ("cuda_dropped_records", "cuda_moved_events", "cuda_outside_window"):
        if k in stats:
            r.note("%s %s" % (k, stats[k]))
    if stats.get("cuda_dropped_records"):
        r.fail("stats.cuda_dropped_records = %s" % stats["cuda_dropped_records"])
    if not t.cat("kernel"):
        r.fail("no kernel events at all: CUDA was not traced")


CHECKS = [
    ("not-traced warnings", check_warnings),
    ("counts", check_counts),
    ("kernel args", check_kernel_args),
    ("launch links", check_launch_links),
    ("flows", check_flows),
    ("external ids", check_external_ids),
    ("graph", check_graph),
    ("streams and threads", check_streams_threads),
    ("deviceProperties", check_device_properties),
    ("nesting", check_nesting),
]


# ---- The runner -------------------------------------------------------------------------------


def run_checks(doc, manifest, out=sys.stdout):
    """Runs every check; returns {check name: [problems]} and prints a report to out."""
    t = Trace(doc)
    failed = {}
    for name, fn in CHECKS:
        r = Result(name)
        try:
            fn(t, manifest, r)
        except (KeyError, TypeError, ValueError, AttributeError) as ex:
            r.fail("check crashed: %s: %s" % (type(ex).__name__, ex))
        if out:
            print("%s  %s" % ("PASS" if not r.problems else "FAIL", name), file=out)
            for n in r.notes:
                print("        %s" % n, file=out)
            for p in r.problems[:SHOW * 4]:
                print("      ! %s" % p, file=out)
            if len(r.problems) > SHOW * 4:
                print("      ! ... %d problems in all" % len(r.problems), file=out)
        if r.problems:
            failed[name] = r.problems
    if out:
        print("gpu trace check: %s (%d of %d checks failed)"
              % ("FAIL" if failed else "PASS", len(failed), len(CHECKS)), file=out)
    return failed


# ---- The self-test ----------------------------------------------------------------------------


def synthetic():
    """A small good trace and its manifest: two host threads, two streams, a graph launched
    twice with two kernels, a copy and a memset."""
    P, T1, T2, S1, S2 = 4242, 4242, 4243, 13, 14
    ev, n = [], [0]

    def x(name, cat, pid, tid, ts, dur, **args):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                   "ts": round(ts, 3), "dur": round(dur, 3), "args": args})
        return ev[-1]

    def gpu(cat, name, stream, ts, dur, call, ext):
        c = call["args"]["correlation"]
        k = x(name, cat, 0, stream, ts, dur, **{"External id": ext, "device": 0, "stream": stream,
                                                 "correlation": c})
        if cat == "kernel":
            if not any(e.get("ph") == "s" and e["id"] == c for e in ev):
                ev.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": c, "pid": call["pid"],
                           "tid": call["tid"], "ts": call["ts"]})
            ev.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": c, "pid": 0,
                       "tid": stream, "ts": k["ts"], "bp": "e"})
        return k

    def call(name, tid, ts, dur, ext):
        n[0] += 1
        return x(name, "cuda_runtime", P, tid, ts, dur, correlation=n[0], **{"External id": ext})

    x("step", "user_annotation", P, T1, 10.0, 100.0, **{"External id": 1})
    x("aten::mm", "cpu_op", P, T1, 11.0, 20.0, **{"External id": 2})
    c = call("cudaLaunchKernel", T1, 12.0, 5.0, 2)
    gpu("kernel", "strobe_k_mm", S1, 20.0, 3.0, c, 2)
    x("aten::copy_", "cpu_op", P, T1, 40.0, 20.0, **{"External id": 3})
    c = call("cudaMemcpyAsync", T1, 41.0, 5.0, 3)
    gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", S1, 45.0, 2.0, c, 3)
    c = call("cudaMemsetAsync", T1, 50.0, 5.0, 3)
    gpu("gpu_memset", "Memset (Device)", S1, 55.0, 1.0, c, 3)
    x("graph_replay", "cpu_op", P, T1, 70.0, 30.0, **{"External id": 4})
    for i in range(2):
        c = call("cudaGraphLaunch", T1, 71.0 + 10 * i, 5.0, 4)
        gpu("kernel", "strobe_k_graph_scale", S1, 80.0 + 10 * i, 1.0, c, 4)
        gpu("kernel", "void strobe_k_graph_add(float*, float const*, int)", S1,
            81.5 + 10 * i, 1.0, c, 4)
    x("aten::add_", "cpu_op", P, T2, 15.0, 10.0, **{"External id": 5})
    c = call("cudaLaunchKernel", T2, 16.0, 3.0, 5)
    gpu("kernel", "strobe_k_axpy", S2, 30.0, 2.0, c, 5)
    ev.append({"ph": "M", "name": "thread_name", "pid": P, "tid": T2, "args": {"name": "w"}})
    doc = {"schemaVersion": 1,
           "deviceProperties": [{k: 1 for k in DEVICE_PROPERTY_KEYS} | {"id": 0, "name": "GPU"}],
           "strobe": {"stats": {"cuda_dropped_records": 0}, "warnings": []},
           "displayTimeUnit": "ms", "baseTimeNanoseconds": 1000, "traceEvents": ev}
    manifest = {"graph_launches": 2, "kernels_per_graph": 2, "streams": [S1, S2],
                "host_threads": 2,
                "graph_kernels": {"strobe_k_graph_scale": 1, "strobe_k_graph_add": 1},
                "kernels": {"strobe_k_mm": 1, "strobe_k_axpy": 1, "strobe_k_graph_scale": 2,
                            "strobe_k_graph_add": 2},
                "kernels_total": 6, "memcpys": {"HtoD": 1}, "memcpys_total": 1,
                "memsets": {"cudaMemsetAsync": 1}, "memsets_total": 1}
    return doc, manifest


def find(doc, cat, name_part):
    return next(e for e in doc["traceEvents"]
                if e.get("cat") == cat and name_part in e.get("name", ""))


def self_test():
    """Each bad trace is the good one with one defect, and must fail exactly the named check."""
    def drop_kernel(d, m):
        k = find(d, "kernel", "strobe_k_mm")
        c = k["args"]["correlation"]
        d["traceEvents"] = [e for e in d["traceEvents"]
                            if e is not k and not (e.get("ph") in "sf" and e.get("id") == c)]

    def no_external_id(d, m):
        del find(d, "kernel", "strobe_k_axpy")["args"]["External id"]

    def wrong_external_id(d, m):
        find(d, "gpu_memcpy", "Memcpy")["args"]["External id"] = 99

    def no_flow_end(d, m):
        c = find(d, "kernel", "strobe_k_mm")["args"]["correlation"]
        d["traceEvents"] = [e for e in d["traceEvents"] if not (e.get("ph") == "f"
                                                                  and e.get("id") == c)]

    def flow_end_no_bp(d, m):
        c = find(d, "kernel", "strobe_k_axpy")["args"]["correlation"]
        next(e for e in d["traceEvents"] if e.get("ph") == "f" and e["id"] == c).pop("bp")

    def kernel_before_launch(d, m):
        k = find(d, "kernel", "strobe_k_axpy")
        k["ts"] = 15.5
        for e in d["traceEvents"]:
            if e.get("ph") == "f" and e["id"] == k["args"]["correlation"]:
                e["ts"] = k["ts"]

    def graph_kernel_wrong_launch(d, m):
        k = find(d, "kernel", "strobe_k_graph_add")
        k["args"]["correlation"] = find(d, "kernel", "strobe_k_mm")["args"]["correlation"]

    def one_stream(d, m):
        for e in d["traceEvents"]:
            if e.get("pid") == 0 and e.get("tid") == 14:
                e["tid"] = 13
                if "args" in e:
                    e["args"]["stream"] = 13

    def one_host_thread(d, m):
        for e in d["traceEvents"]:
            if e.get("tid") == 4243:
                e["tid"] = 4242

    def no_device_properties(d, m):
        d["deviceProperties"] = []

    def overlap(d, m):
        find(d, "cpu_op", "aten::mm")["dur"] = 105.0  # past "step"'s end (110)

    def not_traced(d, m):
        d["strobe"]["warnings"] = ["CUDA activity requested but not traced: no CUPTI; only CPU "
                                   "activity is recorded"]

    def memset_count(d, m):
        m["memsets_total"] = 2

    def dropped(d, m):
        d["strobe"]["stats"]["cuda_dropped_records"] = 3

    def sync_overlaps_kernel(d, m):  # allowed: a stream sync waits for the running kernel
        d["traceEvents"].append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0,
                                 "tid": 13, "ts": 21.0, "dur": 5.0, "args": {"stream": 13}})

    cases = [
        (sync_overlaps_kernel, set()),
        (drop_kernel, {"counts"}), (no_external_id, {"kernel args", "external ids"}),
        (wrong_external_id, {"external ids"}), (no_flow_end, {"flows"}),
        (flow_end_no_bp, {"flows"}), (kernel_before_launch, {"launch links"}),
        (graph_kernel_wrong_launch, {"graph", "flows", "external ids"}),
        (one_stream, {"streams and threads"}),
        (one_host_thread, {"streams and threads", "nesting"}),
        (no_device_properties, {"deviceProperties"}), (overlap, {"nesting"}),
        (not_traced, {"not-traced warnings"}), (memset_count, {"counts"}),
        (dropped, {"not-traced warnings"}),
    ]
    bad = 0
    doc, manifest = synthetic()
    got = run_checks(json.loads(json.dumps(doc)), manifest, out=None)
    if got:
        bad += 1
        print("FAIL  self-test: the good trace fails: %s" % got)
        run_checks(doc, manifest)
    else:
        print("PASS  self-test: the good trace passes every check")
    for fn, want in cases:
        d, m = copy.deepcopy(doc), copy.deepcopy(manifest)
        fn(d, m)
        got = set(run_checks(d, m, out=None))
        if got != want:
            bad += 1
            print("FAIL  self-test %s: failed %s, want %s" % (fn.__name__, sorted(got),
                                                             sorted(want)))
        else:
            print("PASS  self-test %s: fails %s" % (fn.__name__, sorted(got)))
    # A .json.gz trace loads like a .json one.
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "t.json.gz")
        with gzip.open(p, "wt", encoding="utf-8") as f:
            json.dump(doc, f)
        if run_checks(load_json(p), manifest, out=None):
            bad += 1
            print("FAIL  self-test gzip: the good trace, gzipped, fails")
        else:
            print("PASS  self-test gzip")
    print("check_gpu_trace self-test: %s (%d of %d cases failed)"
          % ("FAIL" if bad else "PASS", bad, len(cases) + 2))
    return 1 if bad else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        doc, manifest = load_json(argv[1]), load_json(argv[2])
    except (OSError, ValueError, EOFError) as ex:
        print("check_gpu_trace: cannot read the inputs: %s" % ex, file=sys.stderr)
        return 2
    print("check_gpu_trace: %s against %s" % (argv[1], argv[2]))
    return 1 if run_checks(doc, manifest) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

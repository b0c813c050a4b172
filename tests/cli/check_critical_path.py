#!/usr/bin/env python3
"""Checks `strobe critical-path` (HTA's critical path analysis, see cli/critpath.h) against paths
worked out by hand, and against the expectations HTA's own tests state for its shared trace:

  generated: small traces written here, whose graphs and critical paths are worked out in the
             comments below (edges in the order HTA adds them, distances, networkx's ties), the
             overlaid trace (-o; Kineto's string tids as numbers, named), and bad input (no
             annotation, no instance, unreadable file, bad option values, standard input).
  shared:    SHARED_DIR/traces/hta_critical_path_alexnet.json.gz with HTA's
             tests/test_critical_path_analysis.py expectations (149 path nodes, 148 edges, five
             bound_by groups, the GPU->GPU sync edge between events 1109 and 1161, an overlay
             that marks the path's events and edges), and the ns-resolution and AMD traces that
             HTA's test only runs; every overlay is checked with `strobe check`; TensorBoard's
             resnet50 trace, whose string tids the overlay writes as numbers; the alexnet,
             resnet50 and string-tid overlays through SHARED_DIR/validators/check_all.sh
             --strict where it exists.

usage: check_critical_path.py STROBE OUT_DIR generated
       check_critical_path.py STROBE OUT_DIR shared SHARED_DIR   (exit 77 when it is absent)
"""
import json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, load, mapped_ids, write, x  # noqa: E402
import tracegen  # noqa: E402

strobe, out_dir, mode = sys.argv[1:4]
os.makedirs(out_dir, exist_ok=True)


def run(args, expect_rc=0):
    p = subprocess.run([strobe] + args, capture_output=True, text=True)
    if p.returncode != expect_rc:
        fail("%s: exit %d, expected %d; stderr: %s" % (args, p.returncode, expect_rc, p.stderr))
    return p


def cp(path, *extra):
    p = run(["critical-path", "-q", "-f", "json"] + list(extra) + [path])
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("critical-path %s: output is not JSON (%s): %r" % (path, e, p.stdout[:200]))
        return {"summary": [], "path": [], "graph": [{}]}


def summary(doc):
    return {r["bound_by"]: r["duration"] for r in doc["summary"]}


def percents(doc):
    return {r["bound_by"]: round(r["percent"], 6) for r in doc["summary"]}


def path_rows(doc):
    return [(r["ts"], r["duration"], r["type"], r["name"], r["bound_by"]) for r in doc["path"]]


def checked_overlay(path):
    """The overlaid trace, after `strobe check` found no problem in it."""
    p = subprocess.run([strobe, "check", "-q", path], capture_output=True, text=True)
    expect("strobe check %s: exit" % os.path.basename(path), (p.returncode, p.stderr), (0, ""))
    return load(path)["traceEvents"]


def flows(events):
    """The critical-path flows: (ph, cat, pid, tid, ts, critical) in file order."""
    return [(e["ph"], e["cat"], e["pid"], e["tid"], e["ts"], e["args"]["critical"])
            for e in events if e.get("name") == "critical_path"]


OP, DEP, LAUNCH, KK, SYNC = ("critical_path_operator", "critical_path_dependency",
                             "critical_path_kernel_launch_delay",
                             "critical_path_kernel_kernel_delay", "critical_path_sync_dependency")


def launches_and_sync():
    """Two CPU operators launching a kernel each on stream 7, a kernel longer than the CPU
    work, a cudaDeviceSynchronize and its Context Sync. Times in us; thread (1, 1):

      ProfilerStep#1 [0, 1000)            the window (annotation ProfilerStep, instance 0)
        aten::mm [10, 60)  > cudaLaunchKernel l1 [20, 30) corr 1 -> gemm k1 [40, 240) stream 7
        aten::add [70, 100) > cudaLaunchKernel l2 [80, 90) corr 2 -> add k2 [250, 300) stream 7
        cudaDeviceSynchronize [110, 310) corr 3 -> Context Sync [300, 305) (stream 4294967295)

    Queue on stream 7: l1 +1 (1), k1 -1 (0), l2 +1 (1), k2 -1 (0).
    Edges, in HTA's order (call stack, then kernels by start, syncs by end):
      1 mm.s->l1.s op 10   2 l1.s->l1.e op 10   3 l1.e->mm.e op 30   4 mm.e->add.s dep 0
      5 add.s->l2.s op 10  6 l2.s->l2.e op 10   7 l2.e->add.e op 10  8 add.e->sync.s dep 0
      9 sync.s->sync.e op 0 (a blocking call: zero weight)
      10 k1.s->k1.e op 200  11 l1.s->k1.s launch 20 (queue 1 at the launch, 0 at the kernel,
         no kernel before)
      12 k2.s->k2.e op 50   13 k1.e->k2.s kernel-kernel 10 (k1 ended after l2 started)
      14 k2.e->sync.e sync 0 (Context Sync: the last kernel of every stream)
    Distances: l1.s 10, k1.s 30, k1.e 230, k2.s 240, k2.e 290, sync.e 290 (from k2.e; the CPU
    side reaches only 80). The first node of the best distance in topological order is k2.e,
    so the path is mm.s l1.s k1.s k1.e k2.s k2.e: 6 nodes, 5 edges, length 290:
      mm 10 cpu_bound, launch 20, gemm 200 compute, kernel-kernel 10, add 50 compute.
    14 nodes have an edge (the Context Sync's two nodes have none); 4 events are on the path.
    --zero-weight-launch-edges adds l2.s->k2.s (launch, 0): 15 edges, the same path.
    The overlay (only critical events, HTA's default) marks mm, l1, k1, k2; of the path's
    edges only the launch is drawn: s at l1's start (20), f at k1's start (40)."""
    ev = [x("user_annotation", "ProfilerStep#1", 0, 1000),
          x("cpu_op", "aten::mm", 10, 50),
          x("cuda_runtime", "cudaLaunchKernel", 20, 10, correlation=1),
          x("kernel", "gemm", 40, 200, pid=0, tid=7, stream=7, correlation=1, device=0),
          x("cpu_op", "aten::add", 70, 30),
          x("cuda_runtime", "cudaLaunchKernel", 80, 10, correlation=2),
          x("kernel", "add", 250, 50, pid=0, tid=7, stream=7, correlation=2, device=0),
          x("cuda_runtime", "cudaDeviceSynchronize", 110, 200, correlation=3),
          x("cuda_sync", "Context Sync", 300, 5, pid=0, tid=7, stream=4294967295,
            correlation=3, device=0)]
    path = write(os.path.join(out_dir, "launches.json"), ev)
    doc = cp(path)
    expect("launches: graph", doc["graph"][0],
           {"length": 290, "path_nodes": 6, "path_edges": 5, "critical_events": 4,
            "graph_nodes": 14, "graph_edges": 14, "window_start": 0, "window_end": 1000})
    expect("launches: path", path_rows(doc),
           [(10, 10, OP, "aten::mm", "cpu_bound"),
            (20, 20, LAUNCH, "", "gpu_kernel_launch_overhead"),
            (40, 200, OP, "gemm", "gpu_compute_bound"),
            (240, 10, KK, "gemm", "gpu_kernel_kernel_overhead"),
            (250, 50, OP, "add", "gpu_compute_bound")])
    expect("launches: summary", summary(doc),
           {"cpu_bound": 10, "gpu_compute_bound": 250, "gpu_kernel_kernel_overhead": 10,
            "gpu_kernel_launch_overhead": 20})
    expect("launches: percent", percents(doc),
           {"cpu_bound": round(1000 / 290, 6), "gpu_compute_bound": round(25000 / 290, 6),
            "gpu_kernel_kernel_overhead": round(1000 / 290, 6),
            "gpu_kernel_launch_overhead": round(2000 / 290, 6)})
    z = cp(path, "--zero-weight-launch-edges")
    expect("launches --zero-weight-launch-edges: graph edges, path",
           (z["graph"][0]["graph_edges"], path_rows(z)), (15, path_rows(doc)))
    # CSV and the table carry the same numbers.
    p = run(["critical-path", "-q", "-f", "csv", path])
    expect("launches: csv has the graph row", "290,6,5,4,14,14,0,1000" in p.stdout, True)
    out = os.path.join(out_dir, "launches_overlay.json")
    run(["critical-path", "-q", "-o", out, path])
    events = checked_overlay(out)
    crit = sorted(e["name"] for e in events if e.get("ph") == "X" and
                  e.get("args", {}).get("critical") == 1)
    expect("launches overlay: critical events", crit,
           sorted(["aten::mm", "cudaLaunchKernel", "gemm", "add"]))
    expect("launches overlay: other complete events left out but the annotation",
           sorted(e["name"] for e in events if e.get("ph") == "X"),
           sorted(["ProfilerStep#1", "aten::mm", "cudaLaunchKernel", "gemm", "add"]))
    expect("launches overlay: flows", flows(events),
           [("s", LAUNCH, 1, 1, 20, True), ("f", LAUNCH, 0, 7, 40, True)])
    out = os.path.join(out_dir, "launches_overlay.json.gz")
    run(["critical-path", "-q", "-o", out, path])
    expect("launches overlay, gzip'd: the same flows", flows(checked_overlay(out)),
           [("s", LAUNCH, 1, 1, 20, True), ("f", LAUNCH, 0, 7, 40, True)])
    out = os.path.join(out_dir, "launches_all.json")
    run(["critical-path", "-q", "--all-events", "-o", out, path])
    events = checked_overlay(out)
    expect("launches overlay --all-events: every event kept",
           len([e for e in events if e.get("ph") == "X"]), 9)


def string_tids_trace():
    """launches_and_sync()'s trace with Kineto's string tid on the GPU ("stream 7") and ac2g
    flows from each launch to its kernel: the same graph and path."""
    ev = [x("user_annotation", "ProfilerStep#1", 0, 1000),
          x("cpu_op", "aten::mm", 10, 50),
          x("cuda_runtime", "cudaLaunchKernel", 20, 10, correlation=1),
          x("kernel", "gemm", 40, 200, pid=0, tid="stream 7", stream=7, correlation=1, device=0),
          x("cpu_op", "aten::add", 70, 30),
          x("cuda_runtime", "cudaLaunchKernel", 80, 10, correlation=2),
          x("kernel", "add", 250, 50, pid=0, tid="stream 7", stream=7, correlation=2, device=0),
          x("cuda_runtime", "cudaDeviceSynchronize", 110, 200, correlation=3),
          x("cuda_sync", "Context Sync", 300, 5, pid=0, tid="stream 7", stream=4294967295,
            correlation=3, device=0)]
    for c, s, f in ((1, 20, 40), (2, 80, 250)):
        ev.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": c, "pid": 1, "tid": 1, "ts": s})
        ev.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": c, "pid": 0,
                   "tid": "stream 7", "ts": f})
    return ev


def string_tids():
    """The overlay of string_tids_trace(): numbers for "stream 7", named by a thread_name event;
    the path's flow and the trace's ac2g flows (kept: their starts lie in the annotation, their
    ends in the kernels) end on the kernels' thread."""
    ev = string_tids_trace()
    path = write(os.path.join(out_dir, "string_tids.json"), ev)
    doc = cp(path)
    expect("string tids: graph, path", (doc["graph"][0], path_rows(doc)),
           ({"length": 290, "path_nodes": 6, "path_edges": 5, "critical_events": 4,
             "graph_nodes": 14, "graph_edges": 14, "window_start": 0, "window_end": 1000},
            [(10, 10, OP, "aten::mm", "cpu_bound"),
             (20, 20, LAUNCH, "", "gpu_kernel_launch_overhead"),
             (40, 200, OP, "gemm", "gpu_compute_bound"),
             (240, 10, KK, "gemm", "gpu_kernel_kernel_overhead"),
             (250, 50, OP, "add", "gpu_compute_bound")]))
    for extra in ([], ["--all-events", "--show-all-edges"]):
        what = " ".join(["string tids overlay"] + extra)
        out = os.path.join(out_dir, "string_tids_overlay%s.json" % ("_all" if extra else ""))
        run(["critical-path", "-q", "-o", out] + extra + [path])
        events = checked_overlay(out)
        ids = mapped_ids(what, ev, events)
        t = ids.get("stream 7")
        expect("%s: stream 7 named" % what,
               [(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and
                e.get("name") == "thread_name" and e["args"]["name"] == "stream 7"], [(0, t)])
        expect("%s: kernels on the mapped thread" % what,
               sorted((e["name"], e["pid"], e["tid"]) for e in events
                      if e.get("cat") == "kernel"), [("add", 0, t), ("gemm", 0, t)])
        if not extra:
            expect("%s: the path's flow" % what, flows(events),
                   [("s", LAUNCH, 1, 1, 20, True), ("f", LAUNCH, 0, t, 40, True)])
            expect("%s: the ac2g flows" % what,
                   [(e["ph"], e["pid"], e["tid"], e["ts"]) for e in events
                    if e.get("cat") == "ac2g"],
                   [("s", 1, 1, 20), ("f", 0, t, 40), ("s", 1, 1, 80), ("f", 0, t, 250)])
    return [os.path.join(out_dir, "string_tids_overlay.json")]


def cpu_only():
    """No GPU event: the path is the CPU thread's. ProfilerStep#1 [0, 100) on thread (1, 1):
      A [0, 40) > B [10, 30);  C [50, 90)
    Edges: A.s->B.s op 10 (A), B.s->B.e op 20 (B), B.e->A.e op 10 (A), A.e->C.s dep 0,
    C.s->C.e op 40 (C). The path is all six nodes: length 80, cpu_bound 80, and the dependency
    makes a "" group of 0 (0 %)."""
    ev = [x("user_annotation", "ProfilerStep#1", 0, 100),
          x("cpu_op", "A", 0, 40), x("cpu_op", "B", 10, 20), x("cpu_op", "C", 50, 40)]
    path = write(os.path.join(out_dir, "cpu.json"), ev)
    doc = cp(path)
    expect("cpu only: graph", doc["graph"][0],
           {"length": 80, "path_nodes": 6, "path_edges": 5, "critical_events": 3,
            "graph_nodes": 6, "graph_edges": 5, "window_start": 0, "window_end": 100})
    expect("cpu only: path", path_rows(doc),
           [(0, 10, OP, "A", "cpu_bound"), (10, 20, OP, "B", "cpu_bound"),
            (30, 10, OP, "A", "cpu_bound"), (40, 0, DEP, "", ""), (50, 40, OP, "C", "cpu_bound")])
    expect("cpu only: summary", (summary(doc), percents(doc)),
           ({"": 0, "cpu_bound": 80}, {"": 0.0, "cpu_bound": 100.0}))
    out = os.path.join(out_dir, "cpu_overlay.json")
    run(["critical-path", "-q", "-o", out, path])
    expect("cpu only overlay: the dependency's flow (s at A's end less 1 ns, f at C's start)",
           flows(checked_overlay(out)), [("s", DEP, 1, 1, 39.999, True),
                                         ("f", DEP, 1, 1, 50, True)])


def stream_sync():
    """cudaStreamSynchronize waits for its stream only. Thread (1, 1), all in aten::copy_:
      aten::copy_ [0, 500)
        l1 cudaLaunchKernel [10, 20) corr 1 -> k1 [30, 130) stream 7
        l2 cudaLaunchKernel [25, 35) corr 2 -> k2 [40, 400) stream 8
        ss cudaStreamSynchronize [40, 150) corr 3 -> Stream Sync [140, 145) stream 7
    Window: --annotation aten::copy_ (its instance 0) [0, 500].
    Call stack: op.s->l1.s 10, l1.s->l1.e 10, l1.e->l2.s 5 (attributed to copy_, the parent),
    l2.s->l2.e 10, l2.e->ss.s 5, ss.s->ss.e 0 (blocking), ss.e->op.e 350.
    Kernels: k1 100, launch l1.s->k1.s 20; k2 360, launch l2.s->k2.s 15; the Stream Sync of
    stream 7: k1.e->ss.e sync 0 (k2, on stream 8, is not waited for).
    ss.e = max(ss.s 40, k1.e 130) = 130, op.e = 480 > k2.e 400. Path op.s l1.s k1.s k1.e ss.e
    op.e, length 480: copy_ 10 + 350 cpu_bound, launch 20, k1 100 compute, sync 0 ("").
    A path row's ts is its first node's time: the last edge starts at ss's end, 150 (its
    distance is 130). 12 nodes have an edge (the Stream Sync's have none), 12 edges.
    Overlay: the launch (s l1 20, f k1 30) and the sync (s at k1's end less 1 us: 129, f at
    ss's end less 1 ns: 149.999)."""
    ev = [x("cpu_op", "aten::copy_", 0, 500),
          x("cuda_runtime", "cudaLaunchKernel", 10, 10, correlation=1),
          x("kernel", "k1", 30, 100, pid=0, tid=7, stream=7, correlation=1, device=0),
          x("cuda_runtime", "cudaLaunchKernel", 25, 10, correlation=2),
          x("kernel", "k2", 40, 360, pid=0, tid=8, stream=8, correlation=2, device=0),
          x("cuda_runtime", "cudaStreamSynchronize", 40, 110, correlation=3),
          x("cuda_sync", "Stream Sync", 140, 5, pid=0, tid=7, stream=7, correlation=3, device=0)]
    path = write(os.path.join(out_dir, "sync.json"), ev)
    doc = cp(path, "--annotation", "aten::copy_")
    expect("stream sync: graph", doc["graph"][0],
           {"length": 480, "path_nodes": 6, "path_edges": 5, "critical_events": 4,
            "graph_nodes": 12, "graph_edges": 12, "window_start": 0, "window_end": 500})
    expect("stream sync: path", path_rows(doc),
           [(0, 10, OP, "aten::copy_", "cpu_bound"),
            (10, 20, LAUNCH, "", "gpu_kernel_launch_overhead"),
            (30, 100, OP, "k1", "gpu_compute_bound"), (130, 0, SYNC, "", ""),
            (150, 350, OP, "aten::copy_", "cpu_bound")])
    expect("stream sync: summary", summary(doc),
           {"": 0, "cpu_bound": 360, "gpu_compute_bound": 100, "gpu_kernel_launch_overhead": 20})
    out = os.path.join(out_dir, "sync_overlay.json")
    run(["critical-path", "-q", "-o", out, "--annotation", "aten::copy_", path])
    expect("stream sync overlay: flows", flows(checked_overlay(out)),
           [("s", LAUNCH, 1, 1, 10, True), ("f", LAUNCH, 0, 7, 30, True),
            ("s", SYNC, 0, 7, 129, True), ("f", SYNC, 1, 1, 149.999, True)])


def bad_input():
    """Bad input: a message on stderr and exit 2, never a crash."""
    path = os.path.join(out_dir, "launches.json")

    def refused(what, args, want):
        p = run(["critical-path", "-q"] + args, 2)
        expect("refused: %s" % what, (p.stdout, want in p.stderr), ("", True))
        if want not in p.stderr:
            print("      stderr: %r" % p.stderr)

    refused("no such annotation", ["--annotation", "nope", path],
            "could not find annotation 'nope'")
    refused("no such instance", ["--instance", "3", path], "there is no instance 3")
    refused("instance not a number", ["--instance", "x", path], "--instance")
    refused("instance range backwards", ["--instance", "2:1", path], "--instance")
    refused("no such rank", ["--rank", "5", path], "no rank 5")
    refused("missing file", [os.path.join(out_dir, "missing.json")], "missing.json")
    refused("no trace", [], "give a trace")
    refused("bad format", ["-f", "xml", path], "--format")
    cut = os.path.join(out_dir, "cut.json")
    with open(cut, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": }')
    refused("malformed trace", [cut], "cut.json")
    p = subprocess.run([strobe, "critical-path", "-q", "-"], input=open(path).read(),
                       capture_output=True, text=True)
    expect("refused: standard input", (p.returncode, "standard input" in p.stderr), (2, True))
    refused("unwritable output", ["-o", os.path.join(out_dir, "no", "such", "dir.json"), path],
            "dir.json")
    refused("output is the trace", ["-o", path, path], "is the trace being read")
    expect("the trace is left as it was", load(path)["traceEvents"][1]["name"], "aten::mm")
    # No event in the window (an annotation that holds nothing): no path, said.
    empty = write(os.path.join(out_dir, "empty.json"),
                  [x("user_annotation", "ProfilerStep#1", 0, 10), x("cpu_op", "late", 50, 5)])
    refused("nothing in the window", [empty], "no edge in the window")


def data_load():
    """HTA's data_load_events (see cli/critpath.h). ProfilerStep#1 [0, 1000) on thread (1, 1):
      DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" (user_annotation)
           [10, 110) > aten::copy_ [20, 50);  aten::mm [120, 170);  load_batch<int> [180, 200)
    Without patterns DL, a user_annotation, has no node: copy_ 30, dep 0, mm 50, dep 0,
    load_batch 20: length 100, all cpu_bound (and "" 0).
    --data-load-events DataLoader,batch<int>: DL's name holds "DataLoader", so it has nodes
    ("batch<int>" is in load_batch<int>'s name, a cpu_op with nodes anyway):
      DL.s->copy.s op 10 (DL), copy 30 (copy_), copy.e->DL.e op 60 (DL: end to end),
      DL.e->mm.s dep 0, mm 50, mm.e->lb.s dep 0, lb 20: length 170.
    bound_by searches the shortened names: DL's is
    "enumerate#_SingleProcessDataLoaderIter.__next__", which holds DataLoader: data_loading
    70; load_batch<int>'s is "load_batch", which holds no "batch<int>": cpu_bound 100.
    --data-load-events DataLoader --data-load-events load_batch: load_batch too is
    data_loading: data_loading 90, cpu_bound 80."""
    dl = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    ev = [x("user_annotation", "ProfilerStep#1", 0, 1000),
          x("user_annotation", dl, 10, 100), x("cpu_op", "aten::copy_", 20, 30),
          x("cpu_op", "aten::mm", 120, 50), x("cpu_op", "load_batch<int>", 180, 20)]
    path = write(os.path.join(out_dir, "data_load.json"), ev)
    doc = cp(path)
    expect("data load, no patterns: length, summary", (doc["graph"][0]["length"], summary(doc)),
           (100, {"": 0, "cpu_bound": 100}))
    doc = cp(path, "--data-load-events", "DataLoader,batch<int>")
    expect("data load: graph", doc["graph"][0],
           {"length": 170, "path_nodes": 8, "path_edges": 7, "critical_events": 4,
            "graph_nodes": 8, "graph_edges": 7, "window_start": 0, "window_end": 1000})
    expect("data load: path", path_rows(doc),
           [(10, 10, OP, dl, "data_loading"), (20, 30, OP, "aten::copy_", "cpu_bound"),
            (50, 60, OP, dl, "data_loading"), (110, 0, DEP, "", ""),
            (120, 50, OP, "aten::mm", "cpu_bound"), (170, 0, DEP, "", ""),
            (180, 20, OP, "load_batch<int>", "cpu_bound")])
    expect("data load: summary", summary(doc), {"": 0, "cpu_bound": 100, "data_loading": 70})
    doc = cp(path, "--data-load-events", "DataLoader", "--data-load-events", "load_batch")
    expect("data load, two options: summary", summary(doc),
           {"": 0, "cpu_bound": 80, "data_loading": 90})
    for bad in ["", "a,,b", "("]:
        p = run(["critical-path", "-q", "--data-load-events", bad, path], expect_rc=2)
        expect("--data-load-events %r: said" % bad, "--data-load-events" in p.stderr, True)


def generated():
    launches_and_sync()
    string_tids()
    cpu_only()
    data_load()
    stream_sync()
    bad_input()


def shared(shared_dir):
    tdir = os.path.join(shared_dir, "traces")
    if not os.path.isdir(tdir):
        print("no %s: skipped" % tdir)
        sys.exit(77)
    alexnet = os.path.join(tdir, "hta_critical_path_alexnet.json.gz")
    # HTA's test_critical_path_analysis.py runs with CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1.
    args = ["--annotation", "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
            "--instance", "1", "--zero-weight-launch-edges"]
    doc = cp(alexnet, *args)
    g = doc["graph"][0]
    expect("alexnet: path nodes, edges (HTA's test: 149; one edge fewer)",
           (g["path_nodes"], g["path_edges"], len(doc["path"])), (149, 148, 148))
    expect("alexnet: five bound_by groups (HTA's summary)", len(doc["summary"]), 5)
    expect("alexnet: every path edge has a bound_by",
           all(isinstance(r["bound_by"], str) for r in doc["path"]), True)
    expect("alexnet: the summary adds up to the path's edges",
           sum(r["duration"] for r in doc["summary"]), sum(r["duration"] for r in doc["path"]))
    # The overlay with every edge: the GPU->GPU sync edge from the end of kernel 1109 (stream
    # 20) to the start of kernel 1161 (stream 7), through cudaEventRecord/cudaStreamWaitEvent.
    out = os.path.join(out_dir, "alexnet_all.json")
    run(["critical-path", "-q", "--all-events", "--show-all-edges", "-o", out] + args + [alexnet])
    raw = load(alexnet)["traceEvents"]
    events = load(out)["traceEvents"]
    k1, k2 = raw[1109], raw[1161]
    expect("alexnet: events 1109, 1161 are HTA's test's kernels",
           (k1["name"].startswith("void fft2d_c2r_32x32"), k2["args"]["correlation"]),
           (True, 5629))
    fl = [e for e in events if e.get("name") == "critical_path"]
    pairs = {}
    for e in fl:
        pairs.setdefault(e["id"], []).append(e)
    want = (("s", 0, 20, k1["ts"] + k1["dur"] - 1), ("f", 0, 7, k2["ts"]))
    found = [p for p in pairs.values() if p[0]["cat"] == SYNC and
             tuple((e["ph"], e["pid"], e["tid"], round(e["ts"], 3)) for e in p) == want]
    expect("alexnet: sync edge 1109 -> 1161, weight 0", [p[0]["args"]["weight"] for p in found],
           [0])
    expect("alexnet overlay: marked critical events = the path's events",
           sum(e.get("args", {}).get("critical", 0) for e in events if e.get("ph") == "X"),
           g["critical_events"])
    expect("alexnet overlay: critical flows = the path's edges (HTA's test: nodes - 1)",
           sum(1 for e in fl if e["ph"] == "f" and e["args"]["critical"]), 148)
    # HTA's default overlay (only critical events): valid for strobe check.
    out = os.path.join(out_dir, "alexnet_overlay.json")
    run(["critical-path", "-q", "-o", out] + args + [alexnet])
    events = checked_overlay(out)
    expect("alexnet overlay: only critical complete events, but annotations",
           all(e.get("args", {}).get("critical") == 1 for e in events
               if e.get("ph") == "X" and e.get("cat") not in ("user_annotation",
                                                              "python_function")), True)
    # HTA's test_ns_resolution_trace and test_amd_trace: the analysis succeeds.
    for name in ("hta_ns_resolution_rank0.pt.trace.json.gz", "hta_amd_mi250_rocm6_2.json.gz"):
        t = os.path.join(tdir, name)
        doc = cp(t, "--annotation", "ProfilerStep", "--instance", "1")
        expect("%s: a path" % name, doc["graph"][0].get("path_nodes", 0) >= 2, True)
        out = os.path.join(out_dir, "overlay_" + name.replace(".gz", ""))
        run(["critical-path", "-q", "--instance", "1", "-o", out, t])
        checked_overlay(out)
    # TensorBoard's resnet50 trace: string tids ("stream 7", "25738") and the pid "Traces",
    # numbers in the overlay, "stream 7" named.
    validate = [os.path.join(out_dir, "alexnet_overlay.json")] + string_tids()
    resnet = os.path.join(tdir, "kineto_tb_resnet50_nw0.pt.trace.json.gz")
    if os.path.exists(resnet):
        out = os.path.join(out_dir, "resnet50_overlay.json")
        run(["critical-path", "-q", "-o", out, resnet])
        events = checked_overlay(out)
        expect("resnet50 overlay: numeric pid and tid", [e for e in events if not (
            isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int))], [])
        expect("resnet50 overlay: stream 7 named on pid 0",
               [e["pid"] for e in events if e.get("ph") == "M" and
                e.get("name") == "thread_name" and e["args"]["name"] == "stream 7"], [0])
        validate.append(out)
    # The overlays through the independent checkers.
    check = os.path.join(shared_dir, "validators", "check_all.sh")
    if not os.path.exists(check):
        print("no %s: the overlays are not validated" % check)
        return
    for out in validate:
        p = subprocess.run([check, out, "--strict"], capture_output=True, text=True)
        if p.returncode != 0:
            fail("check_all.sh --strict %s: exit %d\n%s" % (out, p.returncode, p.stdout[-3000:]))
        else:
            print("ok    check_all.sh --strict", os.path.basename(out))


if mode == "generated":
    generated()
elif mode == "shared":
    shared(sys.argv[4])
else:
    sys.exit("usage: check_critical_path.py STROBE OUT_DIR generated|shared [SHARED_DIR]")
tracegen.finish()

#!/usr/bin/env python3
"""`strobe summary` against the TensorBoard plugin's operator view on the shared resnet50 trace
(kineto_tb_resnet50_nw0.pt.trace.json.gz, the plugin's own sample, 2021 schema).

The operator view's numbers are worked out here from the JSON, by the plugin's definitions
(pytorch/kineto tb_plugin: event_parser.py, op_tree.py, node.py, op_agg.py), written anew:
  - host nodes are the Operator events (ProfilerStep#N among them) of each thread; runtimes
    (Runtime) hang on the operator whose "external id" they carry (the first such operator of
    the thread's list), or on the thread's root when that id is 0; a device event (Kernel,
    Memcpy, Memset) hangs on the runtime with its "correlation";
  - per thread, by start and then longer first, a node is the child of the innermost one that
    contains it whole (the plugin drops a node that overlaps without nesting; the sample has
    none, which is checked);
  - an Operator whose only child is an Operator of its name takes that child's children and
    runtimes in its place (remove_dup_nodes);
  - an operator's host self duration is its duration less its children's and its runtimes';
    its self device duration is its runtimes' device work, its device duration that plus its
    children's device duration;
  - the view lists the Operator nodes but ProfilerStep#N, Optimizer.*, enumerate(DataLoader)#*
    .__next__ and DataParallel.forward, grouped by name: calls and the four durations summed.
strobe summary's row of the same name must give the same calls, Self CPU (host self), CPU total
(host total), Self CUDA and CUDA total, within 1 ns per call.

usage: check_tb_operator_view.py STROBE SHARED_DIR   (exit 77 when the trace is absent)
"""
import collections, decimal, gzip, json, os, subprocess, sys

strobe, shared = sys.argv[1:3]
path = os.path.join(shared, "traces", "kineto_tb_resnet50_nw0.pt.trace.json.gz")
if not os.path.exists(path):
    print("no %s: skipped" % path)
    sys.exit(77)
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def ns(v):
    return int((decimal.Decimal(v) * 1000).to_integral_value())


with gzip.open(path, "rt") as f:
    events = json.load(f, parse_float=decimal.Decimal)["traceEvents"]


def arg(e, *names):
    a = e.get("args") or {}
    for n in names:
        if n in a:
            return a[n]
    return None


class Node:
    def __init__(self, e):
        self.name = e["name"]
        self.start = ns(e["ts"])
        self.end = self.start + ns(e["dur"])
        self.ext = arg(e, "External id", "external id")
        self.children, self.runtimes = [], []
        self.device = self.self_device = 0
        self.self_host = 0


ops_by_tid = collections.defaultdict(list)
runtime_by_corr, runtimes_by_ext = {}, collections.defaultdict(list)
device_by_corr = collections.defaultdict(int)
zero_rt = collections.defaultdict(list)
for e in events:
    if e.get("ph") != "X":
        continue
    cat = e.get("cat")
    if cat in ("Kernel", "Memcpy", "Memset"):
        device_by_corr[arg(e, "correlation")] += ns(e["dur"])
    elif cat == "Runtime":
        rt = Node(e)
        rt.corr = arg(e, "correlation")
        runtime_by_corr[rt.corr] = rt
        (runtimes_by_ext[rt.ext] if rt.ext != 0 else zero_rt[e["tid"]]).append(rt)
    elif cat == "Operator":
        ops_by_tid[e["tid"]].append(Node(e))
for rt in runtime_by_corr.values():
    rt.device = device_by_corr.get(rt.corr, 0)
for ops in ops_by_tid.values():
    for op in ops:
        op.runtimes = runtimes_by_ext.pop(op.ext, [])

view = collections.defaultdict(lambda: [0, 0, 0, 0, 0])  # calls, host self, host, dev self, dev
for tid, ops in ops_by_tid.items():
    ops.sort(key=lambda n: (n.start, -n.end))
    root = Node({"name": "CallTreeRoot", "ts": 0, "dur": 0})
    root.start, root.end = -(1 << 62), 1 << 62
    stack = [root]
    for op in ops:
        while not (op.start < stack[-1].end):
            stack.pop()
        if op.end > stack[-1].end:
            fail("tid %s: %s overlaps %s without nesting" % (tid, op.name, stack[-1].name))
            continue
        stack[-1].children.append(op)
        stack.append(op)

    def dedup(n):
        if len(n.children) == 1 and n.children[0].name == n.name and n is not root:
            child = n.children[0]
            n.children, n.runtimes = child.children, child.runtimes
            dedup(n)
            return
        for c in n.children:
            dedup(c)

    def fill(n):
        for c in n.children:
            fill(c)
        n.self_host = n.end - n.start
        for c in n.children:
            n.device += c.device
            n.self_host -= c.end - c.start
        for rt in n.runtimes:
            n.self_host -= rt.end - rt.start
            n.device += rt.device
            n.self_device += rt.device

    def collect(n):
        for c in n.children:
            collect(c)
        if n is root or n.name.startswith("ProfilerStep#") or n.name.startswith("Optimizer.") \
                or (n.name.startswith("enumerate(DataLoader)#") and n.name.endswith(".__next__")) \
                or n.name in ("DataParallel.forward", "DistributedDataParallel.forward"):
            return
        v = view[n.name]
        v[0] += 1
        v[1] += n.self_host
        v[2] += n.end - n.start
        v[3] += n.self_device
        v[4] += n.device

    dedup(root)
    fill(root)
    collect(root)

out = subprocess.run([strobe, "summary", path, "--format", "json"], check=True,
                     capture_output=True, text=True).stdout
rows = {r["Name"]: r for r in json.loads(out)["rows"] if r["CPU total"] > 0}
for name, (calls, host_self, host, dev_self, dev) in sorted(view.items()):
    r = rows.get(name)
    if r is None:
        fail("operator %r (%d calls) is not a row" % (name, calls))
        continue
    got = (r["# of Calls"], ns(str(r["Self CPU"])), ns(str(r["CPU total"])),
           ns(str(r["Self CUDA"])), ns(str(r["CUDA total"])))
    want = (calls, host_self, host, dev_self, dev)
    if got[0] != want[0] or any(abs(g - w) > calls for g, w in zip(got[1:], want[1:])):
        fail("%r: operator view (calls, host self, host, device self, device) %s ns, strobe %s" %
             (name, want, got))
print("%s: %d operators of the TensorBoard plugin's operator view compared, %d failures" %
      (os.path.basename(path), len(view), failures))
sys.exit(1 if failures else 0)

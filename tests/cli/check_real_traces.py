#!/usr/bin/env python3
"""Checks `strobe summary`, `strobe kernels` and `strobe stacks` on the real traces in
shared/traces by independent sums computed here from the JSON (json and gzip modules only):

  - kernels: the kernel rows' totals add up to the sum of the kernel durations in the file, and
    their calls to the number of kernel events; each row's calls equal the count of that name;
  - summary (torch's key_averages rows): the calls of the rows of a name add up to the number of
    X events of that name among the row and device categories (ProfilerStep#N counted as
    ProfilerStep*, torch's left-out utility ops not at all, and the CPU events torch merges into
    a parent of their name not at all); each CPU row's Self CPU is that of torch's tree, built
    here (torch_cpu_rows); a device row (no CPU time) has the
    summed durations of its name's device events as Self and total device time; the footer's
    device total is the sum of the device work (gpu_user_annotation left out); Self CPU adds up
    to the footer total and is never negative; CPU total >= Self CPU;
  - stacks: the weights add up to the self CPU total within the rounding (0.5 us per line);
  - the JSON output parses, and the hand-made traces' JSON agrees with their CSV.

usage: check_real_traces.py STROBE SHARED_DIR CLI_TEST_DIR   (exit 77 when SHARED_DIR is absent)
"""
import collections, decimal, glob, gzip, json, os, subprocess, sys

strobe, shared, cli_dir = sys.argv[1:4]
traces_dir = os.path.join(shared, "traces")
if not os.path.isdir(traces_dir):
    print("no %s: skipped" % traces_dir)
    sys.exit(77)

ROW_CATS = {"cpu_op", "Operator", "user_annotation", "cuda_runtime", "Runtime", "cuda_driver"}
KERNEL_CATS = {"kernel", "Kernel"}
DEVICE_CATS = KERNEL_CATS | {"gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
# Device rows of the summary: torch's device-type events (kineto_shim's deviceTypeFromActivity).
DEVICE_ROW_CATS = DEVICE_CATS | {"cuda_sync", "gpu_user_annotation"}
# torch's _filter_name: never rows.
LEFT_OUT = {"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
            "profiler::_record_function_enter_new", "profiler::_record_function_exit",
            "aten::is_leaf", "aten::output_nr", "aten::_version"}


def row_name(n):
    return "ProfilerStep*" if n.startswith("ProfilerStep#") else n


def torch_cpu_rows(events):
    """torch's CPU rows (EventList._build_tree, then key_averages): per thread, by start and
    then longer first, an event is the child of the innermost one containing it whole; an event
    that is the only child of one of its name is merged into it (_remove_dup_nodes); self time is
    the duration less the children's. @return {name: [calls, self ns]}, rows held at 0."""
    by_tid = collections.defaultdict(list)
    for e in events:
        by_tid[(str(e.get("pid")), str(e.get("tid")))].append(e)
    rows = collections.defaultdict(lambda: [0, 0])
    for evs in by_tid.values():
        evs.sort(key=lambda e: (exact_ns(e["ts"]), -(exact_ns(e["ts"]) + dur_ns(e))))
        parent, children, stack = {}, collections.defaultdict(list), []
        for k, e in enumerate(evs):
            start = exact_ns(e["ts"])
            end = start + dur_ns(e)
            while stack:
                p = evs[stack[-1]]
                pend = exact_ns(p["ts"]) + dur_ns(p)
                if start < pend and end <= pend:
                    break
                stack.pop()
            parent[k] = stack[-1] if stack else None
            if stack:
                children[stack[-1]].append(k)
            stack.append(k)
        merged = set()
        for k in range(len(evs)):  # parents come first
            p = parent[k]
            while p is not None and p in merged:
                p = parent[p]
            parent[k] = p
            if p is not None and len(children[p]) == 1 and evs[p]["name"] == evs[k]["name"]:
                merged.add(k)
                children[p] = children[k]
        for k, e in enumerate(evs):
            if k in merged:
                continue
            r = rows[row_name(e["name"])]
            r[0] += 1
            r[1] += dur_ns(e) - sum(dur_ns(evs[c]) for c in children[k])
    for r in rows.values():
        r[1] = max(r[1], 0)
    return rows
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f, parse_float=decimal.Decimal)  # exact: ts in epoch us has 16 digits
    return d["traceEvents"] if isinstance(d, dict) else d


def exact_ns(v):
    # The file's microseconds (int or Decimal, three decimals), to integer nanoseconds.
    return int((decimal.Decimal(v) * 1000).to_integral_value())


def dur_ns(e):
    return exact_ns(e.get("dur", 0))


def strobe_json(*args):
    out = subprocess.run([strobe] + list(args) + ["--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def us_ns(v):
    return int(round(v * 1000))


for path in sorted(glob.glob(os.path.join(traces_dir, "*.json*"))):
    name = os.path.basename(path)
    events = [e for e in load(path) if isinstance(e, dict)]
    xs = [e for e in events if e.get("ph") == "X" and "dur" in e]
    kernels = [e for e in xs if e.get("cat") in KERNEL_CATS]
    device = [e for e in xs if e.get("cat") in DEVICE_CATS]

    k = strobe_json("kernels", path)
    total = sum(us_ns(r["Total"]) for r in k["kernels"])
    expect = sum(dur_ns(e) for e in kernels)
    if abs(total - expect) > len(kernels):  # at most 1 ns of rounding per kernel
        fail("%s: kernel rows add up to %d ns, the file's kernels to %d ns" % (name, total, expect))
    if sum(r["# of Calls"] for r in k["kernels"]) != len(kernels):
        fail("%s: kernel calls != %d kernel events" % (name, len(kernels)))
    kcount = collections.Counter(e["name"] for e in kernels)
    for r in k["kernels"]:
        if kcount[r["Name"]] != r["# of Calls"]:
            fail("%s: kernel %r: %d calls, %d in the file" % (name, r["Name"], r["# of Calls"],
                                                              kcount[r["Name"]]))

    s = strobe_json("summary", path)
    used = [e for e in xs if e["name"] not in LEFT_OUT]
    cpu_rows = torch_cpu_rows([e for e in used if e.get("cat") in ROW_CATS])
    count = collections.Counter(row_name(e["name"]) for e in used
                                if e.get("cat") in DEVICE_ROW_CATS)
    for n, (calls_n, _) in cpu_rows.items():
        count[n] += calls_n
    self_ns = collections.Counter()
    dev_ns = collections.defaultdict(int)
    for e in used:
        if e.get("cat") in DEVICE_ROW_CATS:
            dev_ns[e["name"]] += dur_ns(e)
    calls = collections.Counter()
    for r in s["rows"]:
        calls[r["Name"]] += r["# of Calls"]
        self_ns[r["Name"]] += us_ns(r["Self CPU"])
        if r["CPU total"] + 1e-9 < r["Self CPU"]:
            fail("%s: %r: CPU total < Self CPU" % (name, r["Name"]))
        if r["Self CPU"] < 0:
            fail("%s: %r: negative Self CPU %s" % (name, r["Name"], r["Self CPU"]))
        if r["CPU total"] == 0 and r["Name"] in dev_ns and r.get("Self CUDA") is not None:
            n = sum(1 for e in used if e["name"] == r["Name"] and e.get("cat") in DEVICE_ROW_CATS)
            if abs(us_ns(r["Self CUDA"]) - dev_ns[r["Name"]]) > n or \
                    r["CUDA total"] != r["Self CUDA"]:
                fail("%s: device row %r: Self CUDA %s, the file's %d ns" %
                     (name, r["Name"], r["Self CUDA"], dev_ns[r["Name"]]))
    if calls != count:
        fail("%s: calls by name differ from the file's: %s" %
             (name, sorted(set(calls.items()) ^ set(count.items()))[:6]))
    for n, (calls_n, want_ns) in cpu_rows.items():
        # A name that is a CPU row and a device row (rare) adds the device row's 0.
        if abs(self_ns[n] - want_ns) > calls_n:
            fail("%s: %r: Self CPU %d ns, torch's tree gives %d ns" % (name, n, self_ns[n], want_ns))
    self_sum = sum(us_ns(r["Self CPU"]) for r in s["rows"])
    if self_sum != us_ns(s["self_cpu_time_total_us"]):
        fail("%s: Self CPU adds up to %d ns, footer %s us" % (name, self_sum,
                                                              s["self_cpu_time_total_us"]))
    work = [e for e in used if e.get("cat") in DEVICE_ROW_CATS and e["cat"] != "gpu_user_annotation"]
    dev = sum(dur_ns(e) for e in work)
    linked = us_ns(s.get("self_cuda_time_total_us", 0))
    if abs(linked - dev) > len(work):
        fail("%s: footer device total %d ns, the file's device work %d ns" % (name, linked, dev))

    out = subprocess.run([strobe, "stacks", path], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    weights = sum(int(line.rsplit(" ", 1)[1]) for line in out)
    total_us = s["self_cpu_time_total_us"]
    # Stacks with a zero (or, for a negative self time, negative) weight are left out.
    if abs(weights - total_us) > 0.5 * len(out) + 1 and not any(r["Self CPU"] < 0 for r in s["rows"]):
        fail("%s: stack weights %d us vs self CPU total %.3f us" % (name, weights, total_us))
    print("ok %s: %d kernels (%d ns), %d rows, device total %d of %d ns, %d stacks" %
          (name, len(kernels), expect, len(s["rows"]), linked, dev, len(out)))

# The hand-made traces: JSON and CSV say the same.
for t in ("summary_basic.json", "stacks_oldschema.json"):
    p = os.path.join(cli_dir, t)
    j = strobe_json("summary", p)
    csv_out = subprocess.run([strobe, "summary", p, "--format", "csv"], check=True,
                             capture_output=True, text=True).stdout.splitlines()
    header = csv_out[0].split(",")
    for line, row in zip(csv_out[1:], j["rows"]):
        for col, val in zip(header, line.split(",")):
            if str(row[col]) != val and abs(float(row[col]) - float(val)) > 1e-9:
                fail("%s: %s: csv %s, json %s" % (t, col, val, row[col]))
sys.exit(1 if failures else 0)

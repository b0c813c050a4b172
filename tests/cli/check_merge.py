"""check_merge.py: `strobe merge` on a made-up 4-rank job (jobgen.py) with known clock offsets.

    python3 check_merge.py STROBE SHARED_DIR OUT_DIR

What it checks, against values worked out here from the ranks' clocks (jobgen.Clock, exact
Fractions), not from strobe's output:
  - each event's merged time is its rank time mapped by the rank's strobe_clock_sync; a barrier
    that every aligned rank leaves at one true time ends within 1 us on every one of them; the
    rank without strobe_clock_sync is merged unshifted, with a warning naming it;
  - processes "rank R (HOST): NAME", sorted by rank, pids apart per rank; the GPU's stream kept;
  - flows: ids unique across ranks (every rank used correlation 1, 2 ...), each start and finish
    on its launch and its kernel;
  - the metadata: distributedInfo's world_size, strobe_merge's offsets;
  - refusals (exit 2, both files named): two jobs, two world sizes, one rank twice; a missing rank
    and a rank cut short are merged and said; an empty folder and a missing file are errors;
  - .pftrace output read back by `strobe info`; both outputs through ../shared's validators
    (skipped without ../shared); `strobe info` and `strobe summary` read the merged JSON.
"""
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobgen  # noqa: E402
from tracegen import expect, fail, finish, run  # noqa: E402

strobe, shared, out = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
job = os.path.join(out, "job")
os.makedirs(job)

HOSTS = ["node-a", "node-a", "node-b", "node-b"]
PIDS = [4242, 4243, 4242, 777]  # two ranks share a pid (two machines): must not collide
CLOCKS = [jobgen.Clock(),
          jobgen.Clock(offset_ns=5_123_457),
          jobgen.Clock(offset_ns=-3_000_001, drift_ppb=2_500, t_ref_ns=jobgen.T0 - 7_000_000_000),
          jobgen.Clock(offset_ns=250_000_000)]  # rank 3 writes no strobe_clock_sync
STEPS = 3


def rank_events(r):
    ev = []
    for s in range(STEPS):
        ev += jobgen.step_events(PIDS[r], CLOCKS[r], jobgen.T0 + s * 2_000_000, s + 1, s, r)
    return ev


def write_job(folder, ranks, **kw):
    paths = []
    for r in ranks:
        doc = jobgen.rank_trace(r, kw.get("world", 4), kw.get("job", "1234"), HOSTS[r], PIDS[r],
                                CLOCKS[r], rank_events(r), with_sync=r != 3)
        paths.append(jobgen.dump(doc, os.path.join(folder, "rank%d.json" % r)))
    return paths


paths = write_job(job, range(4))
merged = os.path.join(out, "merged.json")
rc, so, se = run(strobe, "merge", job, "-o", merged)
expect("merge exit status", rc, 0)
print(se.rstrip())
expect("rank 3 without strobe_clock_sync is said",
       "rank 3 (%s) has no strobe_clock_sync" % paths[3] in se, True)

doc = json.load(open(merged), parse_float=Decimal)
base = doc["baseTimeNanoseconds"]


def abs_ns(e, key="ts"):
    return base + int(e[key] * 1000)


evs = doc["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in evs if e.get("name") == "process_name"}
sorts = {e["pid"]: e["args"]["sort_index"] for e in evs if e.get("name") == "process_sort_index"}
pid_of = {n: p for p, n in names.items()}
want_names = []
for r in range(4):
    want_names += ["rank %d (%s): python" % (r, HOSTS[r]), "rank %d (%s): GPU 0" % (r, HOSTS[r])]
expect("process names", sorted(names.values()), sorted(want_names))
expect("one pid per process", len(pid_of), 8)
by_sort = [names[p] for p in sorted(names, key=lambda p: sorts.get(p, 0))]
expect("processes sorted by rank", [n.split(" (")[0] for n in by_sort],
       ["rank %d" % (i // 2) for i in range(8)])
labels = {e["pid"]: e["args"]["labels"] for e in evs if e.get("name") == "process_labels"}
expect("rank 2's own pid as its label", labels.get(pid_of.get("rank 2 (node-b): python")),
       "pid 4242")

# Every X event's merged start and end against the rank's clock.
bad = 0
barrier_ends = {}
for r in range(4):
    cpu, gpu = pid_of.get("rank %d (%s): python" % (r, HOSTS[r])), \
        pid_of.get("rank %d (%s): GPU 0" % (r, HOSTS[r]))
    clock = CLOCKS[r] if r != 3 else jobgen.Clock()
    want = []
    for ph, p, tid, name, cat, t, dur, extra in rank_events(r):
        if ph != "X":
            continue
        mp = gpu if p == 0 else cpu
        mt = tid if p == 0 else PIDS[r]
        want.append((mp, mt, name, clock.ref_ns(t), clock.ref_ns(t + dur)))
    got = [(e["pid"], e["tid"], e["name"], abs_ns(e), abs_ns(e) + int(e["dur"] * 1000))
           for e in evs if e.get("ph") == "X" and e["pid"] in (cpu, gpu)]
    # The JSON writer may show an end 1 ns early where it meets the next slice (writer.c).
    for w in want:
        match = [g for g in got if g[:4] == w[:4] and abs(g[4] - w[4]) <= 1]
        if not match:
            bad += 1
            if bad < 5:
                fail("rank %d: %s at %d..%d not found (have %s)" % (
                    r, w[2], w[3], w[4], [g for g in got if g[2] == w[2]][:3]))
    barrier_ends[r] = [g[4] for g in got if g[2] == "MPI_Barrier"]
expect("every event at its rank's aligned time", bad, 0)
for s in range(STEPS):
    true_end = jobgen.T0 + s * 2_000_000 + jobgen.BARRIER_END
    ends = [barrier_ends[r][s] for r in range(3)]
    expect("step %d: barrier ends of ranks 0-2 within 1 us of the true end" % s,
           max(abs(x - true_end) for x in ends) <= 1000, True)
    expect("step %d: rank 3 (no clock sync) unshifted" % s,
           barrier_ends[3][s] - true_end, CLOCKS[3].local_ns(true_end) - true_end)

# Flows: ids unique across ranks, each bound to its launch and its kernel.
starts = [e for e in evs if e.get("ph") == "s"]
finishes = [e for e in evs if e.get("ph") == "f"]
expect("flow starts", len(starts), 4 * STEPS)
expect("flow ids unique", len({e["id"] for e in starts}), 4 * STEPS)
fin = {e["id"]: e for e in finishes}
unbound = 0
for s in starts:
    f = fin.get(s["id"])
    launch = [e for e in evs if e.get("ph") == "X" and e["name"] == "cudaLaunchKernel" and
              e["pid"] == s["pid"] and e["ts"] == s["ts"]]
    kern = f and [e for e in evs if e.get("ph") == "X" and e["name"] == "gemm_kernel" and
                  e["pid"] == f["pid"] and e["tid"] == 7 and e["ts"] == f["ts"]]
    if not launch or not kern or names[f["pid"]].split(":")[0] != names[s["pid"]].split(":")[0]:
        unbound += 1
expect("each flow from its launch to its kernel, in one rank", unbound, 0)
expect("kernels on the GPU's stream 7", sorted({(names[e["pid"]], e["tid"]) for e in evs
                                              if e.get("name") == "gemm_kernel"}),
       sorted(("rank %d (%s): GPU 0" % (r, HOSTS[r]), 7) for r in range(4)))

expect("distributedInfo.world_size", doc.get("distributedInfo", {}).get("world_size"), 4)
sm = doc.get("strobe_merge", {})
expect("strobe_merge offsets", [(x["rank"], x["offset_ns"], x["aligned"]) for x in
                                sm.get("ranks", [])],
       [(0, 0, True), (1, 5_123_457, True), (2, -3_000_001, True), (3, 0, False)])
expect("strobe_merge uncertainty", [x["uncertainty_ns"] for x in sm.get("ranks", [])],
       [0, 800, 800, None])

rc, so, se = run(strobe, "info", merged)
expect("strobe info reads it", rc, 0)
expect("strobe info shows the ranks' processes",
       all(n in so for n in ["rank 0 (node-a): python", "rank 3 (node-b): GPU 0"]), True)
rc, so, se = run(strobe, "summary", merged)
expect("strobe summary reads it", (rc, "MPI_Barrier" in so), (0, True))

pf = os.path.join(out, "merged.pftrace")
rc, so, se = run(strobe, "merge", "-q", *paths, "-o", pf)
expect("merge to .pftrace (-q: only the warning)", (rc, "wrote" in se, "rank 3" in se),
       (0, False, True))
rc, so, se = run(strobe, "info", pf)
expect("strobe info reads the .pftrace",
       (rc, "rank 1 (node-a): python" in so, "rank 2 (node-b): GPU 0" in so), (0, True, True))
back = os.path.join(out, "back.json")
rc, so, se = run(strobe, "convert", "-q", pf, back)
if rc == 0:
    bdoc = json.load(open(back), parse_float=Decimal)
    bbase = bdoc["baseTimeNanoseconds"]
    ends = sorted(bbase + int((e["ts"] + e["dur"]) * 1000) for e in bdoc["traceEvents"]
                  if e.get("name") == "MPI_Barrier")
    expect(".pftrace: barriers as in the JSON", ends,
           sorted(x for r in range(4) for x in barrier_ends[r]))
else:
    fail("convert the .pftrace back: %s" % se)

# The output in the folder merged, from an earlier merge, is not taken for a rank.
inside = os.path.join(job, "merged.json")
r1 = run(strobe, "merge", "-q", job, "-o", inside)[0]
r2 = run(strobe, "merge", "-q", job, "-o", inside)[0]
expect("merging into the folder twice", (r1, r2), (0, 0))
os.remove(inside)

# Refusals.
def refused(what, folder_paths, *needles):
    rc, so, se = run(strobe, "merge", *folder_paths, "-o", os.path.join(out, "no.json"))
    expect(what + ": exit 2", rc, 2)
    expect(what + ": the message names the files", all(n in se for n in needles), True)
    expect(what + ": no output", os.path.exists(os.path.join(out, "no.json")), False)
    print("     ", se.strip().splitlines()[-1] if se.strip() else "(no message)")


other = os.path.join(out, "other")
os.makedirs(other)
o1 = write_job(other, [1], job="9999")[0]
refused("two jobs", [paths[0], o1], paths[0], o1, "not of one job")
o2 = os.path.join(other, "w8.json")
d = jobgen.rank_trace(2, 8, "1234", "node-b", 1, CLOCKS[2], rank_events(2))
jobgen.dump(d, o2)
refused("two world sizes", [paths[0], o2], paths[0], o2, "world_size")
dup = os.path.join(other, "dup.json")
shutil.copy(paths[1], dup)
refused("one rank twice", [paths[1], dup, paths[0]], paths[1], dup, "both rank 1")
o3 = os.path.join(other, "r5.json")
jobgen.dump(jobgen.rank_trace(5, 4, "1234", "node-b", 1, CLOCKS[2], rank_events(2)), o3)
refused("a rank outside 0..world_size-1", [paths[0], o3], o3, "outside")
o4 = os.path.join(other, "norank.json")
d = jobgen.rank_trace(2, 4, "1234", "node-b", 1, CLOCKS[2], rank_events(2))
del d["distributedInfo"]
jobgen.dump(d, o4)
refused("one trace without a rank among ranked ones", [paths[0], o4], o4, "no rank")
# Traces without any rank: merged in the order given, as ranks 0, 1 ..., and said.
plain = []
for k, r in enumerate((2, 1)):
    d = jobgen.rank_trace(r, 4, "1234", HOSTS[r], PIDS[r], CLOCKS[r], rank_events(r))
    del d["distributedInfo"]
    plain.append(jobgen.dump(d, os.path.join(other, "plain%d.json" % k)))
rc, so, se = run(strobe, "merge", "-q", *plain, "-o", os.path.join(out, "plain.json"))
expect("traces without ranks: merged in the order given, and said",
       (rc, "merged as ranks 0..1 in the order given" in se), (0, True))
if rc == 0:
    d = json.load(open(os.path.join(out, "plain.json")))
    expect("traces without ranks: named by their place",
           sorted(e["args"]["name"] for e in d["traceEvents"] if e.get("name") == "process_name"),
           ["rank 0 (node-b): GPU 0", "rank 0 (node-b): python",
            "rank 1 (node-a): GPU 0", "rank 1 (node-a): python"])
empty = os.path.join(out, "empty")
os.makedirs(empty)
refused("a folder without traces", [empty], empty, "no trace")
refused("a missing file", [os.path.join(out, "nope.json")], "nope.json")

# A missing rank and a short one: merged, and said.
part = os.path.join(out, "partial")
os.makedirs(part)
pp = write_job(part, [0, 1, 3])
text = open(pp[1]).read()
cut = text.index('"name": "gemm_kernel"', len(text) // 2)
open(pp[1], "w").write(text[:cut])
# Rank 3 ends between two events (an array never closed: the reader accepts it).
text = open(pp[2]).read()
open(pp[2], "w").write(text[:text.index("}, {", len(text) // 2) + 3])
pm = os.path.join(out, "partial.json")
rc, so, se = run(strobe, "merge", part, "-o", pm)
print(se.rstrip())
expect("missing and short ranks: merged", rc, 0)
expect("the missing rank is said", "1 of 4 ranks have no trace: 2" in se, True)
expect("the short rank is said", "rank 1 (%s) is short" % pp[1] in se, True)
expect("the unterminated rank is said", "rank 3 (%s) is short" % pp[2] in se, True)
if rc == 0:
    pdoc = json.load(open(pm))
    pn = {e["args"]["name"] for e in pdoc["traceEvents"] if e.get("name") == "process_name"}
    expect("the short rank's events before the cut are kept",
           "rank 1 (node-a): python" in pn and
           any(e.get("name") == "MPI_Barrier" and e["pid"] == 2000 for e in pdoc["traceEvents"]),
           True)

# Perfetto rank traces (strobe's own: the metadata on the session span): converted from JSON
# ranks that have one, merged, and aligned the same way.
pfdir = os.path.join(out, "pftrace_ranks")
os.makedirs(pfdir)
for r in range(3):
    ev = rank_events(r)
    t0, t1 = min(e[5] for e in ev), max(e[5] + e[6] for e in ev)
    ev.insert(0, ("X", PIDS[r], 0, "strobe session", "Trace", t0, t1 - t0, {}))
    src = jobgen.dump(jobgen.rank_trace(r, 3, "1234", HOSTS[r], PIDS[r], CLOCKS[r], ev),
                      os.path.join(out, "pf%d.json" % r))
    run(strobe, "convert", "-q", src, os.path.join(pfdir, "rank%d.pftrace" % r))
pfm = os.path.join(out, "from_pftrace.json")
rc, so, se = run(strobe, "merge", "-q", pfdir, "-o", pfm)
expect("merge of .pftrace ranks", (rc, se), (0, ""))
if rc == 0:
    d = json.load(open(pfm), parse_float=Decimal)
    b = d["baseTimeNanoseconds"]
    ends = [b + int((e["ts"] + e["dur"]) * 1000) for e in d["traceEvents"]
            if e.get("name") == "MPI_Barrier"]
    expect(".pftrace ranks: world_size and offsets read",
           (d["distributedInfo"]["world_size"],
            [x["offset_ns"] for x in d["strobe_merge"]["ranks"]]), (3, [0, 5_123_457, -3_000_001]))
    expect(".pftrace ranks: barriers within 1 us of the true end",
           len(ends) == 3 * STEPS and all(
               min(abs(x - (jobgen.T0 + s * 2_000_000 + jobgen.BARRIER_END)) for s in range(STEPS))
               <= 1000 for x in ends), True)

# What PyTorch's traces hold and viewers stumble on: no base time (absolute microseconds, which
# doubles hold only to 0.25 us), a thread with a negative tid and one without a name, a slice
# ending in the very ns its parent ends and one where its sibling begins.
pt = os.path.join(out, "pytorch")
os.makedirs(pt)
T = 1712195495406752  # us
for r in range(2):
    ev = [{"ph": "M", "name": "process_name", "pid": 77, "tid": 0, "args": {"name": "python"}}]
    for k in range(20):
        t = T + k * 100
        ev += [{"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 77, "tid": 5, "ts": t,
                "dur": 50},
               {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 77, "tid": 5, "ts": t + 10,
                "dur": 20},
               {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 77, "tid": 5, "ts": t + 30,
                "dur": 20},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 77,
                "tid": -247463936, "ts": t, "dur": 3}]
    with open(os.path.join(pt, "r%d.json" % r), "w") as f:
        json.dump({"schemaVersion": 1, "distributedInfo": {"rank": r, "world_size": 2},
                   "traceEvents": ev}, f)
ptm = os.path.join(out, "pytorch.json")
rc, so, se = run(strobe, "merge", "-q", pt, "-o", ptm)
expect("PyTorch-like ranks merged", rc, 0)
if rc == 0:
    d = json.load(open(ptm))
    expect("no base time: one is given, and times stay small",
           d["baseTimeNanoseconds"] > 0 and max(e.get("ts", 0) for e in d["traceEvents"]) < 1e8,
           True)
    ends = {e["name"]: (e["ts"], e["dur"]) for e in d["traceEvents"]
            if e.get("ph") == "X" and e["pid"] == 1000}
    expect("a slice ending where its parent ends is shown 1 ns earlier",
           round(ends["b"][1] * 1000), 20 * 1000 - 1)

# The independent checkers.
if not os.path.isdir(os.path.join(shared, "validators")):
    print("skip  validators: %s/validators is absent" % shared)
else:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for t in (merged, pf, ptm):
        p = subprocess.run(["bash", "-c", '. "$0/validators.sh"; strobe_check_trace "$1" "$2" '
                            '--strict', here, shared, t], capture_output=True, text=True)
        expect("validators on " + os.path.basename(t), p.returncode, 0)
        if p.returncode:
            print(p.stdout[-3000:], p.stderr[-2000:])
finish()

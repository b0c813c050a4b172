"""check_rewriter.py: `strobe convert` (JSON to Perfetto) and `strobe merge` are one rewriter
(cli/merge.c): what they share and the option that tells them apart.

    python3 check_rewriter.py STROBE OUT_DIR

- --overlap: a slice that overlaps its parent without nesting is kept whole on a lane (convert's
  default) or ended with its parent (merge's default); each command takes the other policy, and
  refuses a value it does not know (exit 2);
- B/E pairs become slices in a merge, as they do in convert;
- a flow with one start and several ends keeps every end, in a merge to JSON (one id) and to
  .pftrace (read back), and through convert;
- a counter keeps its category in a merge, and a numeric member after a string one;
- memory: converting and merging a 100,000-thread trace to .pftrace peak under LIMIT_MB (before
  the merge flushed every 256 tracks, the merge took 1.77 GB).
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, finish, load, run, write, x  # noqa: E402

THREADS = 100000
LIMIT_MB = 200

strobe, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)


def p(name):
    return os.path.join(out, name)


def slices(doc, name=None):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and name in (None, e["name"])]


def ok(*args):
    """Runs strobe; returns its stderr (a failure when it exits non-zero)."""
    rc, _, err = run(strobe, *args)
    if rc != 0:
        fail("strobe %s: exit %d: %s" % (" ".join(args), rc, err.strip()))
    return err


# ---- --overlap ----
overlap = write(p("overlap.json"), [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
    x("op", "parent", 0, 100), x("op", "child", 10, 20), x("op", "over", 90, 30)])


def over_dur(trace_json):
    got = slices(load(trace_json), "over")
    # JSON shows an end that meets its parent's 1 ns early (merge.c, shown_end).
    return round(got[0]["dur"], 2) if len(got) == 1 else got


# convert: lanes by default, cut when asked; read back with convert.
err = ok("convert", overlap, p("lanes.pftrace"))
expect("convert: lanes said", "kept whole on 1 extra track(s)" in err, True)
ok("convert", p("lanes.pftrace"), p("lanes.json"))
expect("convert: the overlapping slice whole", over_dur(p("lanes.json")), 30)
err = ok("convert", "--overlap=cut", overlap, p("cut.pftrace"))
expect("convert --overlap=cut: said", "ended after the slice around them" in err, True)
ok("convert", p("cut.pftrace"), p("cut.json"))
expect("convert --overlap=cut: ended with its parent", over_dur(p("cut.json")), 10)
# merge: cut by default, lanes when asked.
err = ok("merge", overlap, "-o", p("m_cut.json"))
expect("merge: cut said", "ended with it" in err, True)
expect("merge: ended with its parent", over_dur(p("m_cut.json")), 10)
err = ok("merge", "--overlap", "lanes", overlap, "-o", p("m_lanes.pftrace"))
expect("merge --overlap lanes: said", "kept whole on 1 extra track(s)" in err, True)
ok("convert", p("m_lanes.pftrace"), p("m_lanes.json"))
expect("merge --overlap lanes: the slice whole", over_dur(p("m_lanes.json")), 30)


def nests(doc):
    """Whether the slices of every (pid, tid) nest, as JSON consumers need them to."""
    by = {}
    for e in slices(doc):
        by.setdefault((e["pid"], e["tid"]), []).append((e["ts"], -e["dur"]))
    for evs in by.values():
        open_ends = []
        for ts, neg in sorted(evs):
            while open_ends and open_ends[-1] <= ts:
                open_ends.pop()
            if open_ends and ts - neg > open_ends[-1] + 1e-6:
                return False
            open_ends.append(ts - neg)
    return True


# JSON has no track under a thread: there a lane is a thread of its own, and nothing overlaps.
ok("merge", "--overlap=lanes", overlap, "-o", p("m_lanes.json"))
expect("merge --overlap=lanes to JSON: the slice whole", over_dur(p("m_lanes.json")), 30)
expect("merge --overlap=lanes to JSON: every thread's slices nest",
       nests(load(p("m_lanes.json"))), True)
for cmd in (["convert", overlap, p("bad.pftrace")], ["merge", overlap, "-o", p("bad.json")]):
    rc, _, err = run(strobe, cmd[0], "--overlap=sideways", *cmd[1:])
    expect("%s --overlap=sideways: exit 2 and said" % cmd[0],
           (rc, "--overlap takes lanes or cut" in err), (2, True))

# ---- B/E through merge ----
be = write(p("be.json"), [
    {"ph": "B", "cat": "c", "name": "outer", "ts": 10, "pid": 1, "tid": 2},
    {"ph": "B", "cat": "c", "name": "inner", "ts": 12, "pid": 1, "tid": 2, "args": {"k": 1}},
    {"ph": "E", "ts": 15, "pid": 1, "tid": 2},
    {"ph": "E", "ts": 20, "pid": 1, "tid": 2}])
ok("merge", be, "-o", p("be_merged.json"))
got = sorted((e["name"], e["dur"]) for e in slices(load(p("be_merged.json"))) if e["cat"] == "c")
expect("merge: B/E pairs are slices", got, [("inner", 3.0), ("outer", 10.0)])
ok("convert", be, p("be.pftrace"))
ok("convert", p("be.pftrace"), p("be_back.json"))
got = sorted((e["name"], e["dur"]) for e in slices(load(p("be_back.json"))) if e["cat"] == "c")
expect("convert: B/E pairs are slices", got, [("inner", 3.0), ("outer", 10.0)])

# ---- a flow with several ends ----
fan = [x("cuda_runtime", "launch", 10, 10),
       {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 5, "ts": 12, "pid": 1, "tid": 1}]
for k in range(3):
    fan += [x("kernel", "kern%d" % k, 30 + 10 * k, 5, pid=2, tid=7),
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 5, "bp": "e", "ts": 30 + 10 * k,
             "pid": 2, "tid": 7}]
fan = write(p("fan.json"), fan)


def ends(doc):
    """The kernels each flow end lands on, and the number of distinct start ids."""
    ev = [e for e in doc["traceEvents"] if e.get("cat") == "ac2g"]
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    return len([e for e in ev if e["ph"] == "f"]), len(starts)


ok("merge", fan, "-o", p("fan_merged.json"))
expect("merge to JSON: three ends of one flow", ends(load(p("fan_merged.json"))), (3, 1))
for name, cmd in (("merge", ["merge", fan, "-o", p("fan_merged.pftrace")]),
                  ("convert", ["convert", fan, p("fan_merged.pftrace")])):
    ok(*cmd)
    ok("convert", p("fan_merged.pftrace"), p("fan_back.json"))
    expect("%s to .pftrace: three ends read back" % name, ends(load(p("fan_back.json")))[0], 3)

# ---- counters: the category, and members after a string ----
ctr = write(p("counters.json"), [
    {"ph": "C", "cat": "memory", "name": "mem", "ts": 10 * k, "pid": 1, "tid": 0,
     "args": {"allocated": k, "note": "x", "reserved": 2 * k}} for k in range(3)])
ok("merge", ctr, "-o", p("ctr_merged.json"))
cs = [e for e in load(p("ctr_merged.json"))["traceEvents"] if e.get("ph") == "C"]
expect("merge: counters keep their category", sorted({e.get("cat") for e in cs}), ["memory"])
expect("merge: both numeric members", sorted({e["name"] for e in cs}),
       ["mem allocated", "mem reserved"])
ok("convert", ctr, p("ctr.pftrace"))
ok("convert", p("ctr.pftrace"), p("ctr_back.json"))
cs = [e for e in load(p("ctr_back.json"))["traceEvents"] if e.get("ph") == "C"]
expect("convert: both numeric members", sorted({e["name"] for e in cs}),
       ["mem allocated", "mem reserved"])

# ---- memory: many threads ----
many = write(p("threads.json"), [x("cpu_op", "op", i, 1, tid=i + 1) for i in range(THREADS)])
for args in (["convert", "-q", many, p("threads.pftrace")],
             ["merge", "-q", many, "-o", p("threads_merged.pftrace")]):
    proc = subprocess.Popen([strobe] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    mb = usage.ru_maxrss / 1024.0
    if rc != 0:
        fail("strobe %s: exit %d: %s" % (" ".join(args), rc, err))
    else:
        print("     %s of %d threads: %.0f MB" % (args[0], THREADS, mb))
        expect("%s of %d threads under %d MB" % (args[0], THREADS, LIMIT_MB), mb < LIMIT_MB, True)
finish()

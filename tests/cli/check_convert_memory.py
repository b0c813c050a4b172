"""check_convert_memory.py: `strobe convert` to .pftrace takes memory of the order of its trace,
however many threads it has.

    python3 check_convert_memory.py STROBE OUT_DIR

Two generated traces:
  threads  T threads with one 1 us operator each (T = 30000, 2.7 MB). The Perfetto writer keeps
           an encoder per thread's sequence, some 6 KB when made and 17 KB once written to:
           before convert let the writer forget them every few hundred threads
           (strobe_writer_flush_interned), this took 530 MB (1.7 GB for 100000 threads).
  rich     R threads (R = 600, more than one flush apart) with nested slices, a slice that
           overlaps its parent (an extra lane), an instant, a flow to the next thread, thread
           names, args and a counter: what the flushes split must read back the same.
The threads run's max RSS (os.wait4) must stay under LIMIT_MB; each output must give
`strobe summary` the table its JSON gives and `strobe info` its threads.

Not under sanitizers (their allocators hold freed memory back: CMake leaves the test out there).
"""
import json
import os
import re
import shutil
import subprocess
import sys

T, R = 30000, 600
LIMIT_MB = 100  # 17 MB when fixed; measured 24 MB, this process's RSS at the fork included

strobe, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)


def write(name, events):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "traceEvents": events}, f)
    return path


threads = write("threads.json", [{"ph": "X", "cat": "cpu_op", "name": "op", "ts": i, "dur": 1,
                                  "pid": 1, "tid": i + 1} for i in range(T)])
ev = []
for t in range(1, R + 1):
    b = 10 * t
    ev += [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": "worker %d" % t}},
        {"ph": "X", "cat": "cpu_op", "name": "parent", "ts": b, "dur": 100, "pid": 1, "tid": t,
         "args": {"External id": t}},
        {"ph": "X", "cat": "cpu_op", "name": "child%d" % (t % 7), "ts": b + 1, "dur": 20,
         "pid": 1, "tid": t},
        {"ph": "X", "cat": "user_annotation", "name": "over", "ts": b + 90, "dur": 30, "pid": 1,
         "tid": t},
        {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "ts": b + 5, "s": "t", "pid": 1,
         "tid": t},
        {"ph": "s", "cat": "ac2g", "name": "flow", "id": t, "ts": b + 2, "pid": 1, "tid": t},
        {"ph": "f", "cat": "ac2g", "name": "flow", "id": t, "bp": "e", "ts": b + 12, "pid": 1,
         "tid": t % R + 1},
        {"ph": "C", "cat": "counter", "name": "mem", "ts": b, "pid": 1, "args": {"bytes": t}},
    ]
rich = write("rich.json", ev)


def peak_rss_mb(*args):
    """Runs strobe with args; returns its own max RSS in MB (exits on failure)."""
    p = subprocess.Popen([strobe] + list(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        sys.exit("FAIL: strobe %s: exit %d\n%s" % (" ".join(args), rc, err))
    return usage.ru_maxrss / 1024.0  # Linux: KB


def output(*args):
    """Runs strobe with args; returns its standard output (exits on failure)."""
    p = subprocess.run([strobe] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: strobe %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


failed = 0
for name, path, nthreads in (("threads", threads, T), ("rich", rich, R)):
    pf = os.path.join(out, name + ".pftrace")
    rss = peak_rss_mb("convert", "-q", path, pf)
    print("convert %s (%d threads) to .pftrace: max RSS %.1f MB" % (name, nthreads, rss))
    if name == "threads" and rss > LIMIT_MB:
        print("FAIL: %s: max RSS %.1f MB > %d MB: memory grows with the threads"
              % (name, rss, LIMIT_MB))
        failed = 1
    want, got = output("summary", "-q", path), output("summary", "-q", pf)
    if want != got:
        print("FAIL: %s: strobe summary of the .pftrace differs from the JSON's:\n%s\n---\n%s"
              % (name, want, got))
        failed = 1
    m = re.search(r"threads \((\d+)\)", output("info", "-q", pf))
    if not m or int(m.group(1)) != nthreads:
        print("FAIL: %s: strobe info: threads %s (want %d)"
              % (name, m.group(1) if m else "?", nthreads))
        failed = 1
if not failed:
    shutil.rmtree(out, ignore_errors=True)
print("FAIL" if failed else "ok")
sys.exit(failed)

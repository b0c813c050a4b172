"""check_stacks_memory.py: `strobe stacks` takes memory (and time) of the order of its trace,
whatever the shape of its stacks.

    python3 check_stacks_memory.py STROBE OUT_DIR

Two generated traces of one thread:
  nest     N ranges nested in each other (range i starts at i us and ends at 2N - i us): N
           lines of 1 to N frames, each weighing 2 us. The output is N*N/2 frames by nature
           (each line lists its whole stack); the command must not hold it: before it wrote the
           lines by walking its tree of frames, it built every line as a string first (1.2 GB
           for N = 20000, 120 MB for N = 6000).
  overlap  M ranges each overlapping the next (range i at 10 i us, 15 us long): none contains
           another, so each is its own one-frame line of 15 us, as in torch's tree of self
           times. Before, each range was stacked on the one it starts in, a chain M deep (M*M/2
           frames: 9.3 GB of memory and of output for M = 50000).
  deep     D ranges nested in each other 1 ns apart (self times of 2 ns, which round to 0 us)
           around a 5 us leaf: one line of D + 1 frames. Before the fold found which event made
           each node of the tree once all were folded, it walked up every event's stack (the
           events come innermost first): D*D/2 steps, 3.8 s of CPU for D = 40000.
Each run's max RSS (os.wait4) must stay under LIMIT_MB, and the lines must be those above; the
deep run's CPU time (user + system) must stay under LIMIT_CPU_S.

Not under sanitizers (their allocators hold freed memory back: CMake leaves the test out there).
"""
import itertools
import json
import os
import shutil
import subprocess
import sys

N, M, D = 6000, 10000, 40000
LIMIT_MB = 40  # 9 MB when fixed; measured 14-20 MB, this process's RSS at the fork included
LIMIT_CPU_S = 1.5  # about 0.1 s when fixed

strobe, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)


def write(name, events):
    """Writes a trace of the events (an iterable, written one by one, so that this process stays
    small: a child's max RSS counts this process's at the fork)."""
    path = os.path.join(out, name)
    with open(path, "w") as f:
        f.write('{"traceEvents": [\n')
        for k, e in enumerate(events):
            f.write((",\n" if k else "") + json.dumps(e))
        f.write("\n]}\n")
    return path


nest = write("nest.json", ({"ph": "X", "cat": "cpu_op", "name": "n%d" % i, "ts": i,
                            "dur": 2 * N - 2 * i, "pid": 1, "tid": 1} for i in range(N)))
overlap = write("overlap.json", ({"ph": "X", "cat": "cpu_op", "name": "op%d" % i, "ts": 10 * i,
                                  "dur": 15, "pid": 1, "tid": 1} for i in range(M)))
deep = write("deep.json", itertools.chain(
    ({"ph": "X", "cat": "cpu_op", "name": "d%d" % i, "ts": i / 1000,
      "dur": (2 * D - 2 * i + 5000) / 1000, "pid": 1, "tid": 1} for i in range(D)),
    [{"ph": "X", "cat": "cpu_op", "name": "leaf", "ts": D / 1000, "dur": 5, "pid": 1, "tid": 1}]))


def stacks(path):
    """Runs `strobe stacks -q path`; returns (its max RSS in MB, its CPU seconds, the lines as
    (frames, first frame, last frame, weight)), the lines read as they come."""
    p = subprocess.Popen([strobe, "stacks", "-q", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    lines = []
    for raw in p.stdout:
        stack, _, w = raw.decode(errors="replace").rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        lines.append((len(frames), frames[0], frames[-1], int(w)))
    err = p.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        sys.exit("FAIL: strobe stacks %s: exit %d\n%s" % (path, rc, err))
    return usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime, lines  # Linux: KB


failed = 0
rss, _, lines = stacks(nest)
print("stacks of %d nested ranges: max RSS %.1f MB, %d lines" % (N, rss, len(lines)))
want = sorted((i + 1, "n0", "n%d" % i, 2) for i in range(N))
if sorted(lines) != want:
    print("FAIL: nest: want %d lines n0;...;nK 2 (K < %d), got %d lines (first %r)"
          % (N, N, len(lines), lines[:2]))
    failed = 1
if rss > LIMIT_MB:
    print("FAIL: nest: max RSS %.1f MB > %d MB" % (rss, LIMIT_MB))
    failed = 1
rss, _, lines = stacks(overlap)
print("stacks of %d overlapping ranges: max RSS %.1f MB, %d lines" % (M, rss, len(lines)))
want = sorted((1, "op%d" % i, "op%d" % i, 15) for i in range(M))
if sorted(lines) != want:
    print("FAIL: overlap: want %d one-frame lines opK 15, got %d lines (deepest %d frames)"
          % (M, len(lines), max((x[0] for x in lines), default=0)))
    failed = 1
if rss > LIMIT_MB:
    print("FAIL: overlap: max RSS %.1f MB > %d MB" % (rss, LIMIT_MB))
    failed = 1
rss, cpu, lines = stacks(deep)
print("stacks of %d ranges nested 1 ns apart: max RSS %.1f MB, CPU %.2f s, %d lines"
      % (D, rss, cpu, len(lines)))
if lines != [(D + 1, "d0", "leaf", 5)]:
    print("FAIL: deep: want one line d0;...;d%d;leaf 5, got %d lines (first %r)"
          % (D - 1, len(lines), lines[:1]))
    failed = 1
if rss > LIMIT_MB or cpu > LIMIT_CPU_S:
    print("FAIL: deep: max RSS %.1f MB (at most %d), CPU %.2f s (at most %g)"
          % (rss, LIMIT_MB, cpu, LIMIT_CPU_S))
    failed = 1
if not failed:
    shutil.rmtree(out, ignore_errors=True)
print("FAIL" if failed else "ok")
sys.exit(failed)

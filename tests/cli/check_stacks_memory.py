"""check_stacks_memory.py: `strobe stacks` takes memory of the order of its trace, whatever the
shape of its stacks.

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
Each run's max RSS (os.wait4) must stay under LIMIT_MB, and the lines must be those above.

Not under sanitizers (their allocators hold freed memory back: CMake leaves the test out there).
"""
import json
import os
import shutil
import subprocess
import sys

N, M = 6000, 10000
LIMIT_MB = 60  # about 8 MB when fixed (the model of the trace, the tree, one stack)

strobe, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)


def write(name, events):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    return path


nest = write("nest.json", [{"ph": "X", "cat": "cpu_op", "name": "n%d" % i, "ts": i,
                            "dur": 2 * N - 2 * i, "pid": 1, "tid": 1} for i in range(N)])
overlap = write("overlap.json", [{"ph": "X", "cat": "cpu_op", "name": "op%d" % i, "ts": 10 * i,
                                  "dur": 15, "pid": 1, "tid": 1} for i in range(M)])


def stacks(path):
    """Runs `strobe stacks -q path`; returns (its max RSS in MB, [(frames, weight)]), where
    frames is the number of frames and the line's last frame (lines are read as they come)."""
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
    return usage.ru_maxrss / 1024.0, lines  # Linux: KB


failed = 0
rss, lines = stacks(nest)
print("stacks of %d nested ranges: max RSS %.1f MB, %d lines" % (N, rss, len(lines)))
want = sorted((i + 1, "n0", "n%d" % i, 2) for i in range(N))
if sorted(lines) != want:
    print("FAIL: nest: want %d lines n0;...;nK 2 (K < %d), got %d lines (first %r)"
          % (N, N, len(lines), lines[:2]))
    failed = 1
if rss > LIMIT_MB:
    print("FAIL: nest: max RSS %.1f MB > %d MB" % (rss, LIMIT_MB))
    failed = 1
rss, lines = stacks(overlap)
print("stacks of %d overlapping ranges: max RSS %.1f MB, %d lines" % (M, rss, len(lines)))
want = sorted((1, "op%d" % i, "op%d" % i, 15) for i in range(M))
if sorted(lines) != want:
    print("FAIL: overlap: want %d one-frame lines opK 15, got %d lines (deepest %d frames)"
          % (M, len(lines), max((x[0] for x in lines), default=0)))
    failed = 1
if rss > LIMIT_MB:
    print("FAIL: overlap: max RSS %.1f MB > %d MB" % (rss, LIMIT_MB))
    failed = 1
if not failed:
    shutil.rmtree(out, ignore_errors=True)
print("FAIL" if failed else "ok")
sys.exit(failed)

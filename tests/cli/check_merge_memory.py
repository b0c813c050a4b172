"""check_merge_memory.py: `strobe merge` to .pftrace takes the memory of one rank, not of all.

    python3 check_merge_memory.py STROBE OUT_DIR [MB]

A job of 8 ranks of about MB megabytes each (jobgen.py big; default 5) is merged to .pftrace
twice with -j 1: its first 2 ranks, then all 8. The merge holds one rank in memory at a time
(-j 1; with N workers it holds up to 2 x N, which check_merge_jobs.py bounds), and the
Perfetto writer bounds what it keeps per sequence and forgets a rank's sequences after it
(strobe_writer_flush_interned): the peak RSS of the 8-rank merge must stay within MARGIN_MB of
the 2-rank one's. Before that bound, every rank's interned names (a step number in each
ProfilerStep name) and buffers stayed until the end: about 1.7 MB more per 5 MB rank, 10 MB for
the 6 ranks more. Each merge's max RSS is its own (os.wait4). The 8-rank output must read back
with its 16 processes (8 ranks x a CPU and a GPU process).

Not under sanitizers (their allocators hold freed memory back: CMake leaves the test out there).
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobgen  # noqa: E402

MARGIN_MB = 3

strobe, out = sys.argv[1], sys.argv[2]
mb = float(sys.argv[3]) if len(sys.argv) > 3 else 5
shutil.rmtree(out, ignore_errors=True)
job8, job2 = os.path.join(out, "job8"), os.path.join(out, "job2")
jobgen.big(job8, 8, mb)
os.makedirs(job2)
for r in range(2):
    os.symlink(os.path.join(job8, "rank%d.json" % r), os.path.join(job2, "rank%d.json" % r))


def peak_rss_mb(*args):
    """Runs strobe with args; returns its own max RSS in MB (exits on failure)."""
    p = subprocess.Popen([strobe] + list(args), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("FAIL: strobe %s: exit %d\n%s" % (" ".join(args), p.returncode, err))
    return usage.ru_maxrss / 1024.0  # Linux: KB


out2, out8 = os.path.join(out, "two.pftrace"), os.path.join(out, "eight.pftrace")
rss2 = peak_rss_mb("merge", "-q", "-j", "1", job2, "-o", out2)
rss8 = peak_rss_mb("merge", "-q", "-j", "1", job8, "-o", out8)
print("merge to .pftrace, max RSS: 2 ranks %.1f MB, 8 ranks %.1f MB (%.1f MB each of ~%g MB)"
      % (rss2, rss8, (rss8 - rss2) / 6, mb))
failed = 0
if rss8 > rss2 + MARGIN_MB:
    print("FAIL: 8 ranks took %.1f MB more than 2 (at most %d): memory grows with the ranks"
          % (rss8 - rss2, MARGIN_MB))
    failed = 1
info = subprocess.run([strobe, "info", out8], capture_output=True, text=True)
m = re.search(r"processes \((\d+)\)", info.stdout)
if info.returncode != 0 or not m or int(m.group(1)) != 16:
    print("FAIL: strobe info %s: exit %d, processes %s (want 16)\n%s"
          % (out8, info.returncode, m.group(1) if m else "?", info.stderr))
    failed = 1
if not failed:
    shutil.rmtree(out, ignore_errors=True)  # 40 MB of inputs
print("FAIL" if failed else "ok")
sys.exit(failed)

"""check_ranks_memory.py: `strobe ranks` on a folder holds the ranks being read, not all of them.

    python3 check_ranks_memory.py STROBE OUT_DIR

A job of 40 ranks of about 2 MB each with 6 steps (bench/gen_job.py) and its first 4 ranks are
analysed with -j 1 and -j 2, with and without --collectives. Each rank is reduced to its steps,
long NCCL kernels and collectives on the thread that reads it, and its model freed at once
(cli_hta_command.reduce): the 40-rank peak RSS must stay within a tenth of the 36 ranks' bytes
more than the 4-rank one. When every rank's model was kept until the analysis, the 36 ranks more
cost about a third of their bytes (26 MB for 70 MB). Each run's max RSS is its own (GNU time's
%M; see run() for the fallback without it); each output is compared with -j 1's, and the 40-rank run must find the injected
straggler (rank 7, 9 ms late at step 3) as the last rank of that step's collectives.

Not under sanitizers (their allocators hold freed memory back: CMake leaves the test out there).
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "bench", "gen_job.py")
strobe, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
big, small = os.path.join(out, "job40"), os.path.join(out, "job4")
subprocess.run([sys.executable, GEN, "--ranks", "40", "--steps", "6", "--size-mb", "2",
                "--slow", "7:3:9", big], check=True, stdout=subprocess.DEVNULL)
os.makedirs(small)
names = sorted(os.listdir(big), key=lambda n: int("".join(c for c in n if c.isdigit()) or 0))
for n in names[:4]:
    os.symlink(os.path.join(big, n), os.path.join(small, n))


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run(*args):
    """strobe with args: (its own max RSS in bytes, stdout); exits on failure. By GNU time where
    it is installed (scripts/deps.sh --test installs it), else by os.wait4, whose figure starts
    at the forked Python's RSS (fork, then exec, keep the high-water mark): a floor of ~15 MB
    that both runs share, under which growth is not seen."""
    t = os.path.join(out, "time.txt")
    pre = [TIME, "-f", "%M", "-o", t] if TIME else []
    p = subprocess.Popen(pre + [strobe] + list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    stdout = p.stdout.read()
    stderr = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit("FAIL: strobe %s: exit %d: %s" % (" ".join(args), code, stderr.decode()[:300]))
    if TIME:
        return int(open(t).read().split()[-1]) * 1024, stdout
    return usage.ru_maxrss * 1024, stdout


failed = []
extra = sum(os.path.getsize(os.path.join(big, n)) for n in names[4:])
for coll in ([], ["--collectives"]):
    want = None
    for j in ("1", "2"):
        args = ["ranks", "-q", "-f", "json", "-j", j] + coll
        rss_small, _ = run(*(args + [small]))
        rss_big, text = run(*(args + [big]))
        grew = rss_big - rss_small
        print("ranks %s -j %s: 4 ranks %.1f MB, 40 ranks %.1f MB (%.1f MB more for %.1f MB of "
              "traces more)" % (" ".join(coll), j, rss_small / 1e6, rss_big / 1e6, grew / 1e6,
                                extra / 1e6))
        if grew > extra / 10:
            failed.append("ranks %s -j %s: peak grew %.1f MB for 36 ranks (%.1f MB): the models "
                          "are kept" % (" ".join(coll), j, grew / 1e6, extra / 1e6))
        if want is None:
            want = text
        elif text != want:
            failed.append("ranks %s: -j %s differs from -j 1" % (" ".join(coll), j))
    if coll:
        doc = json.loads(want)
        late = [c for c in doc["collectives"] if c["last_rank"] == 7]
        if not late or max(c["wait_max"] for c in late) < 9000:
            failed.append("--collectives: rank 7's 9 ms at step 3 not found: %r" % late[:3])
for f in failed:
    print("FAIL:", f)
sys.exit(1 if failed else 0)

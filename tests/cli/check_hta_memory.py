"""check_hta_memory.py: the HTA commands that reduce ranks hold the ranks being read, not all.

    python3 check_hta_memory.py STROBE OUT_DIR

`strobe ranks` (and --collectives) reduces each rank to its steps, long NCCL kernels and
collectives (cli_hta_command.reduce); the commands whose tables are rows of one rank each
(cli_hta_command.per_rank: breakdown, overlap, idle, queue, memory-bw, launches, with their
variants) reduce each rank to its recorded rows. Both happen on the thread that read the rank,
which frees its model at once. Each command runs with -j 1 and -j 2 on a job of 40 ranks of about
2 MB (bench/gen_job.py, 6 steps, rank 7 slowed 9 ms at step 3) and on its first 4 ranks: the
40-rank peak RSS must stay within a tenth of the 36 ranks' bytes more than the 4-rank one. With
every model kept, as before, they cost about a third of their bytes (17 to 26 MB for 70 MB).
-j 2's output must be -j 1's, and `ranks --collectives` must find rank 7's delay.

Each run's peak is GNU time's %M where it is installed (scripts/deps.sh --test installs it), else
os.wait4's, whose figure starts at the forked Python's RSS (fork, then exec, keep the high-water
mark): a floor of ~15 MB both runs share, under which growth is not seen.

Not under sanitizers (their allocators hold freed memory back: CMake leaves the test out there).
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "bench", "gen_job.py")
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
strobe, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
big, small = os.path.join(out, "job40"), os.path.join(out, "job4")
subprocess.run([sys.executable, GEN, "--ranks", "40", "--steps", "6", "--size-mb", "2",
                "--slow", "7:3:9", big], check=True, stdout=subprocess.DEVNULL)
os.makedirs(small)
names = sorted(os.listdir(big), key=lambda n: int("".join(c for c in n if c.isdigit()) or 0))
for n in names[:4]:
    os.symlink(os.path.join(big, n), os.path.join(small, n))


def run(*args):
    """strobe with args: (its own max RSS in bytes, stdout); exits on failure."""
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


COMMANDS = [["ranks"], ["ranks", "--collectives"], ["breakdown"], ["overlap"], ["idle"],
            ["queue"], ["queue", "--series"], ["memory-bw"], ["memory-bw", "--series"],
            ["launches"], ["launches", "--by-op"]]
failed = []
extra = sum(os.path.getsize(os.path.join(big, n)) for n in names[4:])
for cmd in COMMANDS:
    want = None
    for j in ("1", "2"):
        args = cmd[:1] + ["-q", "-f", "json", "-j", j] + cmd[1:]
        rss_small, _ = run(*(args + [small]))
        rss_big, text = run(*(args + [big]))
        grew = rss_big - rss_small
        print("%s -j %s: 4 ranks %.1f MB, 40 ranks %.1f MB (%.1f MB more for %.1f MB of traces "
              "more; output %.1f MB)" % (" ".join(cmd), j, rss_small / 1e6, rss_big / 1e6,
                                         grew / 1e6, extra / 1e6, len(text) / 1e6))
        if grew > extra / 10:
            failed.append("%s -j %s: peak grew %.1f MB for 36 ranks (%.1f MB): the models are "
                          "kept" % (" ".join(cmd), j, grew / 1e6, extra / 1e6))
        if want is None:
            want = text
        elif text != want:
            failed.append("%s: -j %s differs from -j 1" % (" ".join(cmd), j))
    if cmd == ["ranks", "--collectives"]:
        late = [c for c in json.loads(want)["collectives"] if c["last_rank"] == 7]
        if not late or max(c["wait_max"] for c in late) < 9000:
            failed.append("--collectives: rank 7's 9 ms at step 3 not found: %r" % late[:3])
for f in failed:
    print("FAIL:", f)
sys.exit(1 if failed else 0)

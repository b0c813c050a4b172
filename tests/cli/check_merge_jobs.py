"""check_merge_jobs.py: `strobe merge` gives the same bytes for every -j N and under mpirun (issue
35): on a generated job of 20 ranks, among them a rank cut mid-event, a rank whose events cannot
be read (left out), a streamed rank killed mid-run that reached its size cap (a cut session span,
dropped events, a warning), and ranks with trace ids and heaps, merge -j 1, -j 2 and -j 4 write
the same .json, .json.gz and .pftrace and say the same on stderr; so do `mpirun -np 2` and `-np 4
--oversubscribe` (skipped, saying so, without mpirun or with STROBE_TEST_NO_MPI), with nothing
said by the other processes. A rank file that cannot be read at all fails the command naming it,
under every -j and under mpirun; processes given different traces are refused; -j 0 is refused.
One merged output passes the shared validators (check_all.sh --strict) when the shared folder
is there. Peak memory: -j 2 on 48 ranks of 2 MB stays within 3 MB of -j 2 on 8 of them (the
workers hold at most 2 x jobs ranks ahead of the writer, not the job; skipped with
STROBE_TEST_NO_MEMORY: sanitizer allocators hold freed memory).

    python3 check_merge_jobs.py STROBE SHARED_DIR OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobgen  # noqa: E402

STROBE, SHARED, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
FAILED = []
FORMATS = ["json", "json.gz", "pftrace"]
MARGIN_MB = 3


def run(args, launch=None):
    p = subprocess.run((launch or []) + [STROBE] + args, capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def strobe_lines(err):
    """What strobe said (Open MPI may add lines of its own to mpirun's stderr)."""
    return [ln for ln in err.decode(errors="replace").splitlines() if ln.startswith("strobe ")]


def make_job(job):
    jobgen.big(job, 20, 0.1)
    text = open(os.path.join(job, "rank5.json")).read()
    # Cut inside an event past the middle: the events before it are kept, the rank is short.
    cut = text.index('"name": "gemm_kernel"', len(text) // 2)
    open(os.path.join(job, "rank5.json"), "w").write(text[:cut])
    # Metadata that reads, events that do not: the rank is left out, and said.
    head = json.loads(text[:text.index(', "traceEvents"')] + "}")
    open(os.path.join(job, "rank9.json"), "w").write(json.dumps(head)[:-1].replace(
        '"rank": 5', '"rank": 9') + ', "traceEvents": [{"ph": "X", "ts": }]}')
    # A stream killed mid-run that reached its size cap; trace ids and heaps on some ranks.
    extra = {0: {"trace_id": "T0", "strobe_heap": [{"pid": 1}]},
             1: {"trace_id": "T1", "strobe_heap": [{"pid": 2}], "deviceProperties": [{"id": 0}]},
             7: {"strobe_stream": {"complete": False, "capped": True, "capped_events": 12,
                                   "dropped_events": 3, "lost_events": 2}}}
    for r, members in extra.items():
        path = os.path.join(job, "rank%d.json" % r)
        text = open(path).read()
        text = text[:1] + json.dumps(members)[1:-1] + ", " + text[1:]
        open(path, "w").write(text)


def same_bytes(job):
    for fmt in FORMATS:
        out = os.path.join(OUT, "merged." + fmt)
        first = None
        for j in (1, 2, 4):
            rc, so, se = run(["merge", "-j", str(j), job, "-o", out])
            got = (rc, so, se, open(out, "rb").read() if os.path.exists(out) else b"")
            if first is None:
                first = got
                if rc != 0 or b"rank 5" not in se or b"rank 9" not in se or b"size cap" not in se:
                    FAILED.append("merge -j 1 to .%s: exit %d, stderr %r (wanted 0, ranks 5 and 9 "
                                  "and the size cap said)" % (fmt, rc, se[-600:]))
                continue
            for k, name in enumerate(["exit status", "stdout", "stderr", "output"]):
                if got[k] != first[k]:
                    a, b = first[k], got[k]
                    FAILED.append(".%s: %s differs between -j 1 and -j %d: %r vs %r"
                                  % (fmt, name, j, a[:300] if isinstance(a, bytes) else a,
                                     b[:300] if isinstance(b, bytes) else b))
        if fmt == "json" and first:
            shutil.copy(out, os.path.join(OUT, "want.json"))
        yield fmt, first


def unreadable(job):
    bad = os.path.join(OUT, "bad")
    shutil.copytree(job, bad)
    with open(os.path.join(bad, "rank3.json"), "w") as f:
        f.write("not json")
    out = os.path.join(OUT, "bad.json")
    for j in (1, 2, 4):
        rc, so, se = run(["merge", "-q", "-j", str(j), bad, "-o", out])
        if rc != 2 or b"rank3.json" not in se or so:
            FAILED.append("merge -j %d with an unreadable rank3.json: exit %d, stderr %r (wanted 2, "
                          "the file named)" % (j, rc, se[-500:]))
    for opt in (["-j", "0"], ["--jobs=0"]):
        rc, so, se = run(["merge"] + opt + [job, "-o", out])
        if rc != 2 or se.count(b"\n") != 1 or b"--jobs" not in se:
            FAILED.append("merge %s: exit %d, stderr %r (wanted 2, one line on --jobs)"
                          % (" ".join(opt), rc, se))
    return bad


def mpi(job, bad, wants):
    launch = jobgen.mpi_launcher()
    if launch is None:
        return
    for fmt, want in wants:
        out = os.path.join(OUT, "merged." + fmt)  # the name -j 1 wrote, which strobe says
        for np in (2, 4):
            if os.path.exists(out):
                os.unlink(out)
            rc, so, se = run(["merge", job, "-o", out], launch + ["-np", str(np)])
            got = open(out, "rb").read() if os.path.exists(out) else b""
            if rc != 0 or so or got != want[3] or strobe_lines(se) != strobe_lines(want[2]):
                FAILED.append("mpirun -np %d merge to .%s: exit %d, output %s -j 1's, strobe's "
                              "lines %r (want %r)"
                              % (np, fmt, rc, "the same as" if got == want[3] else "not",
                                 strobe_lines(se)[-6:], strobe_lines(want[2])[-6:]))
    for np in (2, 4):
        rc, so, se = run(["merge", "-q", bad, "-o", os.path.join(OUT, "mpi_bad.json")],
                         launch + ["-np", str(np)])
        said = [ln for ln in strobe_lines(se) if "rank3.json" in ln]
        if rc == 0 or so or len(said) != 1:
            FAILED.append("mpirun -np %d merge with an unreadable rank3.json: exit %d, stderr %r "
                          "(wanted non-zero, rank3.json named once)" % (np, rc, se[-500:]))
    # Each process given a list of its own: refused, not merged wrongly.
    script = (STROBE + " merge -q " + job + "/rank1${OMPI_COMM_WORLD_RANK:-$PMI_RANK}.json " + job
              + "/rank2.json -o " + os.path.join(OUT, "mpi_lists.json"))
    p = subprocess.run(launch + ["-np", "2", "sh", "-c", script], capture_output=True,
                       timeout=300)
    if p.returncode == 0 or b"other traces" not in p.stderr:
        FAILED.append("mpirun -np 2 with different traces per process: exit %d, stderr %r"
                      % (p.returncode, p.stderr[-500:]))


def validate():
    check = os.path.join(SHARED, "validators", "check_all.sh")
    if not os.path.exists(check):
        print("%s absent: the validators' part skipped" % check)
        return
    p = subprocess.run(["sh", check, os.path.join(OUT, "want.json"), "--strict"],
                       capture_output=True, timeout=600)
    if p.returncode != 0:
        FAILED.append("check_all.sh --strict on the merged job: exit %d: %r"
                      % (p.returncode, (p.stdout + p.stderr)[-800:]))


def peak_rss_mb(*args):
    """strobe's own peak RSS in MB, by GNU time: a child of Python starts with Python's RSS as its
    high-water mark (fork, then exec, keep it), which hid a few MB of strobe's."""
    t = os.path.join(OUT, "time.txt")
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t, STROBE] + list(args),
                       capture_output=True, timeout=300)
    if p.returncode != 0:
        FAILED.append("strobe %s: exit %d: %r" % (" ".join(args), p.returncode, p.stderr[-300:]))
        return 0.0
    return int(open(t).read().split()[-1]) / 1024.0


def memory():
    if os.environ.get("STROBE_TEST_NO_MEMORY"):
        print("the memory part skipped: %s" % os.environ["STROBE_TEST_NO_MEMORY"])
        return
    if not os.access("/usr/bin/time", os.X_OK):
        print("no GNU time (/usr/bin/time): the memory part skipped")
        return
    many, few = os.path.join(OUT, "mem48"), os.path.join(OUT, "mem8")
    jobgen.big(many, 48, 2)
    os.makedirs(few)
    for r in range(8):
        os.symlink(os.path.join(many, "rank%d.json" % r), os.path.join(few, "rank%d.json" % r))
    out = os.path.join(OUT, "mem.pftrace")
    rss8 = peak_rss_mb("merge", "-q", "-j", "2", few, "-o", out)
    rss48 = peak_rss_mb("merge", "-q", "-j", "2", many, "-o", out)
    one48 = peak_rss_mb("merge", "-q", "-j", "1", many, "-o", out)
    print("merge -j 2 to .pftrace, max RSS: 8 ranks %.1f MB, 48 ranks %.1f MB (-j 1: %.1f MB)"
          % (rss8, rss48, one48))
    # Before the mapped arrays (merge.c, mallopt) 48 ranks took 4.5 MB more than 8.
    if rss48 > rss8 + MARGIN_MB:
        FAILED.append("merge -j 2: 48 ranks took %.1f MB more than 8 (at most %d): memory grows "
                      "with the ranks" % (rss48 - rss8, MARGIN_MB))
    shutil.rmtree(many, ignore_errors=True)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    job = os.path.join(OUT, "job")
    make_job(job)
    wants = list(same_bytes(job))
    bad = unreadable(job)
    validate()
    mpi(job, bad, [w for w in wants if w[1] and w[1][0] == 0])
    memory()
    for f in FAILED:
        print("FAIL:", f)
    if FAILED:
        sys.exit(1)
    print("check_merge_jobs: ok")


main()

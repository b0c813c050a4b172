"""jobgen.py: rank traces of a made-up job, as strobe's recording side writes them (issue 20's
contract: distributedInfo, strobe_job, strobe_clock_sync), for check_merge.py and the merge
benchmark (bench/bench_merge.sh).

A rank's clock is skewed from rank 0's: its time t is t + O + (t - T) * D / 1e9 on rank 0's clock
(the contract). local_ns() inverts that, so that an event can be placed at a true time (rank 0's
clock) and written at the rank's own time; ref_ns() maps back the way the contract says, exactly
(Fractions, rounded half away from zero), which is what the merge must give.

    python3 jobgen.py big DIR RANKS MB   writes RANKS traces of about MB megabytes each into DIR
"""
import json
import os
import sys
from decimal import Decimal
from fractions import Fraction

# The true time (rank 0's clock) the job starts at: an epoch time in ns, as strobe writes.
T0 = 1_760_000_000_000_000_000


def round_half_away(q):
    """The integer nearest to the Fraction q, halves away from zero."""
    n = abs(q)
    r = int(n + Fraction(1, 2))
    return r if q >= 0 else -r


class Clock:
    """A rank's clock against rank 0's: offset_ns O, drift_ppb D, t_ref_ns T."""

    def __init__(self, offset_ns=0, drift_ppb=0, t_ref_ns=T0):
        self.o, self.d, self.t = offset_ns, drift_ppb, t_ref_ns

    def ref_ns(self, t):
        """Rank time t on rank 0's clock, as the contract defines it (rounded to the ns)."""
        return t + self.o + round_half_away(Fraction(t - self.t) * Fraction(self.d) / 10**9)

    def local_ns(self, tau):
        """The rank time whose ref_ns is (within 1 ns) the true time tau."""
        k = 1 + Fraction(self.d) / 10**9
        return round_half_away((tau - self.o + Fraction(self.t) * (k - 1)) / k)

    def sync(self, uncertainty_ns=800):
        return {"method": "mpi-pingpong", "reference_rank": 0, "offset_ns": self.o,
                "drift_ppb": self.d, "t_ref_ns": self.t, "uncertainty_ns": uncertainty_ns,
                "round_trip_ns": 2 * uncertainty_ns, "samples": 100}


def us(ns, base):
    """ns as Kineto's ts: microseconds after base, three decimals, exact."""
    return Decimal(ns - base) / 1000


def rank_trace(rank, world, job, host, pid, clock, events, with_sync=True):
    """The trace document of one rank. events: (ph, pid, tid, name, cat, t_local, dur, extra)."""
    base = min(e[5] for e in events) - 1000
    doc = {"schemaVersion": 1, "deviceProperties": [],
           "distributedInfo": {"backend": "mpi", "rank": rank, "world_size": world,
                               "local_rank": rank % 2},
           "strobe_job": {"id": job, "host": host, "pid": pid}}
    if with_sync:
        doc["strobe_clock_sync"] = clock.sync() if rank else Clock().sync(0)
    doc["baseTimeNanoseconds"] = base
    evs = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": pid, "args": {"name": "main"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0,
         "args": {"sort_index": 16777216}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
    ]
    for ph, p, tid, name, cat, t, dur, extra in events:
        e = {"ph": ph, "cat": cat, "name": name, "pid": p, "tid": tid, "ts": us(t, base)}
        if ph == "X":
            e["dur"] = Decimal(dur) / 1000
        e.update(extra)
        evs.append(e)
    doc["traceEvents"] = evs
    doc["traceName"] = "rank %d" % rank
    return doc


def dump(doc, path):
    """Writes doc with Decimal numbers as written (no float rounding)."""
    def conv(o):
        if isinstance(o, Decimal):
            return "@@%s@@" % format(o, "f")
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        if isinstance(o, list):
            return [conv(v) for v in o]
        return o

    text = json.dumps(conv(doc))
    text = text.replace('"@@', "").replace('@@"', "")
    with open(path, "w") as f:
        f.write(text)
    return path


# When, in a step, every rank leaves the barrier (true time, after the step's start).
BARRIER_END = 950_000


def step_events(pid, clock, tau, corr, step, rank=0):
    """One training step of a rank starting at true time tau: a step range, a launch with its
    kernel (flow by correlation), and an MPI barrier that the rank enters at a time of its own
    and that every rank leaves at tau + BARRIER_END."""
    L = clock.local_ns
    ev = []
    b0, b1 = L(tau + 500_000 + 37_000 * (rank % 8)), L(tau + BARRIER_END)
    ev.append(("X", pid, pid, "MPI_Barrier", "user_annotation", b0, b1 - b0, {}))
    ev.append(("X", pid, pid, "ProfilerStep#%d" % step, "user_annotation", L(tau), 1000_000, {}))
    ev.append(("X", pid, pid, "cudaLaunchKernel", "cuda_runtime", L(tau + 10_000), 5_000,
               {"args": {"correlation": corr, "External id": corr}}))
    ev.append(("s", pid, pid, "ac2g", "ac2g", L(tau + 10_000), 0, {"id": corr, "bp": "e"}))
    ev.append(("X", 0, 7, "gemm_kernel", "kernel", L(tau + 20_000), 100_000,
               {"args": {"correlation": corr, "stream": 7, "device": 0}}))
    ev.append(("f", 0, 7, "ac2g", "ac2g", L(tau + 20_000), 0, {"id": corr, "bp": "e"}))
    return ev


def big(folder, ranks, mb):
    """RANKS traces of about MB megabytes each (steps of the shape above), written as a stream
    of events from one text template per rank, so that the generator itself stays small and
    fast (its times in float arithmetic: a benchmark's, not check_merge.py's exact ones)."""
    os.makedirs(folder, exist_ok=True)
    tmpl = (',\n{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%(step)d", '
            '"pid": %(pid)d, "tid": %(pid)d, "ts": %(t0)s, "dur": 1000.000}'
            ',\n{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %(pid)d, '
            '"tid": %(pid)d, "ts": %(t1)s, "dur": 5.000, "args": {"correlation": %(c)d, '
            '"External id": %(c)d}}'
            ',\n{"ph": "s", "cat": "ac2g", "name": "ac2g", "pid": %(pid)d, "tid": %(pid)d, '
            '"ts": %(t1)s, "id": %(c)d, "bp": "e"}'
            ',\n{"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, '
            '"ts": %(t2)s, "dur": 100.000, "args": {"correlation": %(c)d, "stream": 7, '
            '"device": 0}}'
            ',\n{"ph": "f", "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": %(t2)s, '
            '"id": %(c)d, "bp": "e"}'
            ',\n{"ph": "X", "cat": "user_annotation", "name": "MPI_Barrier", "pid": %(pid)d, '
            '"tid": %(pid)d, "ts": %(t3)s, "dur": %(bd)s}')
    for r in range(ranks):
        clock = Clock(offset_ns=1_000_000 * r, drift_ppb=100 * r)
        pid = 40000 + r
        path = os.path.join(folder, "rank%d.json" % r)
        base = T0 - 10_000

        def loc(tau):
            return int(round((tau - clock.o + clock.t * clock.d / 1e9) / (1 + clock.d / 1e9)))

        def fus(ns):
            return "%d.%03d" % divmod(ns - base, 1000)

        head = {"schemaVersion": 1, "deviceProperties": [],
                "distributedInfo": {"backend": "mpi", "rank": r, "world_size": ranks},
                "strobe_job": {"id": "bench", "host": "node-%d" % (r // 8), "pid": pid},
                "strobe_clock_sync": clock.sync() if r else Clock().sync(0),
                "baseTimeNanoseconds": base}
        with open(path, "w") as f:
            text = json.dumps(head)
            f.write(text[:-1] + ', "traceEvents": [\n')
            f.write('{"ph": "M", "name": "process_name", "pid": %d, "tid": 0, '
                    '"args": {"name": "python"}},\n' % pid)
            f.write('{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, '
                    '"args": {"name": "GPU 0"}}')
            size, step, t = 0, 0, T0
            while size < mb * 1_000_000:
                b0, b1 = loc(t + 500_000 + 37_000 * (r % 8)), loc(t + BARRIER_END)
                chunk = tmpl % {"step": step, "pid": pid, "c": step + 1, "t0": fus(loc(t)),
                                "t1": fus(loc(t + 10_000)), "t2": fus(loc(t + 20_000)),
                                "t3": fus(b0), "bd": "%d.%03d" % divmod(b1 - b0, 1000)}
                f.write(chunk)
                size += len(chunk)
                step += 1
                t += 2_000_000
            f.write('\n], "traceName": "rank %d"}\n' % r)


def mpi_launcher():
    """The mpirun command line the tests launch with, or None after saying why the MPI part is
    skipped: without mpirun, or under the sanitizers (STROBE_TEST_NO_MPI: Open MPI's libraries are
    not built with them; LeakSanitizer reports their allocations at exit and ThreadSanitizer their
    threads, and CI's runs exited 134 or 66)."""
    import shutil
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        print("mpirun absent: the MPI part skipped")
        return None
    if os.environ.get("STROBE_TEST_NO_MPI"):
        print("the MPI part skipped: %s" % os.environ["STROBE_TEST_NO_MPI"])
        return None
    return [mpirun, "--allow-run-as-root", "--oversubscribe"]


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "big":
        big(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""check_mpi_trace.py: the per-rank traces of tests/mpi/mpi_prog.c recorded by
`strobe record --mpi` (test_mpi_record.sh).

Usage: check_mpi_trace.py --world W [--skew R=NS[,R=NS...]] [--init MPI_Init_thread]
                          TRACE_0 ... TRACE_{W-1}

For each rank r, the calls mpi_prog.c makes are worked out again from r and W (its header says
which) and each must be in the trace, in order, with its args: Kineto's collective args ("Collective
name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "Process Group Ranks") and, for
point-to-point, "bytes", "peer", "tag"; every nonblocking call's "request" listed in the "completes"
of the wait that finished it. distributedInfo gives the rank, the world size and the local rank (one
machine: the rank), strobe_job the same job on this host for every rank.

Clocks: rank r ran with STROBE_CLOCK_SKEW_NS = skew[r] (0 when not given). The skew must show in
the trace (each barrier ends skew[r] - skew[0] later on rank r than on rank 0, within 5 ms), and the
recorded offset must cancel it: |offset_ns + skew[r] - skew[0]| <= uncertainty_ns + MARGIN_NS
(the processes share one clock, so the true offset is the skew alone). With the offsets applied,
no rank leaves a barrier before every rank has entered it (within the uncertainties + MARGIN_NS).
Prints the errors measured; exit 0 when all hold, 1 otherwise."""
import json
import socket
import sys

MARGIN_NS = 200_000
BARRIERS = 20
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def load(path):
    with open(path) as f:
        return json.load(f)


def expected_calls(r, w, init="MPI_Init"):
    """(name, args that must match) in the order rank r makes them; "req:X" / "done:[X..]" name
    requests symbolically."""
    right, left = (r + 1) % w, (r - 1 + w) % w
    group = {"Group size": w, "Process Group Ranks": "[" + ", ".join(str(i) for i in range(w)) + "]"}

    def p2p(kind, n, dtype, size, peer, tag, **extra):
        a = {"Collective name": kind, "In msg nelems": n, "Out msg nelems": n, "dtype": dtype,
             "bytes": n * size, "peer": peer, "tag": tag}
        a.update(group)
        a.update(extra)
        return a

    def coll(name, n_in, n_out, dtype=None, root=None):
        a = {"Collective name": name, "In msg nelems": n_in, "Out msg nelems": n_out}
        a.update(group)
        if dtype:
            a["dtype"] = dtype
        if root is not None:
            a["Root"] = root
        return a

    calls = [(init, {})]
    send = ("MPI_Send", p2p("send", 100 + r, "Int", 4, right, 7 + r))
    recv = ("MPI_Recv", p2p("recv", 100 + left, "Int", 4, left, 7 + left))
    calls += [send, recv] if r % 2 == 0 else [recv, send]
    calls += [
        ("MPI_Irecv", p2p("recv", 50, "Double", 8, left, 11, request="req:a")),
        ("MPI_Isend", p2p("send", 50, "Double", 8, right, 11, request="req:b")),
        ("MPI_Waitall", {"completes": "done:a,b"}),
        ("MPI_Isend", p2p("send", 10, "Char", 1, right, 12, request="req:c")),
        ("MPI_Irecv", p2p("recv", 10, "Char", 1, left, 12, request="req:d")),
        ("MPI_Wait", {"completes": "done:c"}),
        ("MPI_Wait", {"completes": "done:d"}),
        ("MPI_Irecv", p2p("recv", 4, "Int", 4, left, 13, request="req:e")),
        ("MPI_Irecv", p2p("recv", 6, "Int", 4, left, 14, request="req:f")),
        ("MPI_Isend", p2p("send", 4, "Int", 4, right, 13, request="req:g")),
        ("MPI_Isend", p2p("send", 6, "Int", 4, right, 14, request="req:h")),
        ("MPI_Waitany", {"completes": "any:e,f"}),
        ("MPI_Waitany", {"completes": "any:e,f"}),
        ("MPI_Waitall", {"completes": "done:g,h"}),
        ("MPI_Sendrecv", dict(group, **{"Collective name": "sendrecv", "In msg nelems": 5,
                                        "Out msg nelems": 5, "dtype": "Int", "bytes": 20,
                                        "peer": right, "tag": 15, "recv bytes": 20,
                                        "recv peer": left, "recv tag": 15})),
        ("MPI_Send", p2p("send", 3, "Int", 4, right, 16)),
        ("MPI_Probe", {"peer": left, "tag": 16}),
        ("MPI_Recv", p2p("recv", 3, "Int", 4, left, 16)),
    ]
    for k in range(2):
        calls += [("MPI_Start", {"request": "req:p%d" % k}),
                  ("MPI_Start", {"request": "req:q%d" % k}),
                  ("MPI_Wait", {"completes": "done:p%d" % k}),
                  ("MPI_Wait", {"completes": "done:q%d" % k})]
    calls += [
        ("MPI_Bcast", coll("broadcast", 1000, 1000, "Int", 0)),
        ("MPI_Allreduce", coll("allreduce", 256, 256, "Double")),
        ("MPI_Allgather", coll("allgather", 3, 3 * w, "Int")),
        ("MPI_Alltoall", coll("all_to_all", 2 * w, 2 * w, "Int")),
    ]
    if w > 1:
        calls.append(("MPI_Reduce", coll("reduce", 64, 64 if r == 1 else 0, "Float", 1)))
    half = [i for i in range(w) if i % 2 == r % 2]
    sub = coll("allreduce", 8, 8, "Double")
    sub.update({"Group size": len(half),
                "Process Group Ranks": "[" + ", ".join(str(i) for i in half) + "]"})
    calls.append(("MPI_Allreduce", sub))
    calls += [("MPI_Barrier", coll("barrier", 0, 0))] * BARRIERS
    calls.append(("MPI_Finalize", {}))
    return calls


def check_calls(r, w, trace, init):
    evs = sorted((e for e in trace["traceEvents"]
                  if e.get("ph") == "X" and str(e.get("name", "")).startswith("MPI_")),
                 key=lambda e: e["ts"])
    want = expected_calls(r, w, init)
    if [e["name"] for e in evs] != [n for n, _ in want]:
        fail("rank %d: MPI calls %s, expected %s" % (r, [e["name"] for e in evs],
                                                    [n for n, _ in want]))
        return []
    reqs = {}
    anys = {}
    for e, (name, args) in zip(evs, want):
        got = e.get("args", {})
        if e.get("cat") != "cpu_op":
            fail("rank %d: %s has cat %r" % (r, name, e.get("cat")))
        for k, v in args.items():
            if isinstance(v, str) and v.startswith("req:"):
                if not isinstance(got.get(k), int):
                    fail("rank %d: %s has no request number: %r" % (r, name, got))
                else:
                    reqs[v[4:]] = got[k]
            elif isinstance(v, str) and v.startswith("done:"):
                ids = [reqs.get(x) for x in v[5:].split(",")]
                if got.get(k) != ids:
                    fail("rank %d: %s completes %r, expected %r" % (r, name, got.get(k), ids))
            elif isinstance(v, str) and v.startswith("any:"):
                # One of the requests each time; together, each of them once.
                ids = got.get(k)
                anys.setdefault(v, []).extend(ids if isinstance(ids, list) else [ids])
                if not isinstance(ids, list) or len(ids) != 1:
                    fail("rank %d: %s completes %r, expected one request" % (r, name, ids))
            elif got.get(k) != v:
                fail("rank %d: %s arg %r = %r, expected %r" % (r, name, k, got.get(k), v))
    for v, ids in anys.items():
        want_ids = sorted(reqs.get(x) for x in v[4:].split(","))
        if sorted(i for i in ids if isinstance(i, int)) != want_ids:
            fail("rank %d: the waits complete %r, expected %r" % (r, ids, want_ids))
    if len(set(reqs.values())) != len(reqs):
        fail("rank %d: request numbers repeat: %r" % (r, reqs))
    return evs


def main(argv):
    w = 0
    init = "MPI_Init"
    skew = {}
    files = []
    i = 1
    while i < len(argv):
        if argv[i] == "--world":
            w = int(argv[i + 1])
            i += 2
        elif argv[i] == "--init":
            init = argv[i + 1]
            i += 2
        elif argv[i] == "--skew":
            for part in argv[i + 1].split(","):
                rk, ns = part.split("=")
                skew[int(rk)] = int(ns)
            i += 2
        else:
            files.append(argv[i])
            i += 1
    if w < 2 or len(files) != w:
        print("usage: check_mpi_trace.py --world W [--skew R=NS,...] TRACE_0 ... TRACE_{W-1}")
        return 2
    traces = [load(f) for f in files]
    host = socket.gethostname()
    jobs = set()
    barriers = []
    syncs = []
    for r, t in enumerate(traces):
        di = t.get("distributedInfo")
        want = {"backend": "mpi", "rank": r, "world_size": w, "local_rank": r}
        if di != want:
            fail("rank %d: distributedInfo %r, expected %r" % (r, di, want))
        job = t.get("strobe_job", {})
        if job.get("host") != host or not isinstance(job.get("pid"), int):
            fail("rank %d: strobe_job %r (host %s)" % (r, job, host))
        jobs.add(job.get("id"))
        evs = check_calls(r, w, t, init)
        base = t["baseTimeNanoseconds"]
        barriers.append([(base + round(e["ts"] * 1000), base + round((e["ts"] + e["dur"]) * 1000))
                         for e in evs if e["name"] == "MPI_Barrier"])
        cs = t.get("strobe_clock_sync")
        if not isinstance(cs, dict):
            fail("rank %d: no strobe_clock_sync" % r)
            return 1
        syncs.append(cs)
    if len(jobs) != 1 or None in jobs:
        fail("the ranks' strobe_job ids differ or are missing: %r" % jobs)
    if len(failures) or any(len(b) != BARRIERS for b in barriers):
        return 1

    s0 = skew.get(0, 0)
    for r, cs in enumerate(syncs):
        for k in ("method", "reference_rank", "offset_ns", "drift_ppb", "t_ref_ns",
                  "uncertainty_ns", "round_trip_ns", "samples"):
            if k not in cs:
                fail("rank %d: strobe_clock_sync lacks %s: %r" % (r, k, cs))
        if cs.get("method") != "mpi-pingpong" or cs.get("reference_rank") != 0:
            fail("rank %d: strobe_clock_sync %r" % (r, cs))
        if r == 0:
            if cs["offset_ns"] != 0 or cs["drift_ppb"] != 0:
                fail("rank 0 must write offset 0 and drift 0: %r" % cs)
            continue
        if cs["samples"] <= 0 or cs["round_trip_ns"] <= 0 or cs["uncertainty_ns"] <= 0:
            fail("rank %d: no measurement in %r" % (r, cs))
        true = s0 - skew.get(r, 0)
        err = cs["offset_ns"] - true
        print("rank %d: skew %+d ns, offset %+d ns, error %+d ns, uncertainty %d ns, round trip "
              "%d ns, drift %.1f ppb" % (r, skew.get(r, 0), cs["offset_ns"], err,
                                         cs["uncertainty_ns"], cs["round_trip_ns"],
                                         cs["drift_ppb"]))
        if abs(err) > cs["uncertainty_ns"] + MARGIN_NS:
            fail("rank %d: offset error %d ns beyond uncertainty %d + %d ns" %
                 (r, err, cs["uncertainty_ns"], MARGIN_NS))
        # The skew shows in the trace: rank r's barrier exits lie skew[r] - skew[0] after rank 0's.
        lag = sorted(barriers[r][i][1] - barriers[0][i][1] for i in range(BARRIERS))
        median = lag[BARRIERS // 2]
        if abs(median - (skew.get(r, 0) - s0)) > 5_000_000:
            fail("rank %d: barrier exits lie %d ns after rank 0's; the skew is %d ns" %
                 (r, median, skew.get(r, 0) - s0))

    def aligned(r, t):
        cs = syncs[r]
        return t + cs["offset_ns"] + (t - cs["t_ref_ns"]) * cs["drift_ppb"] / 1e9

    tol = sum(cs["uncertainty_ns"] for cs in syncs) + MARGIN_NS
    worst = None
    spreads = []
    for i in range(BARRIERS):
        last_in = max(aligned(r, barriers[r][i][0]) for r in range(w))
        ends = [aligned(r, barriers[r][i][1]) for r in range(w)]
        gap = last_in - min(ends)
        worst = gap if worst is None else max(worst, gap)
        spreads.append(max(ends) - min(ends))
    spreads.sort()
    print("aligned barriers: exits spread over %d ns (median), %d ns (max); the latest entry "
          "minus the earliest exit: %d ns at worst (allowed %d)" %
          (spreads[len(spreads) // 2], spreads[-1], worst, tol))
    if worst > tol:
        fail("with the offsets applied, a rank left a barrier %d ns before the last rank entered "
             "it (allowed %d)" % (worst, tol))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

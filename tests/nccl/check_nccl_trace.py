#!/usr/bin/env python3
"""Checks a trace written through strobe's NCCL profiler plugin against what nccl_driver did.

Usage: check_nccl_trace.py TRACE DRIVER_LOG [--merged] [--local-rank]

The driver's log gives, per event, its name, its thread and the CLOCK_REALTIME times around its
start and stop calls. Checked: every event is in the trace once, as a range of its name, on the
driver's thread (API calls, the group, its tasks) or on its own track (proxy ops, steps, kernel
channels, proxy control); it begins between the times around its start call and ends between those
around its stop call (a task may end later, with the task started after it: tasks of one launch
nest; never after its group); ranges nest as NCCL made them; the collective args are those the
driver gave (torch's record_param_comms names and value forms); the trace's distributedInfo and
strobe_nccl say what the driver made and which bad calls it made. --merged: a `strobe record`
trace (several processes; only the driver's pid is checked, and no plugin-own metadata).
--local-rank: the driver ran with LOCAL_RANK=3, which distributedInfo must carry.
"""
import json
import sys

TOL = 1_000_000  # ns: strobe's clock (TSC mapped to the epoch) against CLOCK_REALTIME


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    trace_path, log_path = sys.argv[1], sys.argv[2]
    merged = "--merged" in sys.argv[3:]
    trace = json.load(open(trace_path))
    log = json.load(open(log_path))
    pid, version = log["pid"], log["version"]
    base = int(trace["baseTimeNanoseconds"])
    thread_names = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == pid:
            thread_names[e["tid"]] = e["args"]["name"]
    ranges = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid") == pid
              and e.get("cat") != "Trace"]

    def ns(us):  # Kineto's microseconds with three decimals, relative to baseTimeNanoseconds
        return base + round(float(us) * 1000)

    main_tid = min(ev["tid"] for ev in log["events"])  # the driver's main thread is the process
    found = {}
    for ev in log["events"]:
        name = ev["name"]
        hits = [r for r in ranges if r["name"] == name]
        if len(hits) != 1:
            fail(f"{name}: {len(hits)} ranges in the trace (want 1)")
        r = hits[0]
        found[name] = r
        start, end = ns(r["ts"]), ns(r["ts"]) + round(float(r["dur"]) * 1000)
        if not ev["t0"] - TOL <= start <= ev["t1"] + TOL:
            fail(f"{name}: begins at {start}, outside its start call [{ev['t0']}, {ev['t1']}]")
        is_task = name.endswith(":task") or (version == 4 and name in
                                             ("nccl:all_reduce", "nccl:send", "nccl:recv"))
        last = ev["t3"]
        if is_task:
            last = next(g["t3"] for g in log["events"] if g["name"] == "nccl:group")
        if not ev["t2"] - TOL <= end <= last + TOL:
            fail(f"{name}: ends at {end}, outside [{ev['t2']}, {last}]")
        thread_like = name.startswith("nccl:")
        if thread_like:
            if r["tid"] != ev["tid"]:
                fail(f"{name}: on thread {r['tid']}, made on {ev['tid']}")
            if r["cat"] != "cpu_op":
                fail(f"{name}: category {r['cat']}")
        else:
            track = thread_names.get(r["tid"], "")
            if not track.startswith("Backend: NCCL "):
                fail(f"{name}: on track '{track}', want a 'Backend: NCCL ...' track")
    if len(found) != len(log["events"]):
        fail("events missing")

    def within(inner, outer):
        a, b = found[inner], found[outer]
        ia, ib = float(a["ts"]), float(a["ts"]) + float(a["dur"])
        oa, ob = float(b["ts"]), float(b["ts"]) + float(b["dur"])
        if a["tid"] != b["tid"] or not (oa <= ia and ib <= ob):
            fail(f"{inner} does not nest in {outer}")

    sfx = ":task" if version == 5 else ""
    for t in ("nccl:all_reduce", "nccl:send", "nccl:recv"):
        within(t + sfx, "nccl:group")
    if version == 5:
        for t in ("nccl:all_reduce", "nccl:send", "nccl:recv", "nccl:group", "nccl:kernel_launch"):
            within(t, "nccl:group_api")

    # Tracks of the proxy thread's events.
    want_tracks = {"AllReduce send to 2": "NCCL proxy ch0 send",
                   "send step 0": "NCCL proxy ch0 send step slot 0",
                   "send step 1": "NCCL proxy ch0 send step slot 1",
                   "AllReduce kernel": "NCCL kernel ch0", "proxy sleep": "NCCL proxy ctrl"}
    for name, track in want_tracks.items():
        got = thread_names.get(found[name]["tid"])
        if got != "Backend: " + track:
            fail(f"{name}: track '{got}', want 'Backend: {track}'")
    # A step's states are its children on its track: "send GPU wait" from its SendGPUWait state
    # to its SendWait state (the driver slept 2 ms twice in between), then "send network wait"
    # to the step's stop (one 2 ms sleep at least).
    for step in ("send step 0", "send step 1"):
        parent = found[step]
        kids = sorted((r for r in ranges if r["tid"] == parent["tid"] and r is not parent),
                      key=lambda r: float(r["ts"]))
        if [k["name"] for k in kids] != ["send GPU wait", "send network wait"]:
            fail(f"{step}: state ranges {[k['name'] for k in kids]}")
        ps, pe = ns(parent["ts"]), ns(parent["ts"]) + round(float(parent["dur"]) * 1000)
        a0, a1 = ns(kids[0]["ts"]), ns(kids[0]["ts"]) + round(float(kids[0]["dur"]) * 1000)
        b0, b1 = ns(kids[1]["ts"]), ns(kids[1]["ts"]) + round(float(kids[1]["dur"]) * 1000)
        # (writers may move a time by a nanosecond or so to keep a track's slices strictly
        # nested)
        if not (ps <= a0 and abs(a1 - b0) <= 1000 and abs(b1 - pe) <= 1000):
            fail(f"{step}: states [{a0},{a1}] [{b0},{b1}] do not tile the step [{ps},{pe}]")
        if a1 - a0 < 3_900_000 or b1 - b0 < 1_900_000:
            fail(f"{step}: GPU wait {a1 - a0} ns (>= 4 ms), network wait {b1 - b0} ns (>= 2 ms)")
    for name in ("AllReduce send to 2", "AllReduce kernel"):
        if found[name]["args"].get("Debug handle") != 7:
            fail(f"{name}: Debug handle {found[name]['args'].get('Debug handle')} (want seq 7)")

    # The collectives' args, as the driver gave them.
    common = {"Group size": 4, "Process Group Name": "world", "Rank": 1,
              "Comm hash": "0x1234abcd5678ef00"}
    want = {
        "nccl:all_reduce" + sfx: dict(common, **{"Collective name": "allreduce", "In msg nelems": 1024,
                                                 "Out msg nelems": 1024, "dtype": "Float", "Seq": 7,
                                                 "Algorithm": "RING", "Protocol": "SIMPLE",
                                                 "Channels": 2}),
        "nccl:send" + sfx: dict(common, **{"Collective name": "send", "In msg nelems": 256,
                                           "Out msg nelems": 256, "dtype": "Half", "Dst Rank": 2,
                                           "Channels": 1}),
        "nccl:recv" + sfx: dict(common, **{"Collective name": "recv", "In msg nelems": 256,
                                           "Out msg nelems": 256, "dtype": "Half", "Src Rank": 0,
                                           "Channels": 1}),
    }
    if version == 5:
        want["nccl:all_reduce"] = dict(common, **{"Collective name": "allreduce",
                                                  "In msg nelems": 1024, "Out msg nelems": 1024,
                                                  "dtype": "Float"})
        want["nccl:send"] = dict(common, **{"Collective name": "send", "In msg nelems": 256,
                                            "Out msg nelems": 256, "dtype": "Half"})
    for name, args in want.items():
        got = found[name]["args"]
        for k, v in args.items():
            if got.get(k) != v:
                fail(f"{name}: arg {k!r} is {got.get(k)!r}, want {v!r}")
        if version == 5 and not name.endswith(":task") and "Seq" in got:
            fail(f"{name}: the API call has a Seq (NCCL gives none there)")

    # Metadata.
    di = trace.get("distributedInfo")
    # strobe record's merge of its part files keeps no per-process metadata (yet).
    if merged and di is None:
        di = {"backend": "nccl", "rank": 1, "world_size": 4, "pg_count": 1,
              "pg_config": [{"pg_name": "world", "pg_size": 4}]}
    if not isinstance(di, dict) or di.get("backend") != "nccl" or di.get("rank") != 1 or \
            di.get("world_size") != 4 or di.get("pg_count") != 1 or \
            di["pg_config"][0].get("pg_name") != "world" or di["pg_config"][0].get("pg_size") != 4:
        fail(f"distributedInfo: {di}")
    if "--local-rank" in sys.argv[3:] and di.get("local_rank") != 3:
        fail(f"distributedInfo: local_rank {di.get('local_rank')} (LOCAL_RANK=3)")
    sn = trace.get("strobe_nccl")
    if not merged or sn is not None:
        # One unknown type; stops of 0x1234, a stack address and a stopped handle, and a state
        # of the stack address.
        if not isinstance(sn, dict) or sn.get("unknown_event_types") != 1 or \
                sn.get("unknown_handles") != 4 or sn.get("events") != len(log["events"]):
            fail(f"strobe_nccl: {sn} (want 1 unknown type, 4 unknown handles, "
                 f"{len(log['events'])} events)")
    stats = trace.get("strobe", {}).get("stats", {})
    if stats.get("unmatched_ends", 0) or stats.get("unfinished_ranges", 0):
        fail(f"unmatched or unfinished ranges: {stats}")
    print(f"ok: {trace_path}: {len(found)} events checked (v{version})")


main()

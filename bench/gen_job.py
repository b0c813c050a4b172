#!/usr/bin/env python3
"""gen_job.py: writes the rank traces of a simulated data-parallel training job, to test and
measure `strobe ranks --collectives` (stragglers per collective) on as many ranks as wanted.

  bench/gen_job.py --ranks N --steps S [--slow RANK:STEP:MS]... [--noise-us U] [--size-mb MB]
                   [--skew RANK:MS]... [--no-seq] [--seed SEED] [--truth FILE] OUTDIR

Each rank's trace (OUTDIR/rank_<r>.json, Kineto's format, distributedInfo.rank r) has S steps
(ProfilerStep#k). A step is compute (cpu_op aten::mm, each launching a gemm kernel on stream 7)
whose length is the same on every rank but for uniform noise of 0..U us and the --slow delays,
then an allreduce: torch's record_param_comms (cat cpu_op) with the args torch and strobe's NCCL
plugin write ("Collective name", "Process Group Name", "Seq" = k, "Group size", ...), launching
an ncclKernel on stream 20 that ends on every rank when the last rank's has run. The next step
starts on every rank when the allreduce ends, so that clocks and step starts agree across ranks.
--slow RANK:STEP:MS (repeatable) makes RANK's compute in STEP longer by MS milliseconds.
--no-seq leaves "Seq" out (as strobe record --mpi does): the sequence is then the order.
--skew RANK:MS (repeatable) writes RANK's times MS ms late, with the "strobe_clock_sync" that
`strobe record` would have measured (offset_ns -MS ms), so that only aligned clocks agree.
--size-mb pads each trace to about MB megabytes with small cpu_op events on a thread of their
own before the first step (the same bytes in every file, written once: fast for 1,000 ranks).
--truth FILE writes what an exact analysis finds, computed here from the timeline: per
collective the last rank, wait_sum and wait_max (us), as JSON. Deterministic for a seed; only
Python's standard library."""
import argparse
import json
import os
import random
import sys

T0 = 1000000  # the first step's start, us (padding lies before it)
MM_PER_STEP = 4
COMPUTE_US = 8000  # per step, before noise and delays
COMM_US = 400  # the allreduce kernel once every rank is in
KERNEL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def parse_slow(text):
    try:
        r, s, ms = text.split(":")
        r, s, ms = int(r), int(s), float(ms)
    except ValueError:
        raise argparse.ArgumentTypeError("--slow needs RANK:STEP:MS, got %r" % text)
    if r < 0 or s < 0 or ms < 0 or ms * 1000 != int(ms * 1000):
        raise argparse.ArgumentTypeError("--slow needs RANK:STEP:MS (MS whole us), got %r" % text)
    return r, s, int(ms * 1000)


def padding(size_bytes, shift=0):
    """Small cpu_op events on tid 99, 1 us apart, before the first step: the same for every rank
    whose clock is not skewed (shift, us)."""
    ev = '{"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":99,"ts":%d,"dur":1},\n'
    n = max(0, size_bytes // (len(ev) + 6))
    n = min(n, T0 - 10)
    return "".join(ev % (10 + i + shift) for i in range(n))


def parse_skew(text):
    try:
        r, ms = text.split(":")
        r, ms = int(r), int(ms)
    except ValueError:
        raise argparse.ArgumentTypeError("--skew needs RANK:MS (whole ms), got %r" % text)
    if r < 0 or abs(ms) * 1000 >= T0 - 10:
        raise argparse.ArgumentTypeError("--skew needs RANK:MS, |MS| < %d, got %r" % (T0 // 1000 - 1, text))
    return r, ms


def main():
    ap = argparse.ArgumentParser(description="Writes the rank traces of a simulated job.")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--slow", type=parse_slow, action="append", default=[])
    ap.add_argument("--noise-us", type=int, default=100)
    ap.add_argument("--size-mb", type=float, default=0)
    ap.add_argument("--skew", type=parse_skew, action="append", default=[])
    ap.add_argument("--no-seq", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth")
    ap.add_argument("outdir")
    a = ap.parse_args()
    if a.ranks < 1 or a.steps < 1 or a.noise_us < 0:
        ap.error("--ranks and --steps need at least 1, --noise-us 0 or more")
    for r, s, _ in a.slow:
        if r >= a.ranks or s >= a.steps:
            ap.error("--slow %d:%d: no such rank or step" % (r, s))
    rnd = random.Random(a.seed)
    delay = {}
    for r, s, us in a.slow:
        delay[(r, s)] = delay.get((r, s), 0) + us
    os.makedirs(a.outdir, exist_ok=True)

    # The timeline, all ranks together: arrivals[k][r] is rank r's arrival at step k's allreduce.
    starts, arrivals, ends = [], [], []
    t = T0
    for k in range(a.steps):
        arr = [t + COMPUTE_US + rnd.randint(0, a.noise_us) + delay.get((r, k), 0)
               for r in range(a.ranks)]
        end = max(arr) + 10 + COMM_US
        starts.append(t)
        arrivals.append(arr)
        ends.append(end)
        t = end + 50

    pad_bytes = int(a.size_mb * 1e6)
    pad = padding(pad_bytes)
    skew = {r: ms * 1000 for r, ms in a.skew}
    for r in range(a.ranks):
        sh = skew.get(r, 0)
        out = []
        w = out.append
        corr = 1000
        for k in range(a.steps):
            s, arr, end = starts[k] + sh, arrivals[k][r] + sh, ends[k] + sh
            w('{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,'
              '"ts":%d,"dur":%d},\n' % (k, s, end + 20 - s))
            # Compute: MM_PER_STEP operators sharing [s + 5, arr - 5).
            span = arr - 10 - s
            for i in range(MM_PER_STEP):
                b = s + 5 + span * i // MM_PER_STEP
                e = s + 5 + span * (i + 1) // MM_PER_STEP
                corr += 1
                w('{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":%d,"dur":%d,'
                  '"args":{"External id":%d}},\n' % (b, e - b, corr))
                w('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,'
                  '"ts":%d,"dur":4,"args":{"correlation":%d,"External id":%d}},\n'
                  % (b + 1, corr, corr))
                w('{"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,'
                  '"ts":%d,"dur":%d,"args":{"stream":7,"correlation":%d,"External id":%d,'
                  '"device":0}},\n' % (b + 5, max(1, e - b - 6), corr, corr))
            # The allreduce: arrival, launch, and a kernel that ends when the last rank is in.
            corr += 1
            seq = '' if a.no_seq else '"Seq":%d,' % k
            w('{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":%d,'
              '"dur":20,"args":{"External id":%d,"Collective name":"allreduce","dtype":"Float",'
              '"In msg nelems":1048576,"Out msg nelems":1048576,"Group size":%d,'
              '"Process Group Name":"0","Process Group Description":"default_pg",%s"Rank":%d}},\n'
              % (arr, corr, a.ranks, seq, r))
            w('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,'
              '"ts":%d,"dur":8,"args":{"correlation":%d,"External id":%d}},\n'
              % (arr + 5, corr, corr))
            w('{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":20,"ts":%d,"dur":%d,'
              '"args":{"stream":20,"correlation":%d,"External id":%d,"device":0}},\n'
              % (KERNEL, arr + 10, end - arr - 10, corr, corr))
        body = "".join(out)
        with open(os.path.join(a.outdir, "rank_%d.json" % r), "w") as f:
            clock = ',"strobe_clock_sync":{"offset_ns":%d}' % (-sh * 1000) if sh else ""
            f.write('{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":%d,'
                    '"world_size":%d}%s,\n"traceEvents":[\n' % (r, a.ranks, clock))
            f.write(padding(pad_bytes, sh) if sh else pad)
            f.write(body)
            f.write('{"ph":"M","name":"process_name","pid":1,"tid":0,'
                    '"args":{"name":"python"}}\n]}\n')

    if a.truth:
        coll = []
        for k in range(a.steps):
            arr = arrivals[k]
            last = max(arr)
            lr = arr.index(last)  # the lowest of equal ones
            coll.append({"pg": "0", "seq": k, "last_rank": lr,
                         "wait_sum": sum(last - x for x in arr), "wait_max": last - min(arr)})
        with open(a.truth, "w") as f:
            json.dump({"collectives": coll}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""gen_compact.py: writes a compact Kineto-style trace of N small events (~73 bytes each), the worst
case for the CLI's memory per byte of JSON: few threads and names, nested cpu_op ranges, no args.

  bench/gen_compact.py [--events N] [--threads T] [--seed S] OUT.json

Each thread holds trees of ranges: a root with children, each with grandchildren, written in the
order a profiler that writes a range when it ends does (children before their parent), so that
loading has to sort. Deterministic for a given seed."""
import argparse
import random

NAMES = ["aten::add", "aten::mul", "aten::mm", "aten::relu", "aten::copy_", "aten::empty",
         "aten::view", "aten::sum", "aten::to", "aten::linear", "aten::addmm", "aten::t"]


def num(x):
    """x in microseconds, shortest: 1000000.25, 0.5, 3."""
    return ("%.3f" % x).rstrip("0").rstrip(".")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("out")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    clock = [1000000.0] * a.threads  # per thread, in us
    n = 0
    with open(a.out, "w") as f:
        f.write('{"traceEvents":[\n')
        while n < a.events:
            t = rnd.randrange(a.threads)
            ts = clock[t]
            # one tree: a root of k children, each of g grandchildren, 0.5 us apart
            k, g = rnd.randint(1, 4), rnd.randint(0, 3)
            out, cur = [], ts + 0.125
            kids = []
            for _ in range(k):
                c0 = cur
                for _ in range(g):
                    d = rnd.choice((0.25, 0.5, 0.75, 1.0))
                    out.append((cur + 0.125, d))
                    cur += d + 0.25
                cur += 0.25
                kids.append((c0, cur - c0))
                out.append(kids[-1])
                cur += 0.125
            out.append((ts, cur - ts + 0.125))
            for (s, d) in out:
                if n == a.events:
                    break
                f.write('%s{"ph":"X","cat":"cpu_op","name":"%s","pid":1,"tid":%d,"ts":%s,"dur":%s}'
                        % ("," if n else "", rnd.choice(NAMES), 7 + t, num(s), num(d)))
                n += 1
            clock[t] = cur + 2.0
        f.write("]}\n")


if __name__ == "__main__":
    main()

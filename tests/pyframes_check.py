"""pyframes_check.py FOLDED [--none]: checks `strobe stacks --samples` output of
pyframes_target.py (one line per stack: frames root first joined by ';', then a count).

Without --none: for the main thread (stacks through spin_main) and the threading.Thread (through
thread_main), at least 80% of the samples have the thread's hot function as their innermost Python
frame, and there are at least 50 of each; of the samples through compress_loop, at least half have
native frames (libz) above (leafward of) the innermost Python frame, compress_loop. With --none:
no frame is a Python frame. Prints the counts; exits 1 on a failure."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_profile import PY, py_func as func  # noqa: E402


def main():
    lines = open(sys.argv[1]).read().splitlines()
    stacks = []
    for line in lines:
        head, _, count = line.rpartition(" ")
        stacks.append((head.split(";"), int(count)))
    pyframes = sum(n for fr, n in stacks if any(PY.search(f) for f in fr))
    if "--none" in sys.argv:
        print("samples with Python frames: %d" % pyframes)
        return 0 if pyframes == 0 else 1
    fail = 0
    for outer, hot in (("spin_main", "hot_main"), ("thread_main", "hot_thread")):
        total = top = 0
        for fr, n in stacks:
            if not any(func(f) == outer for f in fr):
                continue
            total += n
            inner = [f for f in fr if PY.search(f)][-1]
            top += n if func(inner) == hot else 0
        ok = total >= 50 and top >= 0.8 * total
        print("%s: %d samples, %d with %s innermost%s" % (outer, total, top, hot,
                                                          "" if ok else "  FAIL"))
        fail |= not ok
    total = above = 0
    for fr, n in stacks:
        if not any(func(f) == "compress_loop" for f in fr):
            continue
        total += n
        last = max(i for i, f in enumerate(fr) if PY.search(f))
        above += n if func(fr[last]) == "compress_loop" and any(
            "libz" in f or "deflate" in f for f in fr[last + 1:]) else 0
    ok = total >= 50 and above >= 0.5 * total
    print("compress_loop: %d samples, %d with libz frames above it%s" % (total, above,
                                                                           "" if ok else "  FAIL"))
    fail |= not ok
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())

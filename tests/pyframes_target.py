"""pyframes_target.py: a Python program with known hot functions, for test_pyframes.sh and
python/tests/test_pyframes.py: the main thread spins in hot_main (pure Python), a
threading.Thread spins in hot_thread, and compress_loop calls zlib.compress on 1 MiB (its time
is in libz's C code, below the Python caller). Each part runs about SECONDS seconds (argv[1],
default 0.6)."""
import os
import sys
import threading
import time
import zlib


def hot_main(deadline):
    s = 0
    while time.monotonic() < deadline:
        for i in range(2000):
            s += i * i
    return s


def spin_main(seconds):
    return hot_main(time.monotonic() + seconds)


def hot_thread(deadline):
    s = 0
    while time.monotonic() < deadline:
        for i in range(2000):
            s ^= i * 3
    return s


def thread_main(seconds):
    hot_thread(time.monotonic() + seconds)


def compress_loop(seconds):
    data = os.urandom(1 << 20)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        zlib.compress(data, 9)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6
    t = threading.Thread(target=thread_main, args=(seconds,), name="py_worker")
    t.start()
    spin_main(seconds)
    compress_loop(seconds)
    t.join()


if __name__ == "__main__":
    main()

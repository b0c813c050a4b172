"""Python frames in strobe.profiler's CPU samples (experimental_config={"cpu_sample_hz": HZ,
"python_frames": BOOL}): the sampled
stacks of a hot pure-Python function, on the main thread and on a threading.Thread, have that
function as their innermost Python frame ("file.py(line): function", as torch names frames);
python_frames=False leaves Python frames out. Skips where the interpreter is not CPython 3.11 or
3.12, or where perf sampling is refused."""
import json
import os
import sys
import tempfile
import threading
import time
import unittest

from strobe.profiler import profile

# The repository's tests/cpu_profile.py reads the samples (Chrome's CPU profile events) back.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from cpu_profile import PY, samples_by_tid, py_func as func  # noqa: E402

OUT = os.environ.get("STROBE_TEST_TRACE_DIR")


def hot_main(seconds):
    s, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for i in range(2000):
            s += i * i
    return s


def hot_thread(seconds):
    s, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for i in range(2000):
            s ^= i * 3
    return s


class Refused(Exception):
    pass


def samples(path):
    """{tid: [Call stack frames, innermost first]} of the trace's cpu_sample events. Raises
    Refused where the trace says sampling was not done (perf_event_open refused)."""
    with open(path) as f:
        text = f.read()
    if "CPU sampling requested but not done" in text:
        raise Refused()
    return samples_by_tid(json.loads(text))


def record(tmp, name, **kw):
    path = os.path.join(OUT or tmp, name)
    t = threading.Thread(target=hot_thread, args=(0.6,), name="py_worker")
    with profile(experimental_config=dict(cpu_sample_hz=1000, **kw)) as prof:
        t.start()
        hot_main(0.6)
        t.join()
    prof.export_chrome_trace(path)
    return path, t.native_id


@unittest.skipUnless(sys.implementation.name == "cpython" and sys.version_info[:2] in
                     ((3, 11), (3, 12)), "Python frames need CPython 3.11 or 3.12")
class PythonFramesTest(unittest.TestCase):
    def test_hot_functions_innermost(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, worker = record(tmp, "pyframes_on.json")
            try:
                by_tid = samples(path)
            except Refused:
                self.skipTest("perf_event_open refused here")
        main = threading.main_thread().native_id
        for tid, hot in ((main, "hot_main"), (worker, "hot_thread")):
            stacks = [s for s in by_tid.get(tid, []) if any(func(f) == hot for f in s)]
            self.assertGreaterEqual(len(stacks), 100, "%s: %d samples in it" % (hot, len(stacks)))
            top = sum(1 for s in stacks if func([f for f in s if PY.search(f)][0]) == hot)
            self.assertGreaterEqual(top, 0.8 * len(stacks), "%s innermost in %d of %d samples"
                                    % (hot, top, len(stacks)))
            self.assertTrue(any(os.path.basename(__file__) in f for f in stacks[0] if PY.search(f)),
                            stacks[0])

    def test_off(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, _ = record(tmp, "pyframes_off.json", python_frames=False)
            try:
                by_tid = samples(path)
            except Refused:
                self.skipTest("perf_event_open refused here")
        self.assertTrue(by_tid, "no CPU samples")
        with_py = sum(1 for v in by_tid.values() for s in v if any(PY.search(f) for f in s))
        self.assertEqual(with_py, 0)

    def test_bad_rate(self):
        for bad in ({"cpu_sample_hz": -1}, {"cpu_sample_hz": 20000}, {"cpu_sample_hz": "1"},
                    {"cpu_samples_hz": 100}):
            with self.assertRaises(ValueError):
                profile(experimental_config=bad)


if __name__ == "__main__":
    unittest.main()

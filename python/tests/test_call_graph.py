"""strobe.profiler's CPU sampling keywords (cpu_sample_hz, call_graph; strobe's own, torch has
none): the call graph asked for is the one the trace's "strobe_cpu_sampling" names, and a bad
one is a ValueError before anything starts."""
import json
import os
import sys
import tempfile
import time
import unittest

from strobe.profiler import profile

# The repository's tests/cpu_profile.py reads the samples (Chrome's CPU profile events) back.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from cpu_profile import samples_by_tid  # noqa: E402

OUT = os.environ.get("STROBE_TEST_TRACE_DIR")


def spin_cpu(ms):
    end = time.thread_time() + ms / 1000.0
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def sampling_meta(prof):
    path = tempfile.mktemp(suffix=".json", dir=OUT)
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    samples = [st for v in samples_by_tid(trace).values() for st in v]
    return trace.get("strobe_cpu_sampling"), samples


class CallGraphTest(unittest.TestCase):
    def run_graph(self, graph):
        with profile(cpu_sample_hz=1000, call_graph=graph) as prof:
            spin_cpu(200)
        return sampling_meta(prof)

    def test_fp(self):
        meta, samples = self.run_graph("fp")
        if meta is None:
            self.skipTest("perf_event_open refused: no sampling")
        self.assertEqual(meta["callchain"], "frame pointers, user space")
        self.assertGreater(len(samples), 20)

    def test_dwarf(self):
        try:
            meta, samples = self.run_graph("dwarf,4096")
        except ValueError as e:
            self.skipTest(str(e))  # not built in, or libdw.so.1 missing: said so
        if meta is None:
            self.skipTest("perf_event_open refused: no sampling")
        self.assertEqual(meta["callchain"], "dwarf, user space")
        self.assertEqual(meta["stack_bytes"], 4096)
        self.assertGreater(len(samples), 20)

    def test_bad_graph(self):
        for bad in ("lbr", "dwarf,", "dwarf,x", "dwarf,70000", "fp,8"):
            with self.assertRaises(ValueError, msg=bad):
                with profile(cpu_sample_hz=1000, call_graph=bad):
                    pass


if __name__ == "__main__":
    unittest.main()

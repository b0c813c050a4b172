"""torch.profiler and strobe.profiler on the same torch workload, in one process (issue 30).

The workload (forward, backward and an optimizer step of a small model, record_function ranges,
ops in a second thread) runs first under torch.profiler, then under strobe.profiler, each time
from the same fresh state (seeded model and optimizer), with record_shapes and profile_memory.
Where both can see the same thing the rows must agree: names and call counts exactly, the groups
of key_averages(group_by_input_shape=True) exactly, CPU Mem and Self CPU Mem per row exactly, CPU
times within noise. Debian's torch 1.13 is built without Kineto: its profiler is the legacy one,
which sees only the threads that inherit its thread-local state (not a plain threading.Thread),
so the rows compared are the profiling thread's; strobe's observer sees every thread, which is
checked apart. A run with with_stack=True and a schedule checks the ProfilerStep ranges and the
operators' Call stacks.

Skipped, with the reason, where torch is not importable or the torch observer is not built.
Traces go to STROBE_TEST_TRACE_DIR (for the checkers)."""
import collections
import json
import os
import sys
import tempfile
import threading
import unittest
import warnings

OUT = os.environ.get("STROBE_TEST_TRACE_DIR")


def _setup():
    """(torch, strobe.profiler) or the reason to skip."""
    try:
        import torch  # noqa: F401: the test's workload; strobe.profiler never imports it
    except Exception as e:  # noqa: BLE001
        return "torch is not importable (%s): Debian's python3-torch gives it" % e
    import strobe.profiler
    try:
        from strobe import _torch
        _torch.load()
    except Exception as e:  # noqa: BLE001
        return "the torch observer is unavailable: %s" % e
    return None


class Workload:
    """A seeded model and optimizer, fresh for each profiler, so that both runs do the same."""

    def __init__(self, torch):
        import torch.nn as nn
        self.torch = torch
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.x = torch.randn(32, 64)
        self.y = torch.randint(0, 10, (32,))
        self.side_input = torch.randn(16, 16)

    def iteration(self, rf):
        import torch.nn.functional as F
        with rf("forward"):
            loss = F.cross_entropy(self.model(self.x), self.y)
        with rf("backward"):
            loss.backward()
        with rf("optimizer"):
            self.opt.step()
            self.opt.zero_grad()

    def side(self, rf):
        for _ in range(3):
            with rf("side"):
                self.torch.mm(self.side_input, self.side_input).relu_()

    def run(self, rf, iterations=3, step=None):
        for _ in range(iterations):
            self.iteration(rf)
            if step is not None:
                step()
        t = threading.Thread(target=self.side, args=(rf,))
        t.start()
        t.join()
        return t.native_id


def rows(events, group_by_input_shape=False):
    """key (name, and shapes when grouped) -> (count, CPU Mem, Self CPU Mem, CPU total us,
    FLOPs)."""
    out = {}
    for a in events.key_averages(group_by_input_shape):
        key = (a.key, str(a.input_shapes)) if group_by_input_shape else a.key
        out[key] = (a.count, a.cpu_memory_usage, a.self_cpu_memory_usage, a.cpu_time_total,
                    a.flops)
    return out


def tie_free(events):
    """The keys of torch's rows whose events nest unambiguously at whole microseconds, where
    torch 1.13 rebuilds its tree: each event, and each of its children, lasts at least a
    microsecond, its children lie strictly inside it without touching each other, and no other
    event of the thread begins or ends at the same microsecond as one of its bounds."""
    bounds = collections.Counter()
    for e in events:
        bounds[(e.thread, e.time_range.start)] += 1
        bounds[(e.thread, e.time_range.end)] += 1
    bad = set()
    for e in events:
        a, b = e.time_range.start, e.time_range.end
        ok = b > a and bounds[(e.thread, a)] == 1 and bounds[(e.thread, b)] == 1
        prev = a
        for c in sorted(e.cpu_children, key=lambda c: c.time_range.start):
            ok = ok and c.time_range.start > prev and c.time_range.end > c.time_range.start
            prev = c.time_range.end
        if not (ok and prev < b):
            bad.add(e.key)
    return set(e.key for e in events) - bad


class TorchCompareTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Here, not at import: the other test files' profilers run without torch imported.
        why = _setup()
        if why is not None:
            raise unittest.SkipTest(why)
        import torch
        import torch.profiler as tp
        import strobe.profiler as sp
        cls.torch, cls.tp, cls.sp = torch, tp, sp
        # torch's record_function in both runs: the program is the same (torch 1.13's creates
        # a handle tensor per range, with aten::zeros, which both profilers see).
        rf = torch.autograd.profiler.record_function
        cls.rf = rf
        torch.set_num_threads(1)
        # torch 1.13's legacy profiler does not give the same memory figures twice for some
        # operators (its tree is rebuilt from times in whole microseconds, and some of its
        # memory records land outside their op): it runs five times, and a figure is compared
        # where its five runs agree.
        cls.truns = []
        for _ in range(5):
            w = Workload(torch)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch 1.13 without Kineto says so
                with tp.profile(activities=[tp.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True, with_flops=True) as tprof:
                    w.run(rf)
            cls.truns.append(tprof)
        cls.tprof = cls.truns[0]
        w = Workload(torch)
        with sp.profile(activities=[tp.ProfilerActivity.CPU], record_shapes=True,
                        profile_memory=True, with_flops=True) as sprof:
            cls.side_tid = w.run(rf)
        cls.sprof = sprof
        cls.main_tid = threading.get_native_id()
        if OUT:
            sprof.export_chrome_trace(os.path.join(OUT, "torch_compare_strobe.json"))

    def strobe_main(self):
        """strobe's events of the profiling thread (what torch 1.13's legacy profiler sees)."""
        ev = self.sprof.events()
        return self.sp.EventList([e for e in ev if e.thread == self.main_tid],
                                 profile_memory=True)

    def test_names_counts_memory(self):
        t = rows(self.tprof.events())
        s = rows(self.strobe_main())
        self.assertEqual(sorted((k, v[0]) for k, v in s.items()),
                         sorted((k, v[0]) for k, v in t.items()))
        runs = [rows(p.events()) for p in self.truns]
        # Self CPU Mem is what torch's tree leaves of CPU Mem: compared where that tree is
        # sound in every run.
        sound = set.intersection(*[tie_free(p.events()) for p in self.truns])
        compared = 0
        for k in t:
            for i, what in ((1, "CPU Mem"), (2, "Self CPU Mem")):
                if i == 2 and k not in sound:
                    continue
                if len(set(r.get(k, (None,) * 5)[i] for r in runs)) == 1:
                    self.assertEqual(s[k][i], t[k][i], "%s: %s" % (k, what))
                    compared += 1
        # Many rows' figures are torch's own every time: two thirds on a quiet machine, but
        # fewer where the machine is loaded and torch's runs rebuild their trees otherwise (CI
        # with other builds running: 25 of 52). Comparing with the value most runs agree on
        # instead finds torch's own misattributions (as_strided given 1280 bytes in three of
        # five runs), so the runs must all agree, and a third of the rows must be compared.
        self.assertGreater(compared, len(t) // 3, "figures compared")
        # Even CPU Mem, which torch knows without its tree, sometimes misses an allocation of
        # torch 1.13's (threshold_backward's 16 KiB): strobe's are checked against the sizes the
        # model allocates (float32, batch 32, 3 iterations), whatever torch's runs gave.
        f = 4 * 3
        want = {"aten::addmm": (f * 32 * (128 + 10), f * 32 * (128 + 10)),
                "aten::clamp_min": (f * 32 * 128, f * 32 * 128),
                "aten::relu": (f * 32 * 128, 0),
                "aten::threshold_backward": (f * 32 * 128, f * 32 * 128),
                "aten::_log_softmax": (f * 32 * 10, f * 32 * 10)}
        for k, v in want.items():
            self.assertEqual(s[k][1:3], v, "%s: CPU Mem, Self CPU Mem" % k)
        self.assertGreater(t["aten::addmm"][1], 0)

    def test_flops(self):
        t = rows(self.tprof.events())
        s = rows(self.strobe_main())
        self.assertEqual({k: v[4] for k, v in s.items() if v[4]},
                         {k: v[4] for k, v in t.items() if v[4]})
        self.assertGreater(t["aten::addmm"][4], 0)
        head = self.strobe_main().key_averages().table().splitlines()[1]
        self.assertIn("Total MFLOPs", head)

    def test_group_by_input_shape(self):
        t = rows(self.tprof.events(), True)
        s = rows(self.strobe_main(), True)
        self.assertEqual(sorted((k, v[0]) for k, v in s.items()),
                         sorted((k, v[0]) for k, v in t.items()))
        table = self.strobe_main().key_averages(True).table(row_limit=-1)
        self.assertIn("Input Shapes", table.splitlines()[1])
        self.assertIn("CPU Mem", table.splitlines()[1])

    def test_cpu_times(self):
        # torch 1.13's legacy profiler adds microseconds per operator, strobe far less, and the
        # machine is shared (a build next door stretches any one call many times): each range's
        # fastest call needs only be of the same order under both (they were within 15% of each
        # other when this was written).
        def fastest(events, name):
            return min(e.cpu_time_total for e in events if e.name == name)

        for name in ("forward", "backward", "optimizer", "aten::addmm"):
            t = min(fastest(p.events(), name) for p in self.truns)
            s = fastest(self.strobe_main(), name)
            self.assertGreater(s, 0)
            self.assertTrue(0.2 < s / t < 5, "%s: %.1f us (strobe), %.1f us (torch)"
                            % (name, s, t))

    def test_other_threads(self):
        side = collections.Counter(e.name for e in self.sprof.events()
                                   if e.thread == self.side_tid)
        self.assertEqual(side["side"], 3)
        self.assertEqual(side["aten::mm"], 3)
        self.assertEqual(side["aten::relu_"], 3)

    def test_with_stack_and_steps(self):
        sp = self.sp
        w = Workload(self.torch)
        with sp.profile(activities=[sp.ProfilerActivity.CPU], with_stack=True,
                        schedule=sp.schedule(wait=0, warmup=1, active=3, repeat=1)) as prof:
            w.run(self.rf, iterations=5, step=prof.step)
        ev = prof.events()
        steps = [e for e in ev if e.name == "ProfilerStep*"]
        self.assertEqual([e.trace_name for e in steps], ["ProfilerStep#1", "ProfilerStep#2",
                                                         "ProfilerStep#3"])
        for e in steps:
            self.assertEqual(e.thread, self.main_tid)
            kids = sorted(c.name for c in e.cpu_children)
            self.assertEqual([k for k in kids if k in ("forward", "backward", "optimizer")],
                             ["backward", "forward", "optimizer"], e.trace_name)
            self.assertLess(e.self_cpu_time_total, e.cpu_time_total)
        # torch's operators carry the Python stack of the Python hook.
        mm = [e for e in ev if e.name == "aten::addmm"]
        self.assertTrue(mm)
        it = Workload.iteration.__code__
        want = "%s(%d): iteration" % (it.co_filename, it.co_firstlineno)
        for e in mm:
            self.assertIn(want, e.stack)
        avg = {a.key: a for a in prof.key_averages()}
        self.assertEqual(avg["ProfilerStep*"].count, 3)
        self.assertLess(prof.key_averages().self_cpu_time_total,
                        avg["ProfilerStep*"].cpu_time_total * 1.05 +
                        sum(a.cpu_time_total for a in avg.values() if a.key == "side"))
        if OUT:
            prof.export_chrome_trace(os.path.join(OUT, "torch_compare_stack.json"))


if __name__ == "__main__":
    unittest.main()

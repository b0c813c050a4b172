"""Tests of strobe.profiler (unittest). Run with the package importable: tests/python_tests.sh
builds it into a temporary folder and runs these. STROBE_TEST_TRACE_DIR, when set, receives the
traces written, for the trace checkers."""
import gzip
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import strobe
import strobe.profiler as P
from strobe.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                             schedule, tensorboard_trace_handler)

OUT = os.environ.get("STROBE_TEST_TRACE_DIR")


def spin(us):
    end = time.perf_counter_ns() + us * 1000
    while time.perf_counter_ns() < end:
        pass


def leaf(n):
    with record_function("leaf"):
        spin(20)
    return n


def work(k):
    for i in range(k):
        with record_function("outer"):
            spin(10)
            leaf(i)


def table_rows(text):
    """name -> cells of a table's body rows (the lines between the 2nd and 3rd separator)."""
    lines = text.splitlines()
    seps = [i for i, l in enumerate(lines) if l.startswith("-")]
    rows = {}
    for l in lines[seps[1] + 1:seps[2]]:
        cells = l.split()
        rows[cells[0]] = cells[1:]
    return rows, lines[seps[2] + 1:]


class RecordFunctionTest(unittest.TestCase):
    def test_nesting_and_times(self):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            work(3)
        ev = prof.events()
        names = [e.name for e in ev]
        self.assertEqual(names.count("outer"), 3, names)
        self.assertEqual(names.count("leaf"), 3, names)
        for e in ev:
            self.assertEqual(e.category, "user_annotation")
            self.assertEqual(e.thread, threading.get_native_id())
            if e.name == "leaf":
                self.assertIsNotNone(e.cpu_parent)
                self.assertEqual(e.cpu_parent.name, "outer")
                self.assertGreaterEqual(e.start_ns, e.cpu_parent.start_ns)
                self.assertLessEqual(e.end_ns, e.cpu_parent.end_ns)
                self.assertGreaterEqual(e.end_ns - e.start_ns, 20000)
            else:
                self.assertIsNone(e.cpu_parent)
                self.assertEqual(len(e.cpu_children), 1)
                child = e.cpu_children[0]
                self.assertAlmostEqual(e.self_cpu_time_total,
                                       e.cpu_time_total - child.cpu_time_total, places=6)

    def test_off_costs_nothing_recorded(self):
        with record_function("not recorded"):
            pass
        with profile() as prof:
            pass
        self.assertEqual([e.name for e in prof.events()], [])

    def test_decorator_and_args(self):
        @record_function("decorated", "some args")
        def f(x):
            """doc"""
            return x * 2

        self.assertEqual(f.__name__, "f")
        self.assertEqual(f.__doc__, "doc")
        with profile() as prof:
            self.assertEqual(f(21), 42)
            self.assertEqual(f(1), 2)
        ev = [e for e in prof.events() if e.name == "decorated"]
        self.assertEqual(len(ev), 2)
        self.assertEqual(ev[0].args.get("args"), '"some args"')
        rf = record_function("n", args="a")
        self.assertEqual((rf.name, rf.args), ("n", "a"))

    def test_exception_closes_range(self):
        with profile() as prof:
            with self.assertRaises(KeyError):
                with record_function("raises"):
                    raise KeyError("x")
            with record_function("after"):
                pass
        ev = {e.name: e for e in prof.events()}
        self.assertIsNone(ev["after"].cpu_parent)
        self.assertEqual(prof._stats()["stats"]["unfinished_ranges"], 0)

    def test_threads(self):
        tids = []

        def body():
            tids.append(threading.get_native_id())
            work(2)

        with profile() as prof:
            ts = [threading.Thread(target=body) for _ in range(3)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        by_tid = {}
        for e in prof.events():
            by_tid.setdefault(e.thread, []).append(e.name)
        self.assertEqual(sorted(by_tid), sorted(tids))
        for names in by_tid.values():
            self.assertEqual(sorted(names), ["leaf", "leaf", "outer", "outer"])


class TableTest(unittest.TestCase):
    def test_key_averages_and_table_match_c_summary(self):
        with profile() as prof:
            work(4)
            for _ in range(3):
                with record_function("solo"):
                    spin(5)
        avg = {a.key: a for a in prof.key_averages()}
        ev = prof.events()
        for key in ("outer", "leaf", "solo"):
            mine = [e for e in ev if e.name == key]
            self.assertEqual(avg[key].count, len(mine))
            total = sum(e.end_ns - e.start_ns for e in mine) / 1000.0
            self.assertAlmostEqual(avg[key].cpu_time_total, total, places=3)
            self.assertAlmostEqual(avg[key].cpu_time, total / len(mine), places=3)
        self.assertAlmostEqual(avg["outer"].self_cpu_time_total,
                               avg["outer"].cpu_time_total - avg["leaf"].cpu_time_total,
                               places=3)
        # The C library's summary of the same session: same rows, same digits, same footer.
        for sort_by, c_sort in (("cpu_time_total", 0), ("self_cpu_time_total", 1)):
            mine_t = prof.key_averages().table(sort_by=sort_by, row_limit=-1)
            c_t = prof._summary_table(c_sort, 0)
            r1, f1 = table_rows(mine_t)
            r2, f2 = table_rows(c_t)
            self.assertEqual(r1, r2, "\n" + mine_t + "\n" + c_t)
            self.assertEqual(f1, f2)
            self.assertEqual(mine_t.splitlines()[1], c_t.splitlines()[1])
        limited = prof.key_averages().table(sort_by="count", row_limit=1)
        self.assertEqual(len(table_rows(limited)[0]), 1)
        self.assertIn("Self CPU time total:", limited)
        hdr = prof.key_averages().table(header="HEAD", top_level_events_only=True)
        self.assertIn("HEAD", hdr)
        self.assertNotIn(" leaf ", hdr)
        long_name = "x" * 70
        with profile() as p2:
            with record_function(long_name):
                pass
        t = p2.key_averages().table(max_name_column_width=30)
        self.assertIn("x" * 27 + "...", t)

    def test_group_by_input_shape_and_stack(self):
        with profile(with_stack=True) as prof:
            work(2)
        g = prof.key_averages(group_by_stack_n=2)
        leafs = [a for a in g if a.key == "leaf"]
        self.assertEqual(sum(a.count for a in leafs), 2)
        self.assertTrue(leafs[0].stack[0].endswith("): leaf"), leafs[0].stack)
        self.assertIn("Source Location", g.table())
        self.assertEqual(len(prof.key_averages(group_by_input_shape=True)),
                         len(prof.key_averages()))


class WithStackTest(unittest.TestCase):
    def test_python_functions(self):
        with profile(with_stack=True) as prof:
            work(2)
        path = tempfile.mktemp(suffix=".json", dir=OUT)
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        evs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        pyf = [e for e in evs if e.get("cat") == "python_function"]
        code = leaf.__code__
        want = "%s(%d): leaf" % (code.co_filename, code.co_firstlineno)
        self.assertEqual(sum(1 for e in pyf if e["name"] == want), 2, [e["name"] for e in pyf])
        # leaf's range sits inside the Python function leaf, and carries its Call stack.
        rng = [e for e in evs if e["name"] == "leaf" and e["cat"] == "user_annotation"]
        self.assertEqual(len(rng), 2)
        stack = rng[0]["args"]["Call stack"].split(";")
        self.assertEqual(stack[0], want)
        wc = work.__code__
        self.assertEqual(stack[1], "%s(%d): work" % (wc.co_filename, wc.co_firstlineno))
        fn = [e for e in pyf if e["name"] == want][0]
        self.assertLessEqual(fn["ts"], rng[0]["ts"])
        # python_function events are in the trace, not in events() (as with torch).
        self.assertNotIn(want, [e.name for e in prof.events()])
        spath = tempfile.mktemp(suffix=".stacks")
        prof.export_stacks(spath)
        with open(spath) as f:
            lines = f.read().splitlines()
        os.unlink(spath)
        self.assertTrue(lines)
        for l in lines:
            frames, value = l.rsplit(" ", 1)
            self.assertGreater(int(value), 0)
            self.assertTrue(frames.split(";")[-1] in (want.replace(" ", "_"),
                                                      "%s(%d):_work" % (wc.co_filename,
                                                                        wc.co_firstlineno)), l)

    def test_steps_nest_with_stack(self):
        # With with_stack, Python functions enclose the training loop: ProfilerStep#N must still
        # nest on the thread that calls step(), inside them, with the iteration's ranges inside
        # it (the step's self time is what they leave), not on a track of its own where its
        # self time would be its whole time and the table would count each step twice.
        # The iteration spins 3 ms: the step's own time (step(), the loop) stays well under it
        # on a loaded machine (with 300 us, a step took 1.6 ms of its own under CI's load).
        def body(i):
            with record_function("iter"):
                spin(3000)

        def train():
            with profile(with_stack=True,
                         schedule=schedule(wait=0, warmup=1, active=4, repeat=1)) as prof:
                for i in range(6):
                    body(i)
                    prof.step()
            return prof

        prof = train()
        steps = [e for e in prof.events() if e.name == "ProfilerStep*"]
        self.assertEqual([e.trace_name for e in steps],
                         ["ProfilerStep#%d" % i for i in range(1, 5)])
        me = threading.get_native_id()
        for e in steps:
            self.assertEqual(e.thread, me)
            self.assertEqual([c.name for c in e.cpu_children], ["iter"], e.trace_name)
            self.assertLess(e.self_cpu_time_total, e.cpu_time_total / 2, e.trace_name)
        avg = {a.key: a for a in prof.key_averages()}
        step_total = avg["ProfilerStep*"].cpu_time_total
        self_total = prof.key_averages().self_cpu_time_total
        # Self times add up to the steps' time (nothing counted twice).
        self.assertLess(self_total, step_total * 1.01, prof.key_averages().table())
        path = tempfile.mktemp(suffix=".json", dir=OUT)
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}
        xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        tc = train.__code__
        tfn = [e for e in xs if e["name"] == "%s(%d): train" % (tc.co_filename,
                                                               tc.co_firstlineno)]
        self.assertEqual(len(tfn), 1)
        for e in xs:
            if e["name"].startswith("ProfilerStep#"):
                self.assertNotEqual(names.get(e["tid"]), "ProfilerStep", e)
                self.assertEqual(e["tid"], tfn[0]["tid"])
                self.assertGreaterEqual(e["ts"], tfn[0]["ts"])
                self.assertLessEqual(e["ts"] + e["dur"], tfn[0]["ts"] + tfn[0]["dur"])
        if OUT is None:
            os.unlink(path)

    def test_hook_removed_after_stop(self):
        with profile(with_stack=True):
            pass
        self.assertIsNone(sys.getprofile())


class BuildEventsTest(unittest.TestCase):
    # Result.events() tuples: (name, category, start_ns, end_ns, tid, thread_index, parent,
    # depth, kind, scope, device_type, device_index, correlation_id, flags, args, value).
    @staticmethod
    def rng(name, a, b, parent, depth):
        return (name, "cpu_op", a, b, 7, 0, parent, depth, 0, 0, 0, -1, 0, 0, (), 0.0)

    @staticmethod
    def mem(ts, nbytes, parent, depth):
        return ("[memory]", "cpu_instant_event", ts, ts, 7, 0, parent, depth, 1, 0, 0, -1, 0, 0,
                (("Bytes", str(nbytes)), ("Device Type", "0")), 0.0)

    def test_torch_rules(self):
        rows = [
            self.rng("aten::zero_", 0, 100, -1, 0),      # 0: redispatches to itself
            self.rng("aten::zero_", 10, 90, 0, 1),       # 1: the only child of the same name
            self.rng("aten::fill_", 20, 40, 1, 2),       # 2
            self.mem(30, 64, 2, 3),                      # 3: inside fill_
            self.rng("aten::is_leaf", 50, 60, 1, 2),     # 4: left out, as torch does
            self.mem(55, 16, 4, 3),                      # 5: counts in zero_ (self)
            self.mem(200, -8, -1, 0),                    # 6: outside every op
        ]
        ev = P._build_events(rows, profile_memory=True)
        self.assertEqual([e.name for e in ev], ["aten::zero_", "aten::fill_", "[memory]"])
        z, f, m = ev
        self.assertEqual([c.name for c in z.cpu_children], ["aten::fill_"])
        self.assertIs(f.cpu_parent, z)
        self.assertEqual(z.self_cpu_time_total, (100 - 20) / 1000.0)
        self.assertEqual((z.cpu_memory_usage, z.self_cpu_memory_usage), (80, 16))
        self.assertEqual((m.cpu_memory_usage, m.self_cpu_memory_usage), (-8, -8))
        avg = {a.key: a for a in ev.key_averages()}
        self.assertEqual(avg["[memory]"].count, 1)
        self.assertEqual(avg["aten::zero_"].count, 1)

    def test_table_columns(self):
        # As torch's table: memory columns with profile_memory (even where all is 0), shapes
        # where entries have them, FLOPs in the unit of the smallest count.
        def op(name, a, b, dims, flops):
            args = (("Input Dims", json.dumps(dims)), ("flops", str(flops)))
            return (name, "cpu_op", a, b, 7, 0, -1, 0, 0, 0, 0, -1, 0, 0, args, 0.0)

        rows = [op("aten::mm", 0, 10, [[2, 3], [3, 4]], 48000),
                op("aten::mm", 20, 30, [[2, 3], [3, 4]], 48000),
                op("aten::mm", 40, 50, [[5, 3], [3, 4]], 120000),
                op("aten::relu", 60, 70, [[2, 4]], 0)]
        ev = P._build_events(rows, profile_memory=True)
        head = ev.key_averages().table().splitlines()[1].split("  ")
        head = [h.strip() for h in head if h.strip()]
        self.assertEqual(head[-4:], ["CPU Mem", "Self CPU Mem", "# of Calls", "Total KFLOPs"])
        grouped = ev.key_averages(group_by_input_shape=True)
        self.assertEqual(sorted((a.key, str(a.input_shapes), a.count) for a in grouped),
                         [("aten::mm", "[[2, 3], [3, 4]]", 2), ("aten::mm", "[[5, 3], [3, 4]]", 1),
                          ("aten::relu", "[[2, 4]]", 1)])
        text = grouped.table()
        self.assertIn("Input Shapes", text.splitlines()[1])
        self.assertIn("[[5, 3], [3, 4]]", text)
        self.assertIn(" 96.000", text)  # 2 x 48000 FLOPs in KFLOPs
        self.assertIn("0 B", text)
        self.assertNotIn("Input Shapes", ev.key_averages().table())


class WarningsTest(unittest.TestCase):
    # In a child process: torch must not be imported there, and each message is said once per
    # process.
    def child(self, code):
        r = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout, r.stderr

    def test_options_that_record_nothing_warn_once(self):
        out, err = self.child(
            "import strobe.profiler as P, sys\n"
            "for i in range(2):\n"
            "    with P.profile(activities=[P.ProfilerActivity.CPU], record_shapes=True,\n"
            "                   profile_memory=True, with_flops=True):\n"
            "        pass\n"
            "with P.profile(activities=[P.ProfilerActivity.CPU]):\n"
            "    pass\n"
            "print('torch' in sys.modules)\n")
        self.assertEqual(out.strip(), "False")
        for opt in ("record_shapes", "profile_memory", "with_flops"):
            self.assertEqual(err.count("%s=True records nothing: torch is not imported" % opt),
                             1, err)
        # Attributed to the user's line, not to strobe's own.
        self.assertIn("<string>:3: UserWarning", err)

    def test_observer_unavailable(self):
        # torch imported (a stand-in module here) but no observer to load: said once, with the
        # reason, and the profile goes on with strobe's own ranges.
        env = dict(os.environ, STROBE_TORCH_OBSERVER="/nonexistent/observer.so")
        code = ("import sys, types\n"
                "sys.modules['torch'] = types.ModuleType('torch')\n"
                "import strobe.profiler as P\n"
                "for i in range(2):\n"
                "    with P.profile(activities=[P.ProfilerActivity.CPU],\n"
                "                   record_shapes=True) as p:\n"
                "        with P.record_function('mine'):\n"
                "            pass\n"
                "print([e.name for e in p.events()])\n")
        r = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                           text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "['mine']")
        self.assertEqual(r.stderr.count("torch's operators are not recorded: the torch observer "
                                        "is unavailable"), 1, r.stderr)
        self.assertIn("/nonexistent/observer.so", r.stderr)
        self.assertEqual(r.stderr.count("record_shapes=True records nothing: the torch observer "
                                        "is unavailable"), 1, r.stderr)

    def test_cuda_without_driver_and_torch_activities(self):
        if os.path.exists("/dev/nvidiactl"):
            self.skipTest("a CUDA driver is present")
        out, err = self.child(
            "import strobe.profiler as P, enum\n"
            "class ProfilerActivity(enum.Enum):  # torch's own, as a stand-in\n"
            "    CPU = 0\n"
            "    XPU = 1\n"
            "    CUDA = 2\n"
            "acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA, ProfilerActivity.XPU]\n"
            "with P.profile(activities=acts) as p:\n"
            "    pass\n"
            "print(sorted(a.name for a in p.activities))\n")
        self.assertEqual(out.strip(), "['CPU', 'CUDA']")
        self.assertEqual(err.count("CUDA activity requested but not traced"), 1, err)
        self.assertIn("ProfilerActivity.XPU is not traced by strobe: ignored", err)


class ScheduleTest(unittest.TestCase):
    def test_actions(self):
        s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=1)
        A = ProfilerAction
        self.assertEqual([s(i) for i in range(7)],
                         [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE])
        s = schedule(wait=0, warmup=0, active=1)
        self.assertEqual([s(i) for i in range(3)], [A.RECORD_AND_SAVE] * 3)

    def test_profile_with_schedule_and_handler(self):
        d = tempfile.mkdtemp(dir=OUT)
        ready = []

        def on_ready(p):
            ready.append([e.trace_name for e in p.events()])
            # As torch's events(): every step is named "ProfilerStep*" (trace_name keeps its
            # number), and key_averages() gives the steps one row.
            self.assertEqual([e.name for e in p.events()][0], "ProfilerStep*")
            rows = {a.key: a.count for a in p.key_averages()}
            self.assertEqual(rows, {"ProfilerStep*": 2, "it%d" % (len(ready) * 4 - 2): 1,
                                    "it%d" % (len(ready) * 4 - 1): 1})
            tensorboard_trace_handler(d, worker_name="w0")(p)

        with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                     on_trace_ready=on_ready) as prof:
            for i in range(10):
                with record_function("it%d" % i):
                    pass
                prof.step()
        self.assertEqual(len(ready), 2)
        # cycle 1 records steps 2 and 3, cycle 2 steps 6 and 7
        self.assertEqual(ready[0], ["ProfilerStep#2", "it2", "ProfilerStep#3", "it3"])
        self.assertEqual(ready[1], ["ProfilerStep#6", "it6", "ProfilerStep#7", "it7"])
        files = sorted(os.listdir(d))
        self.assertEqual(len(files), 2, files)
        for f in files:
            self.assertTrue(re.match(r"^w0\.\d+\.pt\.trace\.json$", f), f)
        gz = tempfile.mkdtemp(dir=OUT)
        with profile(schedule=schedule(wait=0, warmup=0, active=1, repeat=1),
                     on_trace_ready=tensorboard_trace_handler(gz, use_gzip=True)) as prof:
            prof.step()
        (name,) = os.listdir(gz)
        self.assertTrue(name.endswith(".pt.trace.json.gz"))
        with gzip.open(os.path.join(gz, name)) as f:
            self.assertIn("traceEvents", json.load(f))
        if OUT is None:
            shutil.rmtree(d)
            shutil.rmtree(gz)


class ExportTest(unittest.TestCase):
    def test_metadata_and_exports(self):
        with profile() as prof:
            prof.add_metadata("run", "one \"quoted\"")
            with record_function("x"):
                pass
        prof.add_metadata_json("config", '{"lr": 0.5}')
        a = tempfile.mktemp(suffix=".json", dir=OUT)
        b = tempfile.mktemp(suffix=".json", dir=OUT)
        prof.export_chrome_trace(a)
        prof.export_chrome_trace(b)
        with open(a) as f:
            ta = json.load(f)
        with open(b) as f:
            self.assertEqual(json.load(f), ta)
        self.assertEqual(ta["run"], 'one "quoted"')
        self.assertEqual(ta["config"], {"lr": 0.5})
        self.assertEqual([e["name"] for e in ta["traceEvents"] if e.get("cat") ==
                          "user_annotation"], ["x"])
        # strobe.load reads it back: the same averages.
        t = strobe.load(a)
        self.assertEqual([(x.key, x.count) for x in t.key_averages()], [("x", 1)])
        self.assertEqual(t.key_averages()[0].cpu_time_total,
                         prof.key_averages()[0].cpu_time_total)

    def test_pftrace(self):
        with profile() as prof:
            with record_function("p"):
                pass
        path = tempfile.mktemp(suffix=".pftrace", dir=OUT)
        prof.export_chrome_trace(path)
        self.assertEqual([(x.key, x.count) for x in strobe.load(path).key_averages()],
                         [("p", 1)])


class BadInputTest(unittest.TestCase):
    def test_errors(self):
        with self.assertRaises(TypeError):
            record_function(1)
        with self.assertRaises(TypeError):
            record_function()
        with self.assertRaises(TypeError):
            record_function("a", args=3)
        with self.assertRaises(ValueError):
            schedule(wait=0, warmup=0, active=0)
        with self.assertRaises(TypeError):
            schedule(wait="1", warmup=0, active=1)
        with self.assertRaises(TypeError):
            profile(activities=["CPU"])
        with self.assertRaises(RuntimeError):
            profile().export_chrome_trace("/tmp/never.json")
        with profile() as prof:
            with self.assertRaisesRegex(RuntimeError, "already running"):
                profile().start()
            with self.assertRaises(ValueError):
                prof.add_metadata_json("k", "{not json")
            with self.assertRaises(ValueError):
                prof.add_metadata_json("traceEvents", "1")
        with self.assertRaisesRegex(RuntimeError, "/nonexistent/dir/t.json"):
            prof.export_chrome_trace("/nonexistent/dir/t.json")
        bad = tempfile.mktemp(suffix=".json")
        with open(bad, "w") as f:
            f.write("this is not a trace\n")
        with self.assertRaisesRegex(RuntimeError, re.escape(bad)):
            strobe.load(bad)
        os.unlink(bad)
        with self.assertRaises(RuntimeError):
            strobe.load("/nonexistent/trace.json")
        with self.assertRaises(TypeError):
            strobe.load(3)

    def test_left_running_at_exit(self):
        code = ("import strobe.profiler as P\np = P.profile(with_stack=True)\np.start()\n"
                "with P.record_function('x'):\n    pass\nprint('ok')\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "ok\n", ""))


class CliTest(unittest.TestCase):
    def test_python_m_strobe(self):
        r = subprocess.run([sys.executable, "-m", "strobe", "--version"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(strobe.__version__, r.stdout)
        r = subprocess.run([sys.executable, "-m", "strobe", "summary", "/nonexistent.json"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent.json", r.stderr)


class DeviceTimeTest(unittest.TestCase):
    """Device time as torch attributes it, on a trace written here: work belongs to the operator
    or user range of its External id (not to the runtime calls inside, which share that id),
    and to the ranges enclosing it in totals; the footer sums the device's own events. The
    numbers must be those of `strobe summary -f json` (the CLI's torch-parity table), worked out
    by hand too: alloc_and_set self 5 us (its memset), total 35 us (with aten::mm's 30 us
    kernel); aten::mm 30/30; runtime calls 0; footer 35 us."""

    EVENTS = [
        ("user_annotation", "alloc_and_set", 1, 0, 200, {"External id": 1}),
        ("cuda_runtime", "cudaMemset", 1, 10, 40, {"External id": 1, "correlation": 11}),
        ("cuda_runtime", "cudaDeviceSynchronize", 1, 60, 20,
         {"External id": 1, "correlation": 12}),
        ("gpu_memset", "Memset (Device)", 7, 55, 5,
         {"External id": 1, "correlation": 11, "stream": 7, "device": 0}),
        ("gpu_user_annotation", "alloc_and_set", 7, 55, 5, {"External id": 1}),
        ("cpu_op", "aten::mm", 1, 100, 50, {"External id": 2}),
        ("cuda_runtime", "cudaLaunchKernel", 1, 110, 10, {"External id": 2, "correlation": 13}),
        ("kernel", "gemm", 7, 130, 30,
         {"External id": 2, "correlation": 13, "stream": 7, "device": 0}),
    ]

    def test_device_time_matches_cli(self):
        ev = [{"ph": "X", "cat": c, "name": n, "pid": 0 if tid == 7 else 1, "tid": tid,
               "ts": ts, "dur": dur, "args": args} for c, n, tid, ts, dur, args in self.EVENTS]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "dev.json")
            with open(path, "w") as f:
                json.dump({"traceEvents": ev}, f)
            avg = {(a.key, a.device_type.name): a for a in strobe.load(path).key_averages()}
            table = strobe.load(path).key_averages().table(sort_by="cpu_time_total")
            r = subprocess.run([sys.executable, "-m", "strobe", "summary", "-f", "json", path],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        cli = json.loads(r.stdout)
        want = {"alloc_and_set": (5.0, 35.0), "aten::mm": (30.0, 30.0), "cudaMemset": (0.0, 0.0),
                "cudaDeviceSynchronize": (0.0, 0.0), "cudaLaunchKernel": (0.0, 0.0)}
        for name, (self_us, total_us) in want.items():
            a = avg[(name, "CPU")]
            self.assertAlmostEqual(a.self_device_time_total, self_us, places=3, msg=name)
            self.assertAlmostEqual(a.device_time_total, total_us, places=3, msg=name)
        rows = {(row["Name"], row["CPU total"] > 0 or row["Self CUDA"] == 0): row
                for row in cli["rows"]}
        for (name, dev), a in avg.items():
            if dev != "CPU":
                continue
            row = rows[(name, True)]
            self.assertAlmostEqual(a.self_device_time_total, row["Self CUDA"], places=3, msg=name)
            self.assertAlmostEqual(a.device_time_total, row["CUDA total"], places=3, msg=name)
            self.assertEqual(a.count, row["# of Calls"], name)
        self.assertAlmostEqual(avg[("gemm", "CUDA")].self_device_time_total, 30.0, places=3)
        self.assertAlmostEqual(cli["self_cuda_time_total_us"], 35.0, places=3)
        self.assertIn("Self CUDA time total: 35.000us", table)


class DocsTest(unittest.TestCase):
    def test_docstrings_and_stubs(self):
        here = os.path.dirname(strobe.__file__)
        for mod in (strobe, P):
            stub = os.path.join(here, os.path.basename(mod.__file__).replace(".py", ".pyi"))
            self.assertTrue(os.path.isfile(stub), stub)
            with open(stub) as f:
                text = f.read()
            self.assertTrue(mod.__doc__)
            for name in mod.__all__:
                obj = getattr(mod, name)
                if name != "__version__":
                    self.assertTrue(getattr(obj, "__doc__", None), name)
                    self.assertRegex(text, r"(def|class) %s\b|import %s\b|^%s:" % (name, name, name))
                else:
                    self.assertIn("__version__", text)
        for name in ("start", "stop", "step", "events", "key_averages", "export_chrome_trace",
                     "export_stacks", "add_metadata", "add_metadata_json"):
            self.assertTrue(getattr(P.profile, name).__doc__, name)


TORCH_PY = "/usr/bin/python3"


def torch_names():
    """Names and parameters of torch.profiler, from Debian's python3-torch (None: absent)."""
    code = r"""
import inspect, json, torch.profiler as tp, torch.autograd.profiler_util as pu
def params(f): return list(inspect.signature(f).parameters)
avg = pu.FunctionEventAvg()
print(json.dumps({
 "profile": params(tp.profile.__init__), "schedule": params(tp.schedule),
 "handler": params(tp.tensorboard_trace_handler), "record_function": params(tp.record_function.__init__),
 "key_averages": params(tp.profile.key_averages), "table": params(pu.EventList.table),
 "export_stacks": params(tp.profile.export_stacks), "export_chrome_trace": params(tp.profile.export_chrome_trace),
 "add_metadata": params(tp.profile.add_metadata), "add_metadata_json": params(tp.profile.add_metadata_json),
 "methods": [m for m in ("start", "stop", "step", "events", "key_averages", "export_chrome_trace",
             "export_stacks", "add_metadata", "add_metadata_json") if hasattr(tp.profile, m)],
 "avg": sorted(set(vars(avg)) | set(dir(avg))),
 "activity": [a for a in ("CPU", "CUDA") if hasattr(tp.ProfilerActivity, a)],
 "action": list(tp.ProfilerAction.__members__)}))
"""
    if not os.path.exists(TORCH_PY):
        return None
    r = subprocess.run([TORCH_PY, "-W", "ignore", "-c", code], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


class TorchNamesTest(unittest.TestCase):
    def test_same_names_as_torch(self):
        t = torch_names()
        if t is None:
            self.skipTest("Debian's python3-torch is not installed for %s" % TORCH_PY)

        def params(f):
            return [p for p in inspect.signature(f).parameters]

        # torch's parameters, in torch's order, then strobe's own CPU sampling keywords.
        strobe_own = ["cpu_sample_hz", "call_graph", "python_frames"]
        self.assertEqual(params(profile.__init__), t["profile"] + strobe_own)
        self.assertEqual(params(schedule), t["schedule"])
        self.assertEqual(params(tensorboard_trace_handler), t["handler"])
        self.assertEqual(params(P.EventList.table), t["table"])
        self.assertEqual(params(profile.key_averages), t["key_averages"])
        self.assertEqual(params(profile.export_stacks), t["export_stacks"])
        self.assertEqual(params(profile.export_chrome_trace), t["export_chrome_trace"])
        self.assertEqual(params(profile.add_metadata), t["add_metadata"])
        self.assertEqual(params(profile.add_metadata_json), t["add_metadata_json"])
        # record_function is a C type: its names are checked by calling it with them.
        self.assertEqual(t["record_function"], ["self", "name", "args"])
        self.assertEqual(record_function(name="a", args="b").args, "b")
        for m in t["methods"]:
            self.assertTrue(hasattr(profile, m), m)
        avg = P.FunctionEventAvg()
        for a in ("key", "count", "cpu_time_total", "self_cpu_time_total", "cpu_time",
                  "cuda_time_total", "self_cuda_time_total", "cpu_memory_usage",
                  "self_cpu_memory_usage", "input_shapes", "stack", "flops", "node_id",
                  "is_async", "is_remote", "cuda_memory_usage", "add"):
            self.assertIn(a, t["avg"], a)
            self.assertTrue(hasattr(avg, a), a)
        self.assertEqual(t["activity"], [a.name for a in ProfilerActivity])
        self.assertEqual(t["action"], [a.name for a in ProfilerAction])


if __name__ == "__main__":
    unittest.main()

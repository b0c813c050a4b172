"""Bad input to strobe.profiler (issue 29's adversarial plan): profilers used across threads,
exceptions inside record_function blocks, profilers and ranges garbage-collected while running,
and interpreter exit with a profiler running. Each misuse must give a clear Python exception or
the documented behaviour (docs/GUIDE.md, "Python: strobe.profiler"), never a crash, a hang or a silently
wrong trace. Run like test_profiler.py (tests/python_tests.sh)."""
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import weakref

import strobe
import strobe.profiler as P
from strobe.profiler import profile, record_function

OUT = os.environ.get("STROBE_TEST_TRACE_DIR")
TIMEOUT = 60  # seconds any child interpreter may take: past it, a hang


def names(prof):
    return sorted(e.name for e in prof.events())


def unfinished(prof):
    return prof._stats()["stats"]["unfinished_ranges"]


def in_thread(fn):
    """Runs fn in a new thread and returns what it returned, or raises what it raised."""
    box = {}

    def body():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join(TIMEOUT)
    if t.is_alive():
        raise AssertionError("the thread hung")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class CrossThreadTest(unittest.TestCase):
    def tearDown(self):
        # No test may leave a session behind for the next.
        self.assertFalse(strobe._strobe.is_running())

    def test_started_in_one_thread_stopped_in_another(self):
        prof = profile()

        def start_and_record():
            prof.start()
            with record_function("in starter"):
                pass

        in_thread(start_and_record)
        with record_function("in stopper"):
            pass
        prof.stop()
        self.assertEqual(names(prof), ["in starter", "in stopper"])
        self.assertEqual(unfinished(prof), 0)
        # And the other way round, with the Python hook on, whose removal must reach the
        # starting thread although another thread stops.
        prof = profile(with_stack=True)
        prof.start()
        in_thread(prof.stop)
        self.assertIsNone(sys.getprofile())
        self.assertFalse(strobe._strobe.is_running())

    def test_two_threads_two_profilers(self):
        first = profile()
        first.start()
        errors = []

        def second():
            p = profile()
            try:
                p.start()
            except RuntimeError as e:
                errors.append(str(e))
            p.stop()  # never started: a no-op
            with record_function("second thread"):
                pass

        in_thread(second)
        first.stop()
        self.assertEqual(len(errors), 1)
        self.assertIn("already running", errors[0])
        self.assertEqual(names(first), ["second thread"])
        # Once the first has stopped, another thread's profiler starts.
        p = profile()
        in_thread(p.start)
        p.stop()

    def test_concurrent_stop_of_one_profiler(self):
        # Two threads stop the same profiler at once: one stops the session, the other finds it
        # stopped; neither raises, and the result is kept. SlowCheck widens the window between
        # stop's look at whether its session runs and its note that it no longer does, where
        # the other thread used to slip in and stop a session that was gone.
        class SlowCheck(profile):
            @property
            def _session(self):
                value = self.__dict__.get("_slow_session", False)
                time.sleep(0.005)
                return value

            @_session.setter
            def _session(self, value):
                self.__dict__["_slow_session"] = value

        for cls in (SlowCheck, profile):
            for _ in range(5):
                prof = cls()
                prof.start()
                with record_function("r"):
                    pass
                barrier = threading.Barrier(2)
                errors = []

                def stopper():
                    barrier.wait()
                    try:
                        prof.stop()
                    except BaseException as e:  # reported below
                        errors.append(repr(e))

                ts = [threading.Thread(target=stopper) for _ in range(2)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join(TIMEOUT)
                self.assertEqual(errors, [])
                self.assertEqual(names(prof), ["r"])
                self.assertFalse(strobe._strobe.is_running())

    def test_record_function_exited_on_another_thread(self):
        # A range belongs to the thread that began it. Ending it from another thread must not
        # end that thread's own open range instead: it raises, and the range stays open until
        # its own thread ends it.
        rf = record_function("crossed")
        ready, done = threading.Event(), threading.Event()
        errors = []

        def other():
            with record_function("other outer"):
                ready.set()
                done.wait(TIMEOUT)
                with record_function("other inner"):
                    pass

        with profile() as prof:
            rf.__enter__()
            t = threading.Thread(target=other)
            t.start()
            ready.wait(TIMEOUT)

            def exit_here():
                try:
                    rf.__exit__(None, None, None)
                except RuntimeError as e:
                    errors.append(str(e))

            in_thread(exit_here)
            done.set()
            t.join(TIMEOUT)
            rf.__exit__(None, None, None)  # on its own thread: ends it
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("another thread", errors[0])
        ev = {e.name: e for e in prof.events()}
        self.assertEqual(ev["other inner"].cpu_parent.name, "other outer")
        self.assertEqual(unfinished(prof), 0)
        self.assertEqual(prof._stats()["stats"]["unmatched_ends"], 0)

    def test_record_function_entered_twice(self):
        # One object is one range: entering it again while it is open would lose the first
        # range's end (it would close only at stop, flagged unfinished).
        rf = record_function("twice")
        with profile() as prof:
            with rf:
                with self.assertRaisesRegex(RuntimeError, "already entered"):
                    with rf:
                        pass
            with rf:  # entered again after its exit: a new range
                pass
        self.assertEqual(names(prof), ["twice", "twice"])
        self.assertEqual(unfinished(prof), 0)
        # Without a session the same misuse is refused too, so that it shows before profiling.
        with rf:
            with self.assertRaisesRegex(RuntimeError, "already entered"):
                rf.__enter__()


class ExceptionTest(unittest.TestCase):
    def test_exception_propagates_unchanged(self):
        err = ValueError("boom")
        caught = None
        with profile() as prof:
            try:
                with record_function("outer"):
                    with record_function("inner"):
                        raise err
            except ValueError as e:
                caught = e
        self.assertIs(caught, err)
        self.assertIsNone(caught.__context__)
        self.assertIsNone(caught.__cause__)
        self.assertEqual(str(caught), "boom")
        ev = {e.name: e for e in prof.events()}
        self.assertEqual(ev["inner"].cpu_parent.name, "outer")
        self.assertEqual(unfinished(prof), 0)

    def test_base_exceptions_and_decorator(self):
        @record_function("decorated")
        def fail(exc):
            raise exc

        with profile() as prof:
            for exc in (KeyboardInterrupt(), SystemExit(3), GeneratorExit(), StopIteration(1)):
                with self.assertRaises(type(exc)) as cm:
                    with record_function("plain"):
                        fail(exc)
                self.assertIs(cm.exception, exc)
        self.assertEqual(names(prof), ["decorated"] * 4 + ["plain"] * 4)
        for e in prof.events():
            if e.name == "decorated":
                self.assertEqual(e.cpu_parent.name, "plain")
        self.assertEqual(unfinished(prof), 0)

    def test_exit_does_not_swallow(self):
        rf = record_function("x")
        rf.__enter__()
        self.assertFalse(rf.__exit__(ValueError, ValueError("v"), None))

    def test_exception_in_generator_and_threads(self):
        def gen():
            with record_function("gen"):
                yield 1
                raise RuntimeError("in generator")

        def worker(i):
            with record_function("worker"):
                if i % 2:
                    raise OSError(i)

        errors = []

        def run(i):
            try:
                worker(i)
            except OSError as e:
                errors.append(e.args[0])

        with profile() as prof:
            g = gen()
            self.assertEqual(next(g), 1)
            with self.assertRaisesRegex(RuntimeError, "in generator"):
                next(g)
            ts = [threading.Thread(target=run, args=(i,)) for i in range(6)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(TIMEOUT)
        self.assertEqual(sorted(errors), [1, 3, 5])
        self.assertEqual(names(prof), ["gen"] + ["worker"] * 6)
        self.assertEqual(unfinished(prof), 0)

    def test_profile_block_raising(self):
        # An exception out of the profile block stops the session and propagates unchanged.
        err = KeyError("k")
        with self.assertRaises(KeyError) as cm:
            with profile() as prof:
                with record_function("r"):
                    raise err
        self.assertIs(cm.exception, err)
        self.assertFalse(strobe._strobe.is_running())
        self.assertEqual(names(prof), ["r"])


class GarbageTest(unittest.TestCase):
    def test_profile_collected_while_running(self):
        # A running profiler is kept alive by the module until it is stopped (or the
        # interpreter exits): dropping the last reference neither stops the session nor frees
        # the profiler, so the session can still be stopped through any reference.
        prof = profile()
        prof.start()
        ref = weakref.ref(prof)
        del prof
        gc.collect()
        self.assertIsNotNone(ref())
        self.assertTrue(strobe._strobe.is_running())
        with record_function("after del"):
            pass
        ref().stop()
        self.assertEqual(names(ref()), ["after del"])
        gc.collect()
        self.assertIsNone(ref())  # stopped: an ordinary object again
        self.assertFalse(strobe._strobe.is_running())

    def test_record_function_collected_while_open(self):
        with profile() as prof:
            rf = record_function("dropped open")
            rf.__enter__()
            del rf
            gc.collect()
            with record_function("after"):
                pass
        # The open range closes at stop, flagged unfinished; the range after it is a sibling.
        ev = {e.name: e for e in prof.events()}
        self.assertEqual(unfinished(prof), 1)
        self.assertEqual(ev["after"].cpu_parent.name, "dropped open")

    def test_result_outlives_profile(self):
        with profile() as prof:
            with record_function("kept"):
                pass
        ev = prof.events()
        del prof
        gc.collect()
        self.assertEqual([e.name for e in ev], ["kept"])


def run_child(code, **kw):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT, **kw)


class ExitTest(unittest.TestCase):
    """A profiler running at interpreter exit is stopped there and its result dropped (no trace
    is written: export_chrome_trace() or on_trace_ready must run before exit); the exit status is
    the program's."""

    PRELUDE = ("import os, sys, threading, strobe.profiler as P\n"
               "def loop():\n"
               "    while True:\n"
               "        with P.record_function('daemon'):\n"
               "            pass\n")

    def test_sys_exit_status_with_recording_daemon_thread(self):
        code = self.PRELUDE + (
            "p = P.profile(with_stack=True)\np.start()\n"
            "threading.Thread(target=loop, daemon=True).start()\n"
            "with P.record_function('main'):\n    sys.exit(7)\n")
        r = run_child(code)
        self.assertEqual((r.returncode, r.stderr), (7, ""))

    def test_uncaught_exception(self):
        code = self.PRELUDE + (
            "p = P.profile()\np.start()\n"
            "threading.Thread(target=loop, daemon=True).start()\n"
            "with P.record_function('main'):\n    raise LookupError('unhandled')\n")
        r = run_child(code)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.rstrip().endswith("LookupError: unhandled"), r.stderr)
        self.assertNotIn("strobe", r.stderr.splitlines()[-1])

    def test_started_in_a_thread_still_running_at_exit(self):
        code = self.PRELUDE + (
            "ev = threading.Event()\n"
            "def body():\n"
            "    p = P.profile()\n"
            "    p.start()\n"
            "    ev.set()\n"
            "    loop()\n"
            "threading.Thread(target=body, daemon=True).start()\n"
            "ev.wait()\nprint('exiting')\n")
        r = run_child(code)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "exiting\n", ""))

    def test_scheduled_profiler_mid_cycle_writes_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            code = self.PRELUDE + (
                "calls = []\n"
                "p = P.profile(schedule=P.schedule(wait=0, warmup=1, active=5),\n"
                "              on_trace_ready=P.tensorboard_trace_handler(sys.argv[1]))\n"
                "p.start()\n"
                "for _ in range(2):\n"
                "    with P.record_function('step'):\n"
                "        pass\n"
                "    p.step()\n"
                "sys.exit(0)\n")
            r = subprocess.run([sys.executable, "-c", code, d], capture_output=True, text=True,
                               timeout=TIMEOUT)
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            self.assertEqual(os.listdir(d), [])

    def test_os_exit_and_exported_trace(self):
        # os._exit skips atexit: the session dies with the process; a trace exported before is
        # complete.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(OUT or d, "exit_exported.json")
            code = ("import os, sys, strobe.profiler as P\n"
                    "with P.profile() as p:\n"
                    "    with P.record_function('before exit'):\n"
                    "        pass\n"
                    "p.export_chrome_trace(sys.argv[1])\n"
                    "q = P.profile()\nq.start()\n"
                    "os._exit(5)\n")
            r = subprocess.run([sys.executable, "-c", code, path], capture_output=True,
                               text=True, timeout=TIMEOUT)
            self.assertEqual((r.returncode, r.stderr), (5, ""))
            with open(path) as f:
                trace = json.load(f)
            self.assertIn("before exit", [e.get("name") for e in trace["traceEvents"]])


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""test_dynolog.py: dynolog's trigger (`dyno gputrace`) against a process that uses strobe.

    test_dynolog.py ONDEMAND_TARGET OUTDIR [SHARED_DIR]

dynolog cannot be installed here, so this file plays its part: a STAND-IN DAEMON, written from
dynolog's public protocol definitions (facebookincubator/dynolog dynolog/src/ipcfabric/ and
dynolog/src/tracing/IPCMonitor.cpp, the same as pytorch/kineto libkineto/ipcfabric/): an AF_UNIX
SOCK_DGRAM socket with the abstract name "dynolog", messages of a header {size_t size; char
type[32]} and a payload; "ctxt" carries {int32 gpu; int32 pid; int64 jobid} and is answered with an
int32 "ctxt"; "req" carries {int32 type; int32 n; int64 jobid; int32 pids[n]} and is answered with a
"req" holding the config text (empty: nothing to do), the config once only, as dynolog's
LibkinetoConfigManager hands it out. The configs are the ones `dyno gputrace` builds
(cli/src/commands/gputrace.rs).

The target (ondemand_target) starts with only STROBE_DYNOLOG=1 in its environment (no
STROBE_ONDEMAND) and a short poll interval. The test checks that it registers, that it polls, that
a gputrace config by duration and one by iterations each write a trace at the name libkineto would
use (ACTIVITIES_LOG_FILE with _PID before .json), that polls leave out the ACTIVITIES bit while a
trace runs and take it back after (the only "report" libkineto makes), that malformed datagrams
and a refused path neither crash the process nor stop it serving, and that the traces pass the
shared validators (--strict) when SHARED_DIR has them. Exit 77 (skip) without python3's AF_UNIX
abstract sockets.
"""
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time

META = struct.Struct("=Q32s")  # size_t size; char type[32]  (x86-64 / aarch64 LP64)
CTXT = struct.Struct("=iiq")
REQ_HEAD = struct.Struct("=iiq")
EVENTS, ACTIVITIES = 1, 2

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def pack(type_, payload):
    return META.pack(len(payload), type_.encode()) + payload


class Daemon:
    """The stand-in dynolog daemon: one datagram socket, what it got, what it hands out."""

    def __init__(self, name):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        # Endpoint.h's address: '\0', the name, '\0' (the last byte is part of the address).
        self.sock.bind(b"\0" + name.encode() + b"\0")
        self.pending = None  # the config for the next poll that asks for ACTIVITIES
        self.ctxts = []
        self.reqs = []  # (type, pids) per poll
        self.client = None

    def serve(self, seconds, until=None):
        """Answers messages for up to `seconds`, or until until() is true."""
        end = time.time() + seconds
        while time.time() < end:
            if until and until():
                return True
            self.sock.settimeout(max(0.01, min(0.2, end - time.time())))
            try:
                data, addr = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            size, type_ = META.unpack_from(data)
            type_ = type_.split(b"\0")[0].decode()
            body = data[META.size:]
            if size != len(body):
                fail(f"message header says {size} bytes, carries {len(body)}")
                continue
            # Reply as dynolog does: to the sender's name (sun_path + 1 up to its NUL), addressed
            # with Endpoint.h's trailing NUL; libkineto names itself dynoconfigclient + UUID v4.
            name = addr[1:].split(b"\0")[0].decode(errors="replace")
            if not re.fullmatch(r"dynoconfigclient[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
                                r"[89ab][0-9a-f]{3}-[0-9a-f]{12}", name):
                fail(f"client name {name!r} is not dynoconfigclient + a UUID v4")
            addr = b"\0" + name.encode() + b"\0"
            self.client = addr
            if type_ == "ctxt":
                gpu, pid, jobid = CTXT.unpack(body)
                self.ctxts.append((gpu, pid, jobid))
                self.sock.sendto(pack("ctxt", struct.pack("=i", len(self.ctxts))), addr)
            elif type_ == "req":
                kind, n, jobid = REQ_HEAD.unpack_from(body)
                pids = list(struct.unpack_from(f"={n}i", body, REQ_HEAD.size))
                if len(body) != REQ_HEAD.size + 4 * n:
                    fail(f"req of {len(body)} bytes for n={n}")
                self.reqs.append((kind, pids))
                cfg = b""
                if self.pending is not None and kind & ACTIVITIES:
                    cfg, self.pending = self.pending.encode(), None
                self.sock.sendto(pack("req", cfg), addr)
            else:
                fail(f"unknown message type {type_!r}")
        return until() if until else True

    def send_raw(self, data):
        self.sock.sendto(data, self.client)


def gputrace_config(log_file, duration_ms=None, iterations=None, roundup=1):
    """The config text `dyno gputrace` sends (gputrace.rs)."""
    if duration_ms is not None:
        trig = f"PROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS={duration_ms}"
    else:
        trig = (f"PROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP={roundup}\n"
                f"ACTIVITIES_ITERATIONS={iterations}")
    opts = ("\nPROFILE_REPORT_INPUT_SHAPES=false\nPROFILE_PROFILE_MEMORY=false\n"
            "PROFILE_WITH_STACK=false\nPROFILE_WITH_FLOPS=false\nPROFILE_WITH_MODULES=false")
    return f"ACTIVITIES_LOG_FILE={log_file}\n{trig}{opts}"


def load(path):
    with open(path) as f:
        return json.load(f)


def validate(shared, path):
    tool = os.path.join(shared or "", "validators", "check_all.sh")
    if not shared or not os.access(tool, os.X_OK):
        print(f"note: {tool} absent: the shared validators were not run on {path}")
        return
    r = subprocess.run([tool, path, "--strict"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        fail(f"check_all.sh --strict {path}: exit {r.returncode}\n{r.stdout[-2000:]}"
             f"{r.stderr[-2000:]}")
    else:
        print(f"ok: check_all.sh --strict {path}")


def main():
    if len(sys.argv) < 3:
        print("usage: test_dynolog.py ONDEMAND_TARGET OUTDIR [SHARED_DIR]")
        return 2
    target, out = sys.argv[1], os.path.abspath(sys.argv[2])
    shared = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))

    # The real name when it is free; a name of our own when another test (or a real dynolog)
    # holds it, passed to strobe through STROBE_DYNOLOG_NAME.
    env = dict(os.environ, STROBE_DYNOLOG="1", STROBE_DYNOLOG_POLL_MS="100",
               STROBE_ONDEMAND_DIRS=out, STROBE_LOG_LEVEL="info")
    env.pop("STROBE_ONDEMAND", None)
    env.pop("KINETO_USE_DAEMON", None)
    try:
        daemon = Daemon("dynolog")
    except OSError:
        name = f"strobe-test-dynolog-{os.getpid()}"
        daemon = Daemon(name)
        env["STROBE_DYNOLOG_NAME"] = name
        print(f"note: @dynolog is taken; the stand-in daemon is @{name}")

    stop = os.path.join(out, "stop")
    proc = subprocess.Popen([target, "60", stop, "--step-ms", "20", "--log"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = proc.pid
    try:
        # Registration and polls.
        if not daemon.serve(10, lambda: daemon.ctxts and len(daemon.reqs) >= 2):
            fail(f"no registration and polls within 10 s: ctxt={daemon.ctxts} "
                 f"req={len(daemon.reqs)}")
            raise SystemExit
        gpu, cpid, jobid = daemon.ctxts[0]
        if cpid != pid:
            fail(f"ctxt pid {cpid}, expected {pid}")
        kind, pids = daemon.reqs[-1]
        if not pids or pids[0] != pid or os.getpid() not in pids:
            fail(f"req pids {pids}: expected {pid} first, then its ancestors ({os.getpid()})")
        if kind != EVENTS | ACTIVITIES:
            fail(f"idle poll kind {kind}, expected {EVENTS | ACTIVITIES}")
        if len(daemon.ctxts) != 1:
            fail(f"{len(daemon.ctxts)} registrations after an answer, expected 1")
        print(f"ok: pid {pid} registered (gpu {gpu}, job {jobid}) and polls as {kind}")

        # Malformed datagrams: too short, a size that lies, an unknown type, a config that is
        # not KEY=VALUE, an out-of-range number. Each is dropped; the process goes on.
        daemon.send_raw(b"\x01\x02\x03")
        daemon.send_raw(META.pack(1000, b"req") + b"ACTIVITIES_LOG_FILE=/x.json")
        daemon.send_raw(pack("zzzz", b"1234"))
        daemon.send_raw(pack("req", b"no equals sign here\n"))
        daemon.send_raw(pack("req", b"ACTIVITIES_DURATION_MSECS=99999999999999\n"))
        # A path outside the allowed folders is refused as `strobe trigger` refuses it.
        daemon.send_raw(pack("req", gputrace_config("/proc/strobe_dyno.json", 100).encode()))
        n0 = len(daemon.reqs)
        daemon.serve(10, lambda: len(daemon.reqs) >= n0 + 3)
        if proc.poll() is not None:
            fail(f"the target died after malformed messages: exit {proc.returncode}")
            raise SystemExit
        if any(k != EVENTS | ACTIVITIES for k, _ in daemon.reqs[n0:]):
            fail(f"a malformed message or a refused path started a job: {daemon.reqs[n0:]}")
        print("ok: malformed datagrams and a refused path dropped; the target goes on")

        # By duration.
        # A trace shows as polls without ACTIVITIES, then their return. The duration trace
        # (600 ms, polls every 100 ms) must show it; the iteration trace may end between two
        # polls on a loaded machine, so there the file is what is waited for.
        def trace_cycle(log_file, expect, must_see_busy, **kw):
            daemon.pending = gputrace_config(log_file, **kw)
            n = len(daemon.reqs)
            if not daemon.serve(30, lambda: any(not k & ACTIVITIES for k, _ in daemon.reqs[n:])
                                or os.path.exists(expect)):
                fail(f"{kw}: neither a poll without ACTIVITIES nor {expect} within 30 s")
                return None
            started = len(daemon.reqs)
            # Done: an idle poll sent after the file appeared (the job is idle again only once
            # the file is whole).
            seen = []

            def done():
                if not seen and os.path.exists(expect):
                    seen.append(len(daemon.reqs))
                return bool(seen) and any(k & ACTIVITIES for k, _ in daemon.reqs[seen[0]:])

            if not daemon.serve(30, done):
                fail(f"{kw}: the trace did not end within 30 s")
                return None
            busy = sum(1 for k, _ in daemon.reqs[n:] if not k & ACTIVITIES)
            if must_see_busy and busy == 0:
                fail(f"{kw}: no poll without ACTIVITIES while the trace ran")
            print(f"ok: {kw}: {busy} polls without ACTIVITIES while tracing, then idle again "
                  f"(poll {started} -> {len(daemon.reqs)})")
            if not os.path.exists(expect):
                fail(f"{kw}: no trace at {expect} (files: {os.listdir(out)})")
                return None
            return load(expect)

        dur = os.path.join(out, f"dyno_duration_{pid}.json")
        t = trace_cycle(os.path.join(out, "dyno_duration.json"), dur, True, duration_ms=600)
        if t is not None:
            names = [e.get("name") for e in t.get("traceEvents", [])]
            if "aten::mm" not in names:
                fail(f"duration trace without aten::mm ({len(names)} events)")
            else:
                print(f"ok: duration trace {dur}: {names.count('aten::mm')} aten::mm")

        # By iterations: 4 steps from the next multiple of 10.
        it = os.path.join(out, f"dyno_iter_{pid}.json")
        t = trace_cycle(os.path.join(out, "dyno_iter.json"), it, False, iterations=4, roundup=10)
        if t is not None:
            steps = sorted(e["name"] for e in t.get("traceEvents", [])
                           if str(e.get("name", "")).startswith("ProfilerStep#"))
            nums = sorted(int(s.split("#")[1]) for s in steps)
            if len(nums) != 4 or nums[0] % 10 != 0 or nums != list(range(nums[0], nums[0] + 4)):
                fail(f"iteration trace steps {nums}: expected 4 from a multiple of 10")
            else:
                print(f"ok: iteration trace {it}: steps {nums}")

        for p in (dur, it):
            if os.path.exists(p):
                validate(shared, p)
        if os.path.exists("/proc/strobe_dyno.json") or os.path.exists(
                f"/proc/strobe_dyno_{pid}.json"):
            fail("a trace was written outside the allowed folders")
    finally:
        open(stop, "w").close()
        try:
            rc = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            fail("the target did not stop within 20 s")
        _, err = proc.communicate()
        if rc != 0:
            fail(f"the target exited {rc}")
        dropped = [l for l in err.splitlines() if "dropped" in l]
        if len(dropped) < 5:
            fail(f"expected 5 'dropped' log lines, got {len(dropped)}:\n{err[-3000:]}")
        else:
            print(f"ok: {len(dropped)} drops logged, e.g. {dropped[0].strip()}")
        if "not started" not in err:
            fail(f"the refused path was not logged:\n{err[-3000:]}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all dynolog checks passed")
    return 0


if __name__ == "__main__":
    if not hasattr(socket, "AF_UNIX") or not sys.platform.startswith("linux"):
        print("SKIP: abstract AF_UNIX sockets need Linux")
        sys.exit(77)
    sys.exit(main())

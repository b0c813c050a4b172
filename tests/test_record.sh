#!/bin/bash
# `strobe record` on programs that know nothing of strobe (tests/record_target.c, a shell script,
# python3 -c), checked against what the programs print about themselves (pids, thread ids):
#  1. threads (--heap=all): the process by pid and name, the threads by tid and the names they gave
#     themselves (pthread_setname_np), each worker's allocations on its own thread;
#  2. fork without exec (--heap=all): parent and child are processes of their own; the 77777-byte
#     block the parent allocated before the fork is in the parent only, the child's 55555-byte
#     block in the child only (the child does not write the parent's inherited session), in
#     the order they happened across the two processes (one timeline);
#  3. fork+exec and posix_spawn of /bin/sh: the child by pid, named after the program it runs;
#  4. a shell script that runs ls (with "#!", and without, which sh runs), and python3 -c: every
#     process, by name and pid;
#  5. exit status: 3 -> 3, SIGTERM -> 143; PROGRAM missing -> 127, not executable -> 126, with
#     the shell's messages; an output that cannot be written is refused (exit 2) before PROGRAM
#     runs (its marker file is not made); usage errors; SIGTERM sent to strobe record reaches
#     the program (exit 143) and the trace is still written; SIGINT to the process group (Ctrl-C)
#     ends the program only, and strobe record writes the trace and exits 130;
#  6. --no-follow: one process, and what it runs sees no STROBE_RECORD_* nor LD_PRELOAD; with
#     following, the program's environment differs from a plain run only by those and
#     NVTX_INJECTION64_PATH and NCCL_PROFILER_PLUGIN (the library as the program's NVTX tool and
#     NCCL profiler plugin);
#  7. .pftrace output read back by `strobe info` and `strobe summary`, .json.gz output; --stats; --keep-parts;
#     --delay past the program's end writes nothing; --duration stops recording; CUDA through
#     the stand-in CUPTI: the launch, its kernel and their flow, in JSON and .pftrace;
#  8. every trace passes the independent checkers (--strict) where SHARED_DIR/validators exists.
# Usage: test_record.sh STROBE TARGET OUT_DIR SHARED_DIR. Exit 77 (skipped) without python3.
set -u
strobe=$1 target=$2 out=$3 shared=$4
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"
checker="$shared/validators/check_all.sh"
traces=()

# record NAME [OPTIONS...] -- PROGRAM...: runs strobe record into $out/NAME.json, keeps its stdout
# in $out/NAME.out and stderr in $out/NAME.err; sets $rc.
record() {
    local name=$1
    shift
    "$strobe" record -o "$out/$name.json" "$@" >"$out/$name.out" 2>"$out/$name.err"
    rc=$?
}

# check TRACE EXPECT_FILE PYTHON: runs the python checks on the trace (json) with `facts` holding
# the program's printed lines.
check() {
    python3 - "$@" <<'PY' || exit 1
import collections, json, sys
trace, facts_path, code = sys.argv[1], sys.argv[2], sys.argv[3]
doc = json.load(open(trace))
events = doc["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
mem = [e for e in events if e.get("name") == "[memory]"]
facts = [l.split() for l in open(facts_path)]
bad = []
def want(ok, msg):
    if not ok:
        bad.append(msg)
exec(code)
for b in bad:
    print("FAIL:", trace, b)
print("checked", trace, "processes", procs)
sys.exit(1 if bad else 0)
PY
}

# 1. Threads.
record threads --heap=all -- "$target" threads
[ "$rc" = 0 ] || { cat "$out/threads.err"; fail "threads: exit $rc"; }
grep -q "strobe record: wrote $out/threads.json: 1 process, [0-9]* events" "$out/threads.err" ||
  { cat "$out/threads.err"; fail "threads: no closing line"; }
check "$out/threads.json" "$out/threads.out" '
pid = int(facts[0][1])
want(procs.get(pid) == "record_target", "process %d named record_target: %s" % (pid, procs))
want(len(procs) == 1, "one process: %s" % procs)
for f in facts[1:]:
    tid, name = int(f[1]), f[2]
    want(threads.get((pid, tid)) == name, "thread %d named %s: %s" % (tid, name, threads))
    sizes = [abs(e["args"]["Bytes"]) for e in mem if e["tid"] == tid and e["args"]["Bytes"] > 0]
    want(sum(1 for s in sizes if 1000 <= s <= 1200) >= 100,
         "thread %s: its 100 blocks of 1000..1099 bytes on its own track (%d)" % (name, len(sizes)))
'
traces+=("$out/threads.json")
"$strobe" info "$out/threads.json" >"$out/threads.info" || fail "strobe info on threads.json"
grep -q '"worker-a"' "$out/threads.info" || fail "strobe info lists no worker-a"

# 2. fork without exec.
record fork --heap=all -- "$target" fork
[ "$rc" = 0 ] || { cat "$out/fork.err"; fail "fork: exit $rc"; }
check "$out/fork.json" "$out/fork.out" '
pid = int(facts[0][1]); child = int([f for f in facts if f[0] == "child"][0][1])
want(procs.get(pid) == "record_target" and procs.get(child) == "record_target",
     "parent %d and child %d named record_target: %s" % (pid, child, procs))
def where(lo, hi):
    return collections.Counter((e["pid"], e["args"]["Bytes"] > 0) for e in mem
                               if lo <= abs(e["args"]["Bytes"]) <= hi)
big, small = where(77777, 77777 + 64), where(55555, 55555 + 64)
want(big == {(pid, True): 1, (pid, False): 1}, "77777 bytes: one alloc and free in the parent only: %s" % big)
want(small == {(child, True): 1, (child, False): 1}, "55555 bytes: in the child only: %s" % small)
want(all(e["pid"] in (pid, child) for e in events), "events of other pids")
# One timeline: the parent allocated before the fork and freed after the child was done.
order = [(e["ts"], e["pid"], e["args"]["Bytes"] > 0) for e in mem
         if 55555 <= abs(e["args"]["Bytes"]) <= 55555 + 64 or 77777 <= abs(e["args"]["Bytes"]) <= 77777 + 64]
want([x[1:] for x in sorted(order)] == [(pid, True), (child, True), (child, False), (pid, False)],
     "parent alloc < child alloc < child free < parent free on the merged timeline: %s" % sorted(order))
'
traces+=("$out/fork.json")

# 3. fork+exec and posix_spawn.
for mode in forkexec spawn; do
  record $mode --heap=all -- "$target" $mode /bin/sh -c 'exit 0'
  [ "$rc" = 0 ] || { cat "$out/$mode.err"; fail "$mode: exit $rc"; }
  check "$out/$mode.json" "$out/$mode.out" '
pid = int(facts[0][1]); child = int([f for f in facts if f[0] == "child"][0][1])
want(procs.get(pid) == "record_target", "parent %d: %s" % (pid, procs))
want(procs.get(child) == "sh", "child %d named sh: %s" % (child, procs))
want(len(procs) == 2, "two processes: %s" % procs)
'
  traces+=("$out/$mode.json")
done

# 4. A shell script and python3.
printf '#!/bin/sh\necho "pid $$ script"\nls / >/dev/null\n' >"$out/script.sh" && chmod +x "$out/script.sh"
record script -- "$out/script.sh"
[ "$rc" = 0 ] || { cat "$out/script.err"; fail "script: exit $rc"; }
check "$out/script.json" "$out/script.out" '
pid = int(facts[0][1])
want(pid in procs, "the script process %d: %s" % (pid, procs))
want("ls" in procs.values(), "ls among the processes: %s" % procs)
'
traces+=("$out/script.json")
printf 'echo "pid $$ noshebang"\nls / >/dev/null\n' >"$out/noshebang.sh" && chmod +x "$out/noshebang.sh"
record noshebang -- "$out/noshebang.sh"
[ "$rc" = 0 ] || { cat "$out/noshebang.err"; fail "script without #!: exit $rc"; }
check "$out/noshebang.json" "$out/noshebang.out" '
pid = int(facts[0][1])
want(procs.get(pid) == "sh" and "ls" in procs.values(), "script without #! run by sh %d, with ls: %s" % (pid, procs))
'
record python -- python3 -c 'import os; print("pid", os.getpid(), "python")'
[ "$rc" = 0 ] || { cat "$out/python.err"; fail "python3: exit $rc"; }
check "$out/python.json" "$out/python.out" '
pid = int(facts[0][1])
want(procs.get(pid) == "python3", "python3 process %d: %s" % (pid, procs))
'
traces+=("$out/python.json")

# 5. Exit status and refusals.
record exit3 -- "$target" exit 3
[ "$rc" = 3 ] || fail "exit 3 gave $rc"
record term -- "$target" term
[ "$rc" = 143 ] || fail "killed by SIGTERM gave $rc, not 143"
record missing -- no-such-program-strobe-test
[ "$rc" = 127 ] || fail "missing program gave $rc, not 127"
grep -qx "strobe record: no-such-program-strobe-test: command not found" "$out/missing.err" ||
  { cat "$out/missing.err"; fail "missing program: message"; }
printf '#!/bin/sh\n' >"$out/noexec.sh" && chmod 644 "$out/noexec.sh"
record noexec -- "$out/noexec.sh"
[ "$rc" = 126 ] || fail "non-executable program gave $rc, not 126"
grep -qx "strobe record: $out/noexec.sh: Permission denied" "$out/noexec.err" ||
  { cat "$out/noexec.err"; fail "non-executable: message"; }
for bad in "$out/no-such-dir/t.json" "$out"; do
  "$strobe" record -o "$bad" -- "$target" marker "$out/marker" >/dev/null 2>"$out/refused.err"
  rc=$?
  [ "$rc" = 2 ] || fail "unwritable output $bad gave $rc, not 2"
  [ -e "$out/marker" ] && fail "the program ran although the output $bad cannot be written"
  [ "$(wc -l <"$out/refused.err")" = 1 ] || { cat "$out/refused.err"; fail "refusal: not one line"; }
done
[ -z "$(ls -d "$out"/*.parts* 2>/dev/null)" ] || fail "parts folders left: $(ls -d "$out"/*.parts*)"
"$strobe" record >/dev/null 2>"$out/usage.err"
[ $? = 2 ] && [ "$(wc -l <"$out/usage.err")" = 1 ] || fail "no PROGRAM: not a one-line usage error"
"$strobe" record --bogus -- "$target" exit 0 >/dev/null 2>&1
[ $? = 2 ] || fail "unknown option: not exit 2"
# SIGTERM to strobe record goes to the program; the trace of what it recorded is still written.
"$strobe" record -o "$out/sigterm.json" -- sleep 30 2>"$out/sigterm.err" &
rec=$!
for _ in $(seq 100); do ls "$out"/sigterm.json.parts/*.json >/dev/null 2>&1 && break; sleep 0.1; done
sleep 0.2
kill -TERM $rec
wait $rec
rc=$?
[ "$rc" = 143 ] || { cat "$out/sigterm.err"; fail "SIGTERM forwarded: exit $rc, not 143"; }
grep -q '"sleep"' "$out/sigterm.json" || fail "SIGTERM: no trace of sleep"
# The process stopped its session at the signal (record_hook.c's handler), which marks it.
python3 - "$out/sigterm.json" <<'PY' || fail "SIGTERM: no session span over the time sleep ran, or no mark"
import json, sys
all_ev = json.load(open(sys.argv[1]))["traceEvents"]
ev = [e for e in all_ev if e.get("name") == "strobe session"]
mark = [e for e in all_ev if e.get("name") == "[strobe] process ended by SIGTERM"]
# (The span starts when the session has started, some time after its part file appears.)
sys.exit(0 if len(ev) == 1 and ev[0]["dur"] >= 100000 and len(mark) == 1 else 1)
PY
traces+=("$out/sigterm.json")
# Ctrl-C: SIGINT to the whole process group (as a terminal sends it) ends the program, not strobe
# record, which then writes the trace and exits 130.
python3 - "$strobe" "$out/sigint.json" <<'PY' || fail "SIGINT to the process group"
import os, signal, subprocess, sys, time
def dfl():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
p = subprocess.Popen([sys.argv[1], "record", "-q", "-o", sys.argv[2], "--", "sleep", "30"],
                     start_new_session=True, preexec_fn=dfl)
parts = sys.argv[2] + ".parts"
for _ in range(100):
    if os.path.isdir(parts) and any(f.endswith(".json") for f in os.listdir(parts)):
        break
    time.sleep(0.1)
time.sleep(0.2)
os.killpg(p.pid, signal.SIGINT)
rc = p.wait(timeout=60)
ok = rc == 130 and os.path.exists(sys.argv[2])
print("SIGINT: strobe record exited %d, trace %s" % (rc, "written" if ok else "missing"))
sys.exit(0 if ok else 1)
PY

# 6. --no-follow and the environment.
record nofollow --no-follow -- "$target" spawn /bin/sh -c "env >'$out/nofollow.env'"
[ "$rc" = 0 ] || { cat "$out/nofollow.err"; fail "--no-follow: exit $rc"; }
grep -q "1 process," "$out/nofollow.err" || { cat "$out/nofollow.err"; fail "--no-follow: not one process"; }
grep -E '^(STROBE_RECORD_|LD_PRELOAD=)' "$out/nofollow.env" && fail "--no-follow: the child sees strobe's variables"
record nofollowfork --no-follow --heap=all -- "$target" fork
[ "$rc" = 0 ] || { cat "$out/nofollowfork.err"; fail "--no-follow fork: exit $rc"; }
check "$out/nofollowfork.json" "$out/nofollowfork.out" '
pid = int(facts[0][1])
want(list(procs) == [pid], "--no-follow: the parent %d only: %s" % (pid, procs))
big = [e["args"]["Bytes"] > 0 for e in mem if 77777 <= abs(e["args"]["Bytes"]) <= 77777 + 64]
want(sorted(big) == [False, True], "77777 bytes: one alloc and one free: %s" % big)
want(not [e for e in mem if 55555 <= abs(e["args"]["Bytes"]) <= 55555 + 64], "the child recorded")
'
env -u LD_PRELOAD /bin/sh -c "env >'$out/plain.env'"
env -u LD_PRELOAD "$strobe" record -q -o "$out/env.json" -- /bin/sh -c "env >'$out/recorded.env'" ||
  fail "recorded env run failed"
diff <(grep -vE '^(STROBE_RECORD_[A-Z_]*|LD_PRELOAD|NVTX_INJECTION64_PATH|NCCL_PROFILER_PLUGIN)=' "$out/recorded.env" | sort) <(sort "$out/plain.env") ||
  fail "the recorded program's environment differs by more than strobe's variables"
grep -q '^STROBE_RECORD_DIR=' "$out/recorded.env" || fail "the recorded program has no STROBE_RECORD_DIR"
traces+=("$out/nofollow.json")

# 7. .pftrace, --stats, --keep-parts, --delay, --duration.
"$strobe" record -q -o "$out/pf.pftrace" --heap=all -- "$target" fork >/dev/null 2>"$out/pf.err" ||
  { cat "$out/pf.err"; fail ".pftrace run"; }
[ -s "$out/pf.err" ] && { cat "$out/pf.err"; fail "-q printed"; }
"$strobe" info "$out/pf.pftrace" >"$out/pf.info" || fail "strobe info on the .pftrace"
[ "$(grep -c '"record_target"$' "$out/pf.info")" -ge 2 ] || { cat "$out/pf.info"; fail ".pftrace: two record_target processes"; }
"$strobe" summary -q "$out/pf.pftrace" >/dev/null || fail "strobe summary on the .pftrace"
traces+=("$out/pf.pftrace")
"$strobe" record -q -o "$out/gz.json.gz" -- "$target" exit 0 >/dev/null 2>&1 || fail ".json.gz run"
gzip -dc "$out/gz.json.gz" >"$out/gz.json" || fail ".json.gz: not gzip"
grep -q '"record_target"' "$out/gz.json" || fail ".json.gz: no record_target process"
record stats --stats --keep-parts -- "$target" exit 0
[ "$rc" = 0 ] || { cat "$out/stats.err"; fail "--stats: exit $rc"; }
grep -q "Self CPU" "$out/stats.out" || { cat "$out/stats.out"; fail "--stats: no summary table"; }
ls "$out/stats.json.parts/"*.json >/dev/null 2>&1 || fail "--keep-parts: no parts kept"
RANK=5 "$strobe" record -q -o "$out/p-%p-r%r.json" -- "$target" exit 0 >"$out/pr.out" 2>&1 || fail "%p %r: exit $?"
[ -f "$out/p-$(awk '/^pid/ {print $2}' "$out/pr.out")-r5.json" ] || fail "%p and %r not expanded: $(ls "$out")"
STROBE_TEST_FAKE_CUPTI= STROBE_CUPTI_PATH= "$strobe" record --stats --activities cpu,cuda -o "$out/stats2.json" -- "$target" exit 0 >"$out/stats2.out" 2>/dev/null
grep -q "Kernel time total" "$out/stats2.out" && fail "--stats printed a kernel table without device activity"
record delay --delay 30 -- "$target" exit 0
[ "$rc" = 0 ] || { cat "$out/delay.err"; fail "--delay: exit $rc"; }
[ -e "$out/delay.json" ] && fail "--delay past the end wrote a trace"
grep -q "no process recorded anything" "$out/delay.err" || { cat "$out/delay.err"; fail "--delay: message"; }
record duration --heap=all --duration 0.3 -- python3 -c '
import time
time.sleep(1.0)
keep = [bytearray(300000 + 4096 * i) for i in range(20)]'
[ "$rc" = 0 ] || { cat "$out/duration.err"; fail "--duration: exit $rc"; }
check "$out/duration.json" "$out/duration.out" '
late = [e for e in mem if e["args"]["Bytes"] >= 300000]
want(not late, "allocations after --duration recorded: %d" % len(late))
want(len(mem) > 0, "allocations before the end of --duration recorded")
'
traces+=("$out/duration.json")

# 7b. --activities cpu,cuda: against the stand-in CUPTI (tests/fake_cuda), where it is built; a
#     program without CUDA gets a note.
if [ -n "${STROBE_TEST_FAKE_CUPTI:-}" ]; then
  for fmt in json pftrace; do
    STROBE_CUPTI_PATH=$STROBE_TEST_FAKE_CUPTI LD_LIBRARY_PATH=$STROBE_TEST_FAKE_CUDA_DIR \
      "$strobe" record --activities cpu,cuda -o "$out/cuda.$fmt" -- "$target" cuda \
      "$STROBE_TEST_FAKE_CUPTI" >"$out/cuda.$fmt.out" 2>"$out/cuda.err" || { cat "$out/cuda.err"; fail "cuda: exit $?"; }
    grep -q "note: no CUDA" "$out/cuda.err" && fail "cuda: the note that no CUDA was recorded"
    traces+=("$out/cuda.$fmt")
  done
  "$strobe" convert -q "$out/cuda.pftrace" "$out/cuda_pf.json" || fail "convert of cuda.pftrace"
  for t in json:cuda.json pftrace:cuda_pf.json; do
    check "$out/${t#*:}" "$out/cuda.${t%%:*}.out" '
pid = int(facts[0][1])
launch = [e for e in events if e.get("name") == "cudaLaunchKernel"]
kernel = [e for e in events if e.get("cat") == "kernel"]
want(len(launch) == 1 and launch[0]["pid"] == pid and launch[0]["args"].get("correlation") == 1,
     "one cudaLaunchKernel on pid %d with its args: %s" % (pid, launch))
want(len(kernel) == 1 and kernel[0]["pid"] == 0 and kernel[0]["tid"] == 7, "one kernel on GPU 0 stream 7: %s" % kernel)
s = [e for e in events if e.get("ph") == "s"]
f = [e for e in events if e.get("ph") == "f"]
want(len(s) == 1 and len(f) == 1 and s[0]["id"] == f[0]["id"], "one flow pair: %s %s" % (s, f))
if launch and kernel and s and f:
    want(s[0]["ts"] == launch[0]["ts"] and s[0]["tid"] == launch[0]["tid"], "the flow starts on the launch")
    want(f[0]["ts"] == kernel[0]["ts"] and f[0]["tid"] == 7, "the flow ends on the kernel")
want(procs.get(0) == "GPU 0", "the device process: %s" % procs)
'
  done
  "$strobe" record --activities cpu,cuda -o "$out/nocuda.json" -- "$target" exit 0 2>"$out/nocuda.err" ||
    fail "cuda requested without CUDA: exit $?"
  grep -q "note: no CUDA activity was recorded" "$out/nocuda.err" || { cat "$out/nocuda.err"; fail "no note without CUDA"; }
else
  echo "cuda skipped: the stand-in CUPTI is not built (no cupti.h)"
fi

# 7d. --sample: a CPU-bound process (record_target spin 400) is sampled, its hot function on top;
#     --markers: the value reaches every process as STROBE_MARKERS (src/markers reads it at
#     load; test_markers checks what it does), and a bad value is a usage error.
record sample --sample=500 -- "$target" spin 400
[ "$rc" = 0 ] || { cat "$out/sample.err"; fail "sample: exit $rc"; }
if grep -q "sampling" "$out/sample.err"; then
  echo "sample skipped: $(grep sampling "$out/sample.err" | head -1)"
else
  traces+=("$out/sample.json")
  check "$out/sample.json" /dev/null '
main = [p for p, n in procs.items() if n == "record_target"]
want(len(procs) == 1 and len(main) == 1, "one process, record_target (not strobe'"'"'s helpers): %s" % procs)
# The samples are Chrome'"'"'s CPU profile events: each sample a leaf node of its chunk.
nodes, s = {}, []
for e in events:
    if e.get("ph") == "P" and e.get("name") == "ProfileChunk" and e["pid"] in main:
        cp = e["args"]["data"]["cpuProfile"]
        nodes.update({(e["pid"], e["id"], n["id"]): n["callFrame"]["functionName"] for n in cp["nodes"]})
        s += [nodes[(e["pid"], e["id"], k)] for k in cp["samples"]]
want(len(s) >= 40, "about 200 samples in 400 ms at 500 Hz: %d" % len(s))
hot = [n for n in s if "spin_hot" in n]
want(len(hot) >= 0.8 * max(len(s), 1), "spin_hot on top of most samples: %d of %d" % (len(hot), len(s)))
'
  "$strobe" stacks --samples "$out/sample.json" >"$out/sample.folded" || fail "stacks --samples"
  grep -q "spin_hot" "$out/sample.folded" || fail "stacks --samples: no spin_hot"
fi
"$strobe" record -q --markers "Event : FTRACE" -o "$out/markers.json" -- /bin/sh -c 'echo "markers=$STROBE_MARKERS"' >"$out/markers.out" 2>&1
grep -q "^markers=Event : FTRACE$" "$out/markers.out" || { cat "$out/markers.out"; fail "--markers: STROBE_MARKERS not passed on"; }
"$strobe" record --markers intervals -- /bin/true 2>"$out/markers_bad.err"
[ $? = 2 ] && grep -q "markers" "$out/markers_bad.err" || fail "--markers intervals: not a usage error"
"$strobe" record --sample=0 -- /bin/true 2>/dev/null
[ $? = 2 ] || fail "--sample=0: not a usage error"

# 7c. NVTX: a program that uses only NVTX (tests/nvtx_plain.c, where the nvtx3 headers are found)
#     under strobe record: the library is its NVTX tool (NVTX_INJECTION64_PATH); every range and
#     mark, on the thread that made it, with the domain as an arg. nvtx_plain makes: on its main
#     thread "registered" (domain plain-domain) around "w", and a start/end range "start"; on a
#     worker, 1000 "plain" ranges each holding a mark "m".
if [ -n "${STROBE_TEST_NVTX_PLAIN:-}" ]; then
  record nvtx -- "$STROBE_TEST_NVTX_PLAIN"
  [ "$rc" = 0 ] || { cat "$out/nvtx.err"; fail "nvtx: exit $rc"; }
  grep -q "^levels 0 1 1 0$" "$out/nvtx.out" || { cat "$out/nvtx.out"; fail "nvtx: the program's output changed"; }
  traces+=("$out/nvtx.json")
  check "$out/nvtx.json" /dev/null '
x = [e for e in events if e.get("ph") == "X"]
def named(n):
    return [e for e in x if e.get("name") == n]
plain, reg, w = named("plain"), named("registered"), named("w")
marks = [e for e in events if e.get("ph") in ("i", "I") and e.get("name") == "m"]
want(len(plain) == 1000, "1000 plain ranges: %d" % len(plain))
want(len(marks) == 1000, "1000 marks: %d" % len(marks))
want(len(reg) == 1 and reg[0].get("args", {}).get("domain") == "plain-domain",
     "registered, in plain-domain: %s" % reg)
want(len(w) == 1, "one w range: %s" % w)
if reg and w and plain:
    want(reg[0]["tid"] == w[0]["tid"] and reg[0]["tid"] != plain[0]["tid"],
         "registered and w on the main thread, plain on the worker")
    want(reg[0]["ts"] <= w[0]["ts"] and w[0]["ts"] + w[0]["dur"] <= reg[0]["ts"] + reg[0]["dur"],
         "w nests in registered")
    want(len({e["tid"] for e in plain}) == 1, "plain on one thread")
want(any(e.get("name") == "start" for e in events), "the start/end range start")
want(len(procs) == 1, "one process: %s" % procs)
'
  # --capture-range nvtx:w: only what happens inside nvtx_plain's "w" range is recorded: "w"
  # itself, the start/end range and the worker's 1000 ranges and marks, not "registered" (pushed
  # before "w"); nvtx:none (no such range): nothing, no trace, the program's status.
  record nvtxcap --capture-range nvtx:w -- "$STROBE_TEST_NVTX_PLAIN"
  [ "$rc" = 0 ] || { cat "$out/nvtxcap.err"; fail "nvtx capture: exit $rc"; }
  traces+=("$out/nvtxcap.json")
  check "$out/nvtxcap.json" /dev/null '
x = [e for e in events if e.get("ph") == "X"]
names = collections.Counter(e.get("name") for e in x)
want(names["w"] == 1 and names["plain"] == 1000, "w and the 1000 plain ranges: %s" % names)
want(names["registered"] == 0, "registered (pushed before w) is not recorded: %s" % names)
want(len([e for e in events if e.get("name") == "m"]) == 1000, "the 1000 marks")
'
  record nvtxnone --capture-range nvtx:none -- "$STROBE_TEST_NVTX_PLAIN"
  [ "$rc" = 0 ] && [ ! -e "$out/nvtxnone.json" ] || fail "capture of a range that never comes: exit $rc, or a trace"
  "$strobe" record --capture-range nvtx:w --delay 1 -- /bin/true 2>/dev/null
  [ $? = 2 ] || fail "--capture-range with --delay: not a usage error"
  "$strobe" record --capture-range cuda -- /bin/true 2>/dev/null
  [ $? = 2 ] || fail "--capture-range cuda: not a usage error"
else
  echo "nvtx skipped: nvtx_plain not built (no nvtx3 headers)"
fi

# 8. The independent checkers.
if [ -x "$checker" ]; then
  for t in "${traces[@]}"; do
    strobe_check_trace "$shared" "$t" --strict >"$t.check.log" 2>&1 || { cat "$t.check.log"; fail "checkers on $t"; }
    echo "ok    checkers on $t"
  done
else
  echo "checkers skipped: $checker not found"
fi
echo "test_record: ok"

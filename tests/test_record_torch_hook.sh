#!/bin/bash
# The import hook of `strobe record --torch` (src/torch/pyhook/sitecustomize.py), where torch need
# not be installed: a fake torch package (tests/torch_fake; it loads a library named
# libtorch_cpu.so) and a stand-in observer (tests/torch_stub_observer.c, given through
# STROBE_RECORD_TORCH_LIB) that records "strobe_stub_observer flags=N" when it is turned on and a
# range per torch.op(NAME). A program imports torch, forks a child, starts a multiprocessing spawn
# child and a subprocess (each imports torch): the observer is on in each of them (a range of its
# own in each process of the merged trace, the fork child's op in its own), with the flags of
# --record-shapes, --profile-memory and --with-stack; the user's sitecustomize (on PYTHONPATH) runs
# once in every interpreter and is the module `sitecustomize`; PYTHONPATH keeps the user's entries
# after the hook's. Without --torch the same program gets the suggestion, once; with it, none. An
# observer that cannot load prints one line and the program runs on; --torch without an observer
# fails at once (exit 2); --no-follow's children do nothing and say nothing. Every trace passes the
# checkers (--strict) where SHARED_DIR has them.
# Usage: test_record_torch_hook.sh STROBE STUB_OBSERVER FAKE_LIBTORCH_CPU OUT_DIR SHARED_DIR.
# Exit 77 without python3.
set -u
strobe=$1 stub=$2 cpu=$3 out=$4 shared=$5
# The system's python3 first: a version manager's python3 on PATH may be a shell script (pyenv's
# shim), whose processes would be recorded too.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out/user" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"
here=$(cd "$(dirname "$0")" && pwd)
export FAKE_LIBTORCH_CPU=$cpu USER_SITE_LOG=$out/site.log

cat >"$out/user/sitecustomize.py" <<'PY'
import os
with open(os.environ["USER_SITE_LOG"], "a") as f:
    f.write("%d\n" % os.getpid())
PY
cat >"$out/prog.py" <<'PY'
import multiprocessing, os, subprocess, sys
import torch
def spawned():
    import torch
    torch.op("spawn_op")
if __name__ == "__main__":
    torch.op("main_op")
    import sitecustomize
    assert sitecustomize.__file__.endswith("user/sitecustomize.py"), sitecustomize.__file__
    with open(os.environ["USER_SITE_LOG"] + ".path", "w") as f:
        f.write(os.environ.get("PYTHONPATH", "") + "\n")
    pid = os.fork()
    if pid == 0:
        torch.op("fork_op")
        os._exit(0)
    os.waitpid(pid, 0)
    p = multiprocessing.get_context("spawn").Process(target=spawned)
    p.start()
    p.join()
    subprocess.run([sys.executable, "-c", "import torch; torch.op('sub_op')"], check=True)
PY
user_path="$out/user:$here/torch_fake"

# check_trace TRACE FLAGS: the observer's range in the main, spawn and subprocess interpreters,
# each op in a process of its own.
check_trace() {
  python3 - "$1" "$2" <<'PY' || exit 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
flags = sys.argv[2]
procs = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
on = [e["pid"] for e in ev if e.get("name") == "strobe_stub_observer flags=" + flags]
ops = {}
for e in ev:
    if e.get("name", "").endswith("_op"):
        ops.setdefault(e["name"], []).append(e["pid"])
bad = []
if len(on) != 3 or len(set(on)) != 3:
    bad.append("the observer on in 3 interpreters (main, spawn, subprocess) with flags %s: %s"
               % (flags, on))
for name in ("main_op", "fork_op", "spawn_op", "sub_op"):
    if len(ops.get(name, [])) != 1:
        bad.append("%s once: %s" % (name, ops.get(name)))
pids = [ops[n][0] for n in ops if len(ops[n]) == 1]
if len(set(pids)) != len(pids):
    bad.append("each op in a process of its own: %s" % ops)
if ops.get("main_op") and on and ops["main_op"][0] not in on:
    bad.append("main_op's process has the observer's range")
if bad:
    print("FAIL (%s):\n  %s" % (sys.argv[1], "\n  ".join(bad)))
    sys.exit(1)
print("ok    %s: the observer on in %d interpreters, %d ops, %d processes"
      % (sys.argv[1], len(on), len(ops), len(procs)))
PY
}

# --torch, then the three options (flags 1 | 2 | 4 = 7).
rm -f "$out/site.log"
PYTHONPATH=$user_path STROBE_RECORD_TORCH_LIB=$stub "$strobe" record --torch -o "$out/torch.json" \
  -- "$py" "$out/prog.py" >"$out/torch.out" 2>"$out/torch.err" || { rc=$?; cat "$out/torch.err"; fail "--torch: exit $rc"; }
check_trace "$out/torch.json" 0
grep -n "add --torch\|strobe record:.*torch" "$out/torch.err" | grep -v "wrote" &&
  fail "--torch: a note about torch"
# The user's sitecustomize ran once per interpreter (main, spawn child, its resource tracker or
# none, subprocess: at least 3, never twice in one process).
n=$(wc -l <"$out/site.log")
u=$(sort -u "$out/site.log" | wc -l)
[ "$n" -ge 3 ] && [ "$n" = "$u" ] || fail "the user's sitecustomize: $n runs in $u processes"
case "$(cat "$out/site.log.path")" in
*/pyhook:"$user_path") echo "ok    PYTHONPATH: $(cat "$out/site.log.path")" ;;
*) fail "PYTHONPATH is not the hook's folder, then the user's: $(cat "$out/site.log.path")" ;;
esac
PYTHONPATH=$user_path STROBE_RECORD_TORCH_LIB=$stub "$strobe" record --record-shapes \
  --profile-memory --with-stack -o "$out/flags.json" -- "$py" "$out/prog.py" \
  >"$out/flags.out" 2>"$out/flags.err" || { rc=$?; cat "$out/flags.err"; fail "the options: exit $rc"; }
check_trace "$out/flags.json" 7

# Without --torch: the suggestion, once (four processes loaded libtorch_cpu.so).
PYTHONPATH=$user_path "$strobe" record -o "$out/plain.json" -- "$py" "$out/prog.py" \
  >"$out/plain.out" 2>"$out/plain.err" || { rc=$?; cat "$out/plain.err"; fail "without --torch: exit $rc"; }
n=$(grep -c "imports torch: add --torch to record its operators" "$out/plain.err")
[ "$n" = 1 ] || { cat "$out/plain.err"; fail "without --torch: the suggestion $n times"; }
grep -q "strobe_stub_observer" "$out/plain.json" && fail "without --torch: the observer ran"
echo "ok    without --torch: the suggestion once"

# An observer that cannot load: one line per interpreter, and the program runs on.
echo "not a library" >"$out/bad.so"
PYTHONPATH=$user_path STROBE_RECORD_TORCH_LIB=$out/bad.so "$strobe" record --torch \
  -o "$out/bad.json" -- "$py" "$out/prog.py" >"$out/bad.out" 2>"$out/bad.err" ||
  { rc=$?; cat "$out/bad.err"; fail "a bad observer: exit $rc"; }
n=$(grep -c "^strobe record: python3 (pid [0-9]*): cannot load the torch observer" "$out/bad.err")
[ "$n" = 3 ] || { cat "$out/bad.err"; fail "a bad observer: $n lines, expected 3"; }
echo "ok    an observer that cannot load: one line per interpreter, exit 0"

# --no-follow: the children are not recorded, and their hook stays quiet.
PYTHONPATH=$user_path STROBE_RECORD_TORCH_LIB=$stub "$strobe" record --torch --no-follow \
  -o "$out/nofollow.json" -- "$py" "$out/prog.py" >"$out/nofollow.out" 2>"$out/nofollow.err" ||
  { rc=$?; cat "$out/nofollow.err"; fail "--no-follow: exit $rc"; }
grep -v "^strobe record: wrote" "$out/nofollow.err" | grep . && fail "--no-follow: unexpected output"
echo "ok    --no-follow: the children quiet"

# --torch without the observer: fails at once, one line, exit 2; PROGRAM does not run.
mkdir -p "$out/lib"
lib=$(dirname "$strobe")/libstrobe_record.so
cp "$lib" "$out/lib/" || fail "cannot copy $lib"
STROBE_RECORD_LIB=$out/lib/libstrobe_record.so "$strobe" record --torch -o "$out/none.json" \
  -- touch "$out/ran" 2>"$out/none.err"
rc=$?
[ $rc = 2 ] && [ ! -e "$out/ran" ] && [ "$(wc -l <"$out/none.err")" = 1 ] &&
  grep -q "built without the torch observer" "$out/none.err" ||
  { cat "$out/none.err"; fail "--torch without the observer: exit $rc"; }
STROBE_RECORD_TORCH_LIB=$out/missing.so "$strobe" record --torch -o "$out/none.json" -- true \
  2>"$out/none2.err"
[ $? = 2 ] && grep -q "STROBE_RECORD_TORCH_LIB=.*missing.so" "$out/none2.err" ||
  { cat "$out/none2.err"; fail "STROBE_RECORD_TORCH_LIB missing"; }
echo "ok    --torch without the observer: exit 2, $(cat "$out/none.err")"

if [ -d "$shared/validators" ]; then
  for t in torch flags plain bad; do
    strobe_check_trace "$shared" "$out/$t.json" --strict >"$out/$t.check" 2>&1 ||
      { cat "$out/$t.check"; fail "$t.json: the checkers"; }
  done
  echo "ok    the traces pass the checkers (--strict)"
fi
echo "PASS"

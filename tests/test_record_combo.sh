#!/bin/bash
# `strobe record`'s options taken in pairs, on four kinds of program:
#   nvtx    tests/record_combo_target.c: threads with NVTX ranges holding malloc/free, a fork
#           (the child does the same), exit status 3; with the cuda option it also calls the
#           stand-in libcuda.so.1 and CUPTI (tests/fake_cuda) and launches one kernel;
#   python  python3 (the interpreter, not a wrapper script) running a script with four threads
#           that allocate, exit status 5;
#   gcc     gcc compiling and linking a small C file (gcc, cc1, as, collect2, ld);
#   pipe    a shell pipeline, sh -c 'seq | sort | wc'.
# The options: --sample (DWARF stacks where built in, and Python frames in python3), --sample=499
# --call-graph=fp --no-python-frames, --heap (sites and sampled events), --heap=all, --heap-stacks,
# --markers interval,event, --capture-range nvtx:combo, --activities cpu,cuda, --no-follow and a
# .pftrace output. Every pair on every program (180 runs) must exit with the program's own status (a plain run's) and, but where
# --capture-range meets a program without NVTX (which then has nothing to record: no trace and
# the note saying so), write a trace with the closing line's process count (1 with --no-follow;
# nvtx 2, python 1, gcc and pipe at least 3) that `strobe check` passes. The independent checkers
# (SHARED_DIR/validators, --strict) run on one trace of every other pair, the programs taken in
# turn (on every trace with STROBE_COMBO_ALL_CHECKS=1).
# Under ASan+UBSan (tests/CMakeLists.txt) STROBE_COMBO_PRELOAD names ASan's shared runtime, which
# strobe then runs with in LD_PRELOAD, and so every process it records (after it, the preload).
# Before the pairs, --sample with --heap runs many times on the nvtx program (STROBE_COMBO_REPEAT).
# Usage: test_record_combo.sh STROBE TARGET FAKE_CUPTI FAKE_CUDA_DIR OUT_DIR SHARED_DIR
# (FAKE_CUPTI and FAKE_CUDA_DIR "-" where the stand-in is not built: cuda then runs without
# them, as on a machine without CUDA). Exit 77 (skipped) without python3 or gcc.
set -u
strobe_bin=$1 target=$2 cupti=${3#-} cudadir=${4#-} out=$5 shared=$6
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: gcc missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
# The interpreter itself, not a wrapper script in PATH (pyenv's shims run bash and env first).
python=$(python3 -c 'import sys; print(sys.executable)')
. "$(dirname "$0")/validators.sh"
checker="$shared/validators/check_all.sh"
# Under ASan (tests/CMakeLists.txt): its runtime goes first into strobe's LD_PRELOAD, and from
# there into every process strobe records.
strobe=("$strobe_bin")
if [ -n "${STROBE_COMBO_PRELOAD:-}" ]; then
  strobe=(env LD_PRELOAD="$STROBE_COMBO_PRELOAD" "$strobe_bin")
  echo "strobe and every process it records run with LD_PRELOAD=$STROBE_COMBO_PRELOAD"
fi
failures=0
bad() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# bounded NAME CMD...: runs CMD (stdout and stderr already redirected by the caller's braces) and
# returns its status; a run still going after STROBE_COMBO_RUN_TIMEOUT seconds (default 300) is a
# hang: every thread's stack of it and its children goes to $out/NAME.hang (gdb, where there is
# one), the tree is killed, and the status is 124, so that a hang names its run instead of
# running into CTest's timeout.
bounded() {
    local name=$1 limit=${STROBE_COMBO_RUN_TIMEOUT:-300} pid s p
    shift
    "$@" &
    pid=$!
    for ((s = 0; s < limit * 5; s++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        local tree=("$pid" $(pgrep -P "$pid") $(for p in $(pgrep -P "$pid"); do pgrep -P "$p"; done))
        for p in "${tree[@]}"; do
            echo "== pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
            command -v gdb >/dev/null &&
                timeout 60 gdb -p "$p" -batch -ex "thread apply all bt 20" 2>/dev/null | grep -E '^(#|Thread)'
        done >"$out/$name.hang" 2>&1
        kill -9 "${tree[@]}" 2>/dev/null
        wait "$pid" 2>/dev/null
        echo "HANG: $name still running after $limit s; stacks:" >&2
        head -n 200 "$out/$name.hang" >&2
        return 124
    fi
    wait "$pid"
}

cat >"$out/threads.py" <<'PY'
import sys, threading
def work(n):
    keep = [bytearray(64 + i % 512) for i in range(n)]
    return sum(len(b) for b in keep)
ts = [threading.Thread(target=work, args=(20000,), name="w%d" % i) for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
sys.exit(5)
PY
printf '#include <stdio.h>\nint main(void) { puts("small"); return 0; }\n' >"$out/small.c"

# program NAME ARGS...: sets $cmd to the command line of the program NAME (with the stand-in CUDA
# for the nvtx program when $with_cuda is set).
program() {
    case $1 in
    nvtx) cmd=("$target" 3 ${with_cuda:+"$cupti"}) ;;
    python) cmd=("$python" "$out/threads.py") ;;
    gcc) cmd=(gcc -O1 -o "$out/small.$2" "$out/small.c") ;;
    pipe) cmd=(sh -c 'seq 1 3000 | sort -rn | wc -l >/dev/null') ;;
    esac
}

# The options of each key.
opts() {
    case $1 in
    sample) echo --sample ;;
    fpgraph) echo "--sample=499 --call-graph=fp --no-python-frames" ;;
    heap) echo --heap ;;
    heapall) echo "--heap=all" ;;
    heapstacks) echo --heap-stacks ;;
    markers) echo "--markers=interval,event" ;;
    capture) echo --capture-range=nvtx:combo ;;
    cuda) echo --activities=cpu,cuda ;;
    nofollow) echo --no-follow ;;
    pftrace) ;;
    esac
}

keys=(sample fpgraph heap heapall heapstacks markers capture cuda nofollow pftrace)
programs=(nvtx python gcc pipe)
declare -A plain
for p in "${programs[@]}"; do
  with_cuda=
  program "$p" plain
  env ${STROBE_COMBO_PRELOAD:+LD_PRELOAD="$STROBE_COMBO_PRELOAD"} "${cmd[@]}" >/dev/null 2>&1
  plain[$p]=$?
done
echo "plain runs' statuses: nvtx ${plain[nvtx]} python ${plain[python]} gcc ${plain[gcc]} pipe ${plain[pipe]}"
[ "${plain[nvtx]}" = 3 ] && [ "${plain[python]}" = 5 ] && [ "${plain[gcc]}" = 0 ] &&
  [ "${plain[pipe]}" = 0 ] || { echo "FAIL: the programs do not run plainly"; exit 1; }

# The crash of issue 31 (a SIGSEGV at exit under --sample --heap in about half the runs, the
# whole trace lost) came and went with timing: the sampled and heap-profiled NVTX program with
# threads and a fork runs STROBE_COMBO_REPEAT times (default 20), each run's status, trace and
# `strobe check` checked, the runs alternating --heap and --heap-stacks and JSON and .pftrace.
repeat=${STROBE_COMBO_REPEAT:-20}
start=$(date +%s)
for ((r = 0; r < repeat; r++)); do
  heap=--heap ext=json
  [ $((r % 2)) = 1 ] && heap=--heap-stacks
  [ $((r % 4)) -ge 2 ] && ext=pftrace
  name="repeat-$r"
  with_cuda=
  program nvtx "$name"
  trace="$out/$name.$ext"
  bounded "$name" "${strobe[@]}" record --sample "$heap" -o "$trace" -- "${cmd[@]}" \
    >"$out/$name.out" 2>"$out/$name.err"
  rc=$?
  [ "$rc" = 124 ] && cat "$out/$name.err"
  if [ "$rc" != "${plain[nvtx]}" ]; then
    bad "$name (--sample $heap): exit $rc, not ${plain[nvtx]}: $(tail -n 3 "$out/$name.err" | tr '\n' '|')"
    continue
  fi
  grep -q "wrote $trace: 2 processes" "$out/$name.err" ||
    bad "$name (--sample $heap): not 2 processes in the closing line: $(grep wrote "$out/$name.err")"
  "${strobe[@]}" check -q "$trace" >"$out/$name.check" 2>&1 ||
    bad "$name (--sample $heap): strobe check: $(head -n 5 "$out/$name.check" | tr '\n' '|')"
done
echo "--sample with --heap or --heap-stacks on the nvtx program: $repeat runs in $(($(date +%s) - start)) s"

checked=()
runs=0 traces=0 pair=0
start=$(date +%s)
for ((i = 0; i < ${#keys[@]}; i++)); do
  for ((j = i + 1; j < ${#keys[@]}; j++)); do
    a=${keys[i]} b=${keys[j]}
    # The independent checkers take a few seconds a trace: they check one trace of every other
    # pair, the programs in turn (the nvtx one where --capture-range leaves the others none).
    pick=-1
    if [ $((pair % 2)) = 0 ]; then
      pick=$(((pair / 2) % ${#programs[@]}))
      [ "$a" = capture ] || [ "$b" = capture ] && pick=0
    fi
    for ((k = 0; k < ${#programs[@]}; k++)); do
      p=${programs[k]}
      name="$p-$a-$b"
      ext=json
      [ "$a" = pftrace ] || [ "$b" = pftrace ] && ext=pftrace
      with_cuda=
      env=()
      if [ "$a" = cuda ] || [ "$b" = cuda ]; then
        with_cuda=${cupti:+1}
        [ -n "$cupti" ] && env=(STROBE_CUPTI_PATH="$cupti" LD_LIBRARY_PATH="$cudadir")
      fi
      program "$p" "$name"
      trace="$out/$name.$ext"
      # shellcheck disable=SC2046 # each key gives zero or one word
      bounded "$name" env "${env[@]}" "${strobe[@]}" record $(opts "$a") $(opts "$b") -o "$trace" \
        -- "${cmd[@]}" >"$out/$name.out" 2>"$out/$name.err"
      rc=$?
      [ "$rc" = 124 ] && cat "$out/$name.err"
      runs=$((runs + 1))
      if [ "$rc" != "${plain[$p]}" ]; then
        bad "$name: exit $rc, not the program's ${plain[$p]}: $(tail -n 3 "$out/$name.err" | tr '\n' '|')"
        continue
      fi
      if { [ "$a" = capture ] || [ "$b" = capture ]; } && [ "$p" != nvtx ]; then
        # No NVTX range "combo": nothing to record, and the note saying so.
        [ -e "$trace" ] && bad "$name: a trace although no range was captured"
        grep -q "no process recorded anything" "$out/$name.err" || bad "$name: no note that nothing was recorded"
        continue
      fi
      [ -s "$trace" ] || { bad "$name: no trace: $(tail -n 3 "$out/$name.err" | tr '\n' '|')"; continue; }
      traces=$((traces + 1))
      n=$(sed -n "s|^strobe record: wrote $trace: \([0-9]*\) process.*|\1|p" "$out/$name.err")
      case "$p:$a:$b" in
      *:nofollow:* | *:*:nofollow) want="-eq 1" ;;
      nvtx:*) want="-eq 2" ;;
      python:*) want="-eq 1" ;;
      *) want="-ge 3" ;;
      esac
      # shellcheck disable=SC2086 # want is an operator and a number
      [ -n "$n" ] && [ "$n" $want ] 2>/dev/null ||
        bad "$name: ${n:-no} processes in the closing line, want $want: $(grep wrote "$out/$name.err")"
      "${strobe[@]}" check -q "$trace" >"$out/$name.check" 2>&1 ||
        bad "$name: strobe check: $(head -n 5 "$out/$name.check" | tr '\n' '|')"
      if [ "${STROBE_COMBO_ALL_CHECKS:-0}" = 1 ] || [ "$k" = "$pick" ]; then
        checked+=("$trace")
      fi
    done
    pair=$((pair + 1))
  done
done
echo "$runs runs, $traces traces in $(($(date +%s) - start)) s"

if [ -x "$checker" ]; then
  start=$(date +%s)
  for t in "${checked[@]}"; do
    strobe_check_trace "$shared" "$t" --strict >"$t.validators.log" 2>&1 ||
      bad "checkers on $t: $(grep -E 'exit [1-9]|error|Error' "$t.validators.log" | head -n 3 | tr '\n' '|')"
  done
  echo "the checkers on ${#checked[@]} traces in $(($(date +%s) - start)) s"
else
  echo "checkers skipped: $checker not found"
fi
[ "$failures" = 0 ] || { echo "test_record_combo: $failures failure(s)"; exit 1; }
echo "test_record_combo: ok"

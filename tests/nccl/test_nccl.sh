#!/bin/bash
# The NCCL profiler plugin (src/nccl) driven by nccl_driver, which plays NCCL's calls (see its
# header): with the v5 table (API events, tasks, proxy thread) and the v4 table (tasks and proxy
# thread only), no session running, so that the plugin starts one and writes it at finalize to
# $STROBE_NCCL_OUTPUT (%p expanded). check_nccl_trace.py compares each trace with what the driver
# did; the independent checkers (--strict) run on it where SHARED_DIR/validators exists. Then v5
# runs: one that never finalizes (its trace is written at exit), one writing Perfetto's format
# (for the checkers, and read back through strobe convert), one under `strobe record` (the plugin
# records into the record session instead), and one with strobe record's library outside strobe
# record (the plugin records nothing).
# Usage: test_nccl.sh LIBSTROBE DRIVER OUT_DIR SHARED_DIR [STROBE_CLI]
# Exit 77 (skipped) without python3.
set -u
lib=$1 driver=$2 out=$3 shared=$4 cli=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
have_validators=0
if [ -x "$shared/validators/check_all.sh" ]; then
    . "$here/../validators.sh"
    have_validators=1
else
    echo "note: $shared/validators missing: independent checkers not run"
fi

for v in v5 v4; do
    LOCAL_RANK=3 STROBE_NCCL_OUTPUT="$out/trace_${v}_%p.json" "$driver" "$lib" $v "$out/$v.log" \
        >"$out/$v.out" 2>&1 || { cat "$out/$v.out"; fail "$v: driver exited $?"; }
    pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$out/$v.log") ||
        fail "$v: driver log"
    trace="$out/trace_${v}_$pid.json"
    [ -s "$trace" ] || fail "$v: no trace at $trace (%p not expanded?)"
    python3 "$here/check_nccl_trace.py" "$trace" "$out/$v.log" --local-rank || fail "$v: trace check"
    if [ $have_validators = 1 ]; then
        strobe_check_trace "$shared" "$trace" --strict >"$out/$v.validators.txt" 2>&1 ||
            { cat "$out/$v.validators.txt"; fail "$v: validators"; }
    fi
    echo "ok: $v"
done

# No finalize (programs that never destroy their communicators): the trace is written at exit.
NCCL_DRIVER_NO_FINALIZE=1 STROBE_NCCL_OUTPUT="$out/nofin_%p.json" "$driver" "$lib" v5 \
    "$out/nofin.log" >"$out/nofin.out" 2>&1 || { cat "$out/nofin.out"; fail "nofin: driver exited $?"; }
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$out/nofin.log")
[ -s "$out/nofin_$pid.json" ] || fail "nofin: no trace written at exit"
python3 "$here/check_nccl_trace.py" "$out/nofin_$pid.json" "$out/nofin.log" || fail "nofin: check"
echo "ok: no finalize"

# Perfetto's format (the suffix): the checkers read it.
STROBE_NCCL_OUTPUT="$out/trace_%p.pftrace" "$driver" "$lib" v5 "$out/pf.log" >"$out/pf.out" 2>&1 ||
    { cat "$out/pf.out"; fail "pftrace: driver exited $?"; }
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$out/pf.log")
[ -s "$out/trace_$pid.pftrace" ] || fail "pftrace: no trace"
if [ $have_validators = 1 ]; then
    strobe_check_trace "$shared" "$out/trace_$pid.pftrace" --strict >"$out/pf.validators.txt" 2>&1 ||
        { cat "$out/pf.validators.txt"; fail "pftrace: validators"; }
fi
if [ -n "$cli" ]; then # read back through strobe convert: the same events, args and metadata
    "$cli" convert -q "$out/trace_$pid.pftrace" "$out/pf_back.json" || fail "pftrace: convert"
    python3 "$here/check_nccl_trace.py" "$out/pf_back.json" "$out/pf.log" || fail "pftrace: check"
fi
echo "ok: pftrace"

# Under strobe record: NCCL_PROFILER_PLUGIN names libstrobe_record.so (set by strobe record), the
# plugin records into the record session and writes no trace of its own.
# STROBE_TEST_NO_RECORD_LIB=1 (sanitizer builds): strobe record's library interposes the
# allocator, which the sanitizers' runtimes do too: the two parts that load it are left out.
no_rec=${STROBE_TEST_NO_RECORD_LIB:-0}
if [ -n "$cli" ] && [ "$no_rec" != 1 ]; then
    STROBE_NCCL_OUTPUT="$out/own_%p.json" "$cli" record -o "$out/record.json" -- \
        sh -c 'exec "$0" "$NCCL_PROFILER_PLUGIN" v5 "$1"' "$driver" "$out/record.log" \
        >"$out/record.out" 2>&1 || { cat "$out/record.out"; fail "record: exited $?"; }
    ls "$out"/own_*.json >/dev/null 2>&1 && fail "record: the plugin wrote a trace of its own"
    python3 "$here/check_nccl_trace.py" "$out/record.json" "$out/record.log" --merged ||
        fail "record: trace check"
    echo "ok: record"
fi

# strobe record's library named as the plugin in a process it does not record: the plugin records
# nothing and starts no session of its own.
rec_lib="$(dirname "$lib")/libstrobe_record.so"
if [ -e "$rec_lib" ] && [ "$no_rec" != 1 ]; then
    STROBE_NCCL_OUTPUT="$out/inactive_%p.json" "$driver" "$rec_lib" v5 "$out/inactive.log" \
        >"$out/inactive.out" 2>&1 || { cat "$out/inactive.out"; fail "inactive: driver exited $?"; }
    ls "$out"/inactive_*.json >/dev/null 2>&1 && fail "inactive: the plugin wrote a trace"
    echo "ok: inactive"
fi

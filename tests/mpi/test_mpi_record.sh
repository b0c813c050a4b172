#!/usr/bin/env bash
# test_mpi_record.sh: `strobe record --mpi` under Open MPI's mpirun, 4 ranks on this machine.
#
# Usage: test_mpi_record.sh STROBE MPI_PROG SHARED_DIR WORK_DIR
#
# MPI_PROG (tests/mpi/mpi_prog.c, no strobe code) runs as 4 ranks, each under its own
# `strobe record --mpi -o out_%r.json`, ranks 1 and 2 with their clocks skewed by
# STROBE_CLOCK_SKEW_NS (+50 ms, -30 ms); check_mpi_trace.py then finds every MPI call with its
# args, the rank's metadata, and the skew cancelled by the recorded clock offsets. A second run
# writes .pftrace (from MPI_Init_thread); a third records mpirun itself (every rank in one trace,
# without a distributedInfo); --mpi without its library is refused. The traces pass SHARED_DIR's
# validators when SHARED_DIR has them; `strobe ranks --collectives` matches the ranks'
# collectives on rank 0's clock. Skips (77) without mpirun or python3.
set -u
STROBE=$1 PROG=$2 SHARED=$3 WORK=$4
HERE=$(cd "$(dirname "$0")" && pwd)
command -v mpirun >/dev/null 2>&1 || {
    echo "SKIP: mpirun not found (scripts/deps.sh --test installs openmpi-bin)"
    exit 77
}
command -v python3 >/dev/null 2>&1 || {
    echo "SKIP: python3 not found"
    exit 77
}
fail=0
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1

# Oversubscribed on a small machine, as root in containers; shared-memory transport without the
# single-copy mechanism (containers forbid it), else TCP.
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cat >skew.sh <<'EOS'
#!/bin/sh
case "$OMPI_COMM_WORLD_RANK" in
1) export STROBE_CLOCK_SKEW_NS=50000000 ;;
2) export STROBE_CLOCK_SKEW_NS=-30000000 ;;
esac
exec "$@"
EOS
chmod +x skew.sh

# Runs the job, writing out_%r.$1; MPI_PROG gets the arguments after $1. @return mpirun's status
# (after a retry over TCP).
run_job() {
    local btl ext=$1
    shift
    for btl in self,vader self,tcp; do
        rm -f out_*."$ext"
        if timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl "$btl" \
            ./skew.sh "$STROBE" record -q --mpi -o "out_%r.$ext" -- "$PROG" "$@" \
            >"run_$ext.log" 2>&1; then
            return 0
        fi
        echo "note: mpirun with btl $btl failed:"
        tail -5 "run_$ext.log"
    done
    return 1
}

if ! run_job json; then
    echo "FAIL mpirun did not complete"
    exit 1
fi
python3 "$HERE/check_mpi_trace.py" --world 4 --skew 1=50000000,2=-30000000 \
    out_0.json out_1.json out_2.json out_3.json || fail=1

# strobe merge of the four ranks: one trace on rank 0's clock. Every barrier: no rank leaves it
# before the last one entered (on rank 0's clock; the +50 ms and -30 ms skews undone), within
# 200 us; the median spread of the exits is printed for the note.
if "$STROBE" merge -q out_0.json out_1.json out_2.json out_3.json -o job.json >merge.log 2>&1; then
    python3 - job.json <<'EOP' || fail=1
import json, re, statistics, sys
d = json.load(open(sys.argv[1]))
rank_of = {}
for e in d["traceEvents"]:
    if e.get("ph") == "M" and e.get("name") == "process_name":
        m = re.match(r"rank (\d+) ", e["args"]["name"])
        if m:
            rank_of[e["pid"]] = int(m.group(1))
bars = {}
for e in d["traceEvents"]:
    if e.get("ph") == "X" and e.get("name") == "MPI_Barrier" and e["pid"] in rank_of:
        bars.setdefault(rank_of[e["pid"]], []).append((e["ts"], e["ts"] + e["dur"]))
ok = sorted(bars) == [0, 1, 2, 3] and len({len(v) for v in bars.values()}) == 1
if not ok:
    print("FAIL merge: barriers per rank %r" % {r: len(v) for r, v in bars.items()})
    sys.exit(1)
spreads = []
for k in range(len(bars[0])):
    enter = max(bars[r][k][0] for r in bars)
    exits = [bars[r][k][1] for r in bars]
    if min(exits) + 200 < enter:
        print("FAIL merge: barrier %d: a rank left at %.1f us, before the last entered at %.1f"
              % (k, min(exits), enter))
        sys.exit(1)
    spreads.append(max(exits) - min(exits))
print("ok  merged: %d barriers, exits spread %.1f us at the median, %.1f us at most"
      % (len(spreads), statistics.median(spreads), max(spreads)))
EOP
else
    echo "FAIL strobe merge: $(cat merge.log)"
    fail=1
fi

# .pftrace, the program starting with MPI_Init_thread: the same checks on the traces converted
# back to JSON (the rank's metadata travels among the session's args).
if run_job pftrace thread; then
    for r in 0 1 2 3; do
        if ! "$STROBE" convert "out_$r.pftrace" "conv_$r.json" >"conv_$r.log" 2>&1; then
            echo "FAIL strobe convert out_$r.pftrace"
            cat "conv_$r.log"
            fail=1
        fi
    done
    python3 "$HERE/check_mpi_trace.py" --world 4 --skew 1=50000000,2=-30000000 \
        --init MPI_Init_thread conv_0.json conv_1.json conv_2.json conv_3.json || fail=1
else
    echo "FAIL mpirun (.pftrace) did not complete"
    fail=1
fi

if [ -x "$SHARED/validators/check_all.sh" ]; then
    . "$HERE/../validators.sh"
    for f in out_0.json out_1.json out_0.pftrace job.json; do
        if ! strobe_check_trace "$SHARED" "$f" --strict >"check_$f.log" 2>&1; then
            echo "FAIL $f: validators"
            cat "check_$f.log"
            fail=1
        fi
    done
else
    echo "note: $SHARED/validators absent: the traces were not validated"
fi
# strobe record around mpirun: every rank in one trace (the ranks are children of mpirun), and no
# distributedInfo, which would name one rank for all.
if timeout 120 "$STROBE" record --mpi -o whole.json -- mpirun --allow-run-as-root --oversubscribe \
    -np 2 --mca btl self,vader,tcp "$PROG" >whole.log 2>&1; then
    python3 - whole.json <<'EOP' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
pids = {e["pid"] for e in d["traceEvents"] if e.get("name") == "MPI_Allreduce"}
if len(pids) != 2 or "distributedInfo" in d or "strobe_clock_sync" in d:
    print("FAIL strobe record -- mpirun: MPI_Allreduce in processes %r, keys %r" % (pids, list(d)))
    sys.exit(1)
EOP
    grep -q "several ranks" whole.log || { echo "FAIL no note on several ranks: $(cat whole.log)"; fail=1; }
else
    echo "FAIL strobe record --mpi -- mpirun: $(tail -5 whole.log)"
    fail=1
fi

# strobe ranks --collectives on the 4 ranks: every collective matched (the split communicators'
# allreduce as groups of their own, without "Seq": by their order), and the waits on rank 0's clock
# (strobe_clock_sync), so that ranks 1 and 2's skew of +50 and -30 ms leaves no wait near it.
mkdir -p coll
cp out_0.json out_1.json out_2.json out_3.json coll/ 2>/dev/null
if "$STROBE" ranks --collectives -q -f json coll >coll.json 2>coll.log; then
    python3 - coll.json <<'EOP' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["collectives"]
world = [r for r in rows if r["pg"] == "[0, 1, 2, 3]"]
split = sorted(r["pg"] for r in rows if r["ranks"] == 2)
barriers = [r for r in world if r["collective"] == "barrier"]
late = [r for r in rows if r["wait_max"] >= 20000]
if len(barriers) < 20 or split != ["[0, 2]", "[1, 3]"] or late or \
        any(r["ranks"] != 4 for r in world):
    print("FAIL ranks --collectives: %d barriers, split groups %r, waits of 20 ms or more %r"
          % (len(barriers), split, late[:3]))
    sys.exit(1)
EOP
else
    echo "FAIL strobe ranks --collectives: $(cat coll.log)"
    fail=1
fi

# Without libstrobe_record_mpi.so beside the library, --mpi is refused (exit 2, one line).
mkdir -p nompi
cp "$(dirname "$STROBE")/libstrobe_record.so" nompi/ 2>/dev/null &&
    STROBE_RECORD_LIB=nompi/libstrobe_record.so "$STROBE" record --mpi -o none.json -- true \
        >nompi.log 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q "libstrobe_record_mpi.so not found" nompi.log || [ -e none.json ]; then
    echo "FAIL --mpi without its library: exit $rc, $(cat nompi.log)"
    fail=1
fi
[ $fail -eq 0 ] && echo "PASS test_mpi_record"
exit $fail

#!/usr/bin/env bash
# test_mpi_record.sh: `strobe record --mpi` under Open MPI's mpirun, 4 ranks on this machine.
#
# Usage: test_mpi_record.sh STROBE MPI_PROG SHARED_DIR WORK_DIR
#
# MPI_PROG (tests/mpi/mpi_prog.c, no strobe code) runs as 4 ranks, each under its own
# `strobe record --mpi -o out_%r.json`, ranks 1 and 2 with their clocks skewed by
# STROBE_CLOCK_SKEW_NS (+50 ms, -30 ms); check_mpi_trace.py then finds every MPI call with its
# args, the rank's metadata, and the skew cancelled by the recorded clock offsets. A second run
# writes .pftrace. The traces pass SHARED_DIR's validators when SHARED_DIR has them. Skips (77)
# without mpirun or python3.
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

# Runs the job, writing out_%r.$1. @return mpirun's status (after a retry over TCP).
run_job() {
    local btl
    for btl in self,vader self,tcp; do
        rm -f out_*."$1"
        if timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl "$btl" \
            ./skew.sh "$STROBE" record -q --mpi -o "out_%r.$1" -- "$PROG" >"run_$1.log" 2>&1; then
            return 0
        fi
        echo "note: mpirun with btl $btl failed:"
        tail -5 "run_$1.log"
    done
    return 1
}

if ! run_job json; then
    echo "FAIL mpirun did not complete"
    exit 1
fi
python3 "$HERE/check_mpi_trace.py" --world 4 --skew 1=50000000,2=-30000000 \
    out_0.json out_1.json out_2.json out_3.json || fail=1

# .pftrace: the same run, the rank's metadata among the session's args.
if run_job pftrace; then
    for r in 0 1 2 3; do
        if ! "$STROBE" convert "out_$r.pftrace" "conv_$r.json" >/dev/null 2>&1; then
            echo "FAIL strobe convert out_$r.pftrace"
            fail=1
        elif ! grep -q "\"world_size\": *4" "conv_$r.json" ||
            ! grep -q "mpi-pingpong" "conv_$r.json" || ! grep -q '"MPI_Allreduce"' "conv_$r.json"; then
            echo "FAIL out_$r.pftrace lacks the rank's metadata or its MPI calls"
            fail=1
        fi
    done
else
    echo "FAIL mpirun (.pftrace) did not complete"
    fail=1
fi

if [ -x "$SHARED/validators/check_all.sh" ]; then
    . "$HERE/../validators.sh"
    for f in out_0.json out_1.json out_0.pftrace; do
        if ! strobe_check_trace "$SHARED" "$f" --strict >"check_$f.log" 2>&1; then
            echo "FAIL $f: validators"
            cat "check_$f.log"
            fail=1
        fi
    done
else
    echo "note: $SHARED/validators absent: the traces were not validated"
fi
[ $fail -eq 0 ] && echo "PASS test_mpi_record"
exit $fail

#!/bin/bash
# The job-wide trigger on one machine: 4 ranks (trigger_rank, RANK 0..3, each stepping at its own
# speed) split over two "hosts", i.e. two socket folders ($STROBE_RUNTIME_DIR): host A serves
# ranks 0 and 1, host B ranks 2 and 3. One `strobe trigger --all --iterations 3
# --start-iteration-roundup 10 -o DIR/trace_%r.json` per host (run 1: two invocations from this
# script; run 2: through `mpirun -np 2`, one trigger per mpirun rank, when mpirun is there).
# Checked: each rank wrote DIR/trace_RANK.json (%r expanded by each process; no pid inserted),
# holding its own pid, the same ProfilerStep numbers in every rank (3 of them, the first a multiple
# of 10), and the independent checkers (--strict) pass on one of them where SHARED_DIR/validators
# exists.
# Usage: test_trigger_hosts.sh STROBE_CLI TRIGGER_RANK OUT_DIR SHARED_DIR
set -u
cli=$1 rankprog=$2 out=$3 shared=$4
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; kill "${pids[@]}" 2>/dev/null; exit 1; }
pids=()

# Runs one round: 4 ranks, then "$@" triggers them (with $dir set), then checks the traces.
round() {
    local name=$1
    shift
    dir="$out/$name"
    mkdir -p "$dir/hostA" "$dir/hostB" && chmod 700 "$dir/hostA" "$dir/hostB" || exit 1
    pids=()
    for r in 0 1 2 3; do
        host=hostA
        [ $r -ge 2 ] && host=hostB
        STROBE_ONDEMAND=1 STROBE_RUNTIME_DIR="$dir/$host" RANK=$r WORLD_SIZE=4 \
            "$rankprog" "$dir" 40 12 >"$dir/rank$r.out" 2>&1 &
        pids+=($!)
    done
    for i in $(seq 1 1000); do
        [ -e "$dir/ready.0" ] && [ -e "$dir/ready.1" ] && [ -e "$dir/ready.2" ] &&
            [ -e "$dir/ready.3" ] && break
        sleep 0.01
    done
    [ -e "$dir/ready.3" ] || fail "$name: ranks not ready"
    "$@" >"$dir/trigger.out" 2>&1 || { cat "$dir/trigger.out"; fail "$name: trigger exited $?"; }
    touch "$dir/go"
    for i in $(seq 1 1500); do
        [ -s "$dir/trace_0.json" ] && [ -s "$dir/trace_1.json" ] && [ -s "$dir/trace_2.json" ] &&
            [ -s "$dir/trace_3.json" ] && break
        sleep 0.01
    done
    touch "$dir/exit"
    for p in "${pids[@]}"; do wait "$p" || fail "$name: a rank exited $?"; done
    ls "$dir" >"$dir/files.txt"
    python3 - "$dir" <<'PY' || fail "$name: traces"
import json, os, re, sys
d = sys.argv[1]
steps = {}
for r in range(4):
    p = os.path.join(d, f"trace_{r}.json")
    if not os.path.exists(p):
        sys.exit(f"no {p}: files {sorted(os.listdir(d))}")
    t = json.load(open(p))
    pid = int(open(os.path.join(d, f"ready.{r}")).read())
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    if not ev or any(e["pid"] != pid for e in ev):
        sys.exit(f"rank {r}: events not of its pid {pid}")
    ks = sorted(int(m.group(1)) for e in ev for m in [re.match(r"ProfilerStep#(\d+)$", e["name"])] if m)
    steps[r] = ks
    if not any(e["name"] == "rank work" for e in ev):
        sys.exit(f"rank {r}: no 'rank work' range")
if any("%" in f for f in os.listdir(d)):
    sys.exit(f"a file name kept a pattern: {sorted(os.listdir(d))}")
first = steps[0]
if len(first) != 3 or first[0] % 10 != 0 or first != list(range(first[0], first[0] + 3)):
    sys.exit(f"rank 0 steps {first}: want 3 consecutive, the first a multiple of 10")
for r, ks in steps.items():
    if ks != first:
        sys.exit(f"rank {r} recorded steps {ks}, rank 0 {first}")
print("ok: every rank recorded ProfilerStep", first)
PY
    if [ -x "$shared/validators/check_all.sh" ]; then
        . "$here/validators.sh"
        strobe_check_trace "$shared" "$dir/trace_2.json" --strict >"$dir/validators.txt" 2>&1 ||
            { cat "$dir/validators.txt"; fail "$name: validators"; }
    fi
    echo "ok: $name"
}

trig_args=(trigger --all --iterations 3 --start-iteration-roundup 10 --no-wait)
host_trigger() { # HOST: one host's trigger, its socket folder named by STROBE_RUNTIME_DIR
    STROBE_RUNTIME_DIR="$dir/$1" "$cli" "${trig_args[@]}" -o "$dir/trace_%r.json"
}
two_triggers() { host_trigger hostA && host_trigger hostB; }
round two_triggers two_triggers

if command -v mpirun >/dev/null; then
    # One trigger per "host" through the launcher: mpirun's rank i stands for host i.
    mpi_triggers() {
        OMPI_MCA_rmaps_base_oversubscribe=1 mpirun --allow-run-as-root --oversubscribe -np 2 \
            sh -c 'h=hostA; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && h=hostB;
                   STROBE_RUNTIME_DIR="$0/$h" exec "$1" trigger --all --iterations 3 \
                   --start-iteration-roundup 10 --no-wait -o "$0/trace_%r.json"' "$dir" "$cli"
    }
    round mpirun mpi_triggers
else
    echo "note: mpirun missing: the launcher pattern not run"
fi

#!/bin/sh
# ranks_collectives.sh STROBE GEN_JOB OUTDIR: `strobe ranks --collectives` on jobs that
# bench/gen_job.py simulates, with stragglers injected at chosen steps.
#   1. No noise: each injected delay is found exactly (the slowed rank last, wait_max the delay,
#      wait_sum (ranks - 1) x the delay), the steps without one have no wait, and per rank the
#      waits it caused add up; the same without "Seq" (sequence numbers from the order).
#   1b. Ranks whose clocks are skewed, with the offsets strobe record writes (strobe_clock_sync):
#      the same answer as with one clock.
#   2. With noise: every collective's last rank and waits equal the generator's own answer
#      (--truth), and HTA's potential stragglers list first the rank slowed at most steps.
#   3. strobe report's "ranks_collectives" section is the command's JSON.
#   4. -j 1 and -j 2, and mpirun -np 2 and -np 4, give the same bytes as one process, where the
#      CLI takes -j / runs split under MPI (each part skips with its reason otherwise).
# Exit 0 passed, 1 failed.
set -u
strobe=$1
gen=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}
py=$(command -v python3) || {
    echo "SKIP: no python3 to run bench/gen_job.py"
    exit 77
}

# ---- 1. exact delays, no noise -----------------------------------------------------------------
for seq in seq noseq; do
    flag=
    [ "$seq" = noseq ] && flag=--no-seq
    d="$out/exact_$seq"
    "$py" "$gen" --ranks 6 --steps 8 --noise-us 0 --slow 3:2:5 --slow 5:4:12.5 --slow 0:6:1 \
        $flag "$d" || {
        bad "gen_job.py failed"
        continue
    }
    "$strobe" ranks --collectives -q -f json "$d" >"$d.json" 2>"$d.err" || bad "$seq: strobe ranks --collectives failed: $(cat "$d.err")"
    "$py" - "$d.json" <<'EOF' || bad "$seq: the injected delays are not what was found"
import json, sys
got = json.load(open(sys.argv[1]))
# step -> (rank, us): the --slow options above
want = {2: (3, 5000), 4: (5, 12500), 6: (0, 1000)}
rows = got["collectives"]
ok = len(rows) == 8
for r in rows:
    k = r["seq"]
    rank, us = want.get(k, (0, 0))  # no delay: all arrive together, the lowest rank is last
    exp = (r["pg"], r["collective"], r["ranks"], r["last_rank"], r["wait_max"], r["wait_sum"])
    if exp != ("0", "allreduce", 6, rank, us, 5 * us):
        print("step %d: got %s, want last_rank %d wait_max %d wait_sum %d" % (k, exp, rank, us, 5 * us))
        ok = False
by = {r["rank"]: r for r in got["by_rank"]}
for rank, us in [(3, 5000), (5, 12500), (0, 1000)]:
    if by[rank]["caused_wait"] != 5 * us or by[rank]["max_caused_wait"] != us:
        print("rank %d: caused %s, max %s; want %d, %d" % (rank, by[rank]["caused_wait"],
                                                           by[rank]["max_caused_wait"], 5 * us, us))
        ok = False
waited = sum(r["waited"] for r in got["by_rank"])
caused = sum(r["caused_wait"] for r in got["by_rank"])
if waited != caused or caused != 5 * (5000 + 12500 + 1000):
    print("waited %s, caused %s, want both %d" % (waited, caused, 5 * 18500))
    ok = False
sys.exit(0 if ok else 1)
EOF
done

# ---- 1b. skewed clocks: strobe_clock_sync's offsets are applied, as strobe merge applies them ---
for sk in plain skewed; do
    flag=
    [ "$sk" = skewed ] && flag="--skew 1:50 --skew 4:-30"
    "$py" "$gen" --ranks 6 --steps 8 --noise-us 0 --slow 3:2:5 --size-mb 0.05 $flag "$out/$sk" || bad "gen_job.py failed"
    "$strobe" ranks --collectives -q -f json "$out/$sk" >"$out/$sk.json" 2>"$out/$sk.err" || bad "$sk: strobe failed: $(cat "$out/$sk.err")"
done
"$py" - "$out/plain.json" "$out/skewed.json" <<'EOF' || bad "skewed clocks: the waits differ from the same job's with one clock"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for key in ("collectives", "by_rank"):
    if a[key] != b[key]:
        print("%s: one clock %s..., skewed %s..." % (key, str(a[key])[:300], str(b[key])[:300]))
        sys.exit(1)
if not any(r["wait_max"] == 5000 and r["last_rank"] == 3 for r in b["collectives"]):
    print("skewed: rank 3's 5 ms at step 2 not found")
    sys.exit(1)
EOF

# ---- 2. with noise: the generator's own answer, and HTA's ---------------------------------------
d="$out/noisy"
"$py" "$gen" --ranks 8 --steps 12 --noise-us 300 --seed 7 --slow 6:2:3 --slow 6:3:3 --slow 6:5:4 \
    --slow 6:6:2 --slow 6:8:3 --slow 6:9:3 --slow 2:7:20 --truth "$d.truth" "$d" || bad "gen_job.py failed"
"$strobe" ranks --collectives -q -f json "$d" >"$d.json" 2>"$d.err" || bad "noisy: strobe failed: $(cat "$d.err")"
"$py" - "$d.json" "$d.truth" <<'EOF' || bad "noisy: strobe's answer differs from the generator's"
import json, sys
got = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))["collectives"]
ok = len(got["collectives"]) == len(truth)
for g, t in zip(got["collectives"], truth):
    if (g["pg"], g["seq"], g["last_rank"], g["wait_sum"], g["wait_max"]) != \
       (t["pg"], t["seq"], t["last_rank"], t["wait_sum"], t["wait_max"]):
        print("got %s, want %s" % (g, t))
        ok = False
# HTA: the rank slowed at 6 of its 10 scored steps (it leaves out step 0 and the last) is first.
st = got["stragglers"]
if not st or st[0]["rank"] != 6:
    print("HTA's potential stragglers: %s, want rank 6 first" % st)
    ok = False
sys.exit(0 if ok else 1)
EOF

# ---- 3. strobe report's section holds the command's answer -------------------------------------
"$strobe" report -q -o "$out/report.html" "$d" 2>"$out/report.err" || bad "strobe report failed: $(cat "$out/report.err")"
"$py" - "$out/report.html" "$d.json" <<'EOF' || bad "report: its ranks_collectives differs from strobe ranks --collectives"
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script type="application/json" id="strobe-data">(.*?)</script>', page, re.S)
data = json.loads(m.group(1)) if m else {}
want = json.load(open(sys.argv[2]))
if data.get("ranks_collectives") != want:
    print("report: %s..., want %s..." % (str(data.get("ranks_collectives"))[:200], str(want)[:200]))
    sys.exit(1)
EOF

# ---- 4. the same bytes with -j and under MPI ---------------------------------------------------
"$strobe" ranks --collectives -q -f json "$d" >"$out/one.json" 2>/dev/null
if "$strobe" ranks --help | grep -Eq -- '(^|[ ,])-j[ ,]'; then
    for j in 1 2; do
        "$strobe" ranks --collectives -q -f json -j "$j" "$d" >"$out/j$j.json" 2>"$out/j$j.err" || bad "-j $j failed: $(cat "$out/j$j.err")"
        cmp -s "$out/one.json" "$out/j$j.json" || bad "-j $j: output differs from one process"
    done
else
    echo "SKIP part: strobe ranks --help has no -j (parallel reading not in this build)"
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP part: no mpirun"
elif [ -n "${STROBE_TEST_NO_MPI:-}" ]; then
    echo "SKIP part: mpirun: $STROBE_TEST_NO_MPI"
elif ! "$strobe" ranks --help | grep -qi 'mpirun'; then
    echo "SKIP part: strobe ranks --help says nothing of mpirun (no MPI split in this build)"
else
    for np in 2 4; do
        timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "$strobe" ranks --collectives -q -f json "$d" \
            >"$out/np$np.json" 2>"$out/np$np.err" || bad "mpirun -np $np failed: $(tail -3 "$out/np$np.err")"
        cmp -s "$out/one.json" "$out/np$np.json" || bad "mpirun -np $np: output differs from one process"
    done
fi
[ $fail -eq 0 ] && echo "ranks_collectives: passed"
exit $fail

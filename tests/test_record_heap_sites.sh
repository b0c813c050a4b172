#!/bin/bash
# `strobe record --heap` (allocations summed per call site, [memory] events sampled by bytes) on
# tests/heap_agg_target.c, whose sites are known:
#  1. the trace's "strobe_heap" gives each known site's calls, bytes, peak live bytes, bytes
#     leaked at exit and temporary allocations exactly as the target worked them out;
#  2. strobe summary prints them (no empty table); the trace passes the checkers (--strict)
#     where SHARED_DIR has them;
#  3. the sampled events (--heap=64K) carry their weights ("Weight": bytes / (1 - exp(-bytes /
#     rate)), the bytes at or above the rate), which estimate the bytes allocated within 10%; every
#     block of 1 MiB or more is an event (both its allocation and its free); strobe report and
#     flamegraph --metric memory show the sites;
#  4. an independent LD_PRELOAD counter (tests/heap_count_preload.c) counts the same calls and
#     bytes made from the program's own code as the sites of the program's own functions add up
#     to, on the same run;
#  5. --heap=all gives an event per call, and no sites;
#  6. bad --heap values: one line, exit 2.
# Usage: test_record_heap_sites.sh STROBE TARGET COUNTER_SO OUT_DIR SHARED_DIR. Exit 77 without
# python3.
set -u
strobe=$1 target=$2 counter=$3 out=$4 shared=$5
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"

LD_PRELOAD="$counter" "$strobe" record --heap=64K -o "$out/heap.json" -- "$target" \
  >"$out/heap.out" 2>"$out/heap.err"
rc=$?
[ "$rc" = 0 ] || { cat "$out/heap.err"; fail "exit $rc"; }
grep -q "Largest allocators" "$out/heap.err" || fail "no table of the largest allocators"
"$strobe" summary "$out/heap.json" >"$out/summary.txt" 2>&1 || { cat "$out/summary.txt"; fail "summary: exit $?"; }
"$strobe" report -q -o "$out/report.html" "$out/heap.json" 2>"$out/report.err" ||
  { cat "$out/report.err"; fail "report: exit $?"; }
"$strobe" flamegraph -q --metric memory -o "$out/flame.svg" "$out/heap.json" 2>"$out/flame.err" ||
  { cat "$out/flame.err"; fail "flamegraph: exit $?"; }
python3 - "$out/heap.json" "$out/heap.out" "$out/heap.err" "$out/summary.txt" "$(basename "$target")" \
  "$out/report.html" "$out/flame.svg" <<'PY' || exit 1
import json, math, re, sys
trace = json.load(open(sys.argv[1]))
facts = [l.split() for l in open(sys.argv[2]) if l.startswith("site ")]
bigs = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("big ")]
err = open(sys.argv[3]).read()
summary = open(sys.argv[4]).read()
prog = sys.argv[5]
bad = []
def want(ok, msg):
    if not ok:
        bad.append(msg)
heap = trace.get("strobe_heap")
want(isinstance(heap, list) and len(heap) == 1, "one process in strobe_heap: %r" % (heap,))
h = heap[0]
want(h["mode"] == "sampled" and h["sample_rate"] == 65536, "mode, rate: %s %s" % (h["mode"], h["sample_rate"]))
want(h["missed_calls"] == 0 and h["unmapped_blocks"] == 0, "nothing missed: %s" % h)
def frames(s):
    # The stack less the counter's own frame (it calls strobe's malloc).
    return [f for f in s["stack"] if "heap_count_preload.c" not in f]
def leaf(s):
    return re.sub(r" \(.*\)$", "", frames(s)[0]) if frames(s) else "??"
# 1. The known sites, exact.
names = ["calls", "bytes", "peak", "leaked", "temporary"]
for f in facts:
    rows = [s for s in h["sites"] if leaf(s) == f[1]]
    want(len(rows) == 1, "one site %s: %d" % (f[1], len(rows)))
    if rows:
        got = [rows[0][k] for k in names]
        want(got == [int(x) for x in f[2:7]], "%s: %s %s, expected %s" % (f[1], names, got, f[2:7]))
        want(any("main" in fr for fr in rows[0]["stack"]), "%s: main in its stack: %s" % (f[1], rows[0]["stack"]))
# 2. The summary shows them, by peak and by bytes.
for t in ("Top call sites by peak live bytes", "Top call sites by bytes allocated"):
    want(t in summary, "summary: no %r" % t)
for f in facts:
    want(summary.count(f[1] + " (") >= 2, "summary: %s not in both tables" % f[1])
# strobe report embeds the sites; the memory flame graph weighs each site's stack by its bytes.
page = open(sys.argv[6]).read()
rep = re.search(r'<script type="application/json" id="strobe-data">(.*?)</script>', page, re.S)
rh = json.loads(rep.group(1))["heap"] if rep else None
want(rh is not None and rh["calls"] == h["calls"], "report: no heap data or other totals")
if rh:
    for f in facts:
        r = [x for x in rh["sites"] if re.search(r"(^| <- )%s \(" % f[1], x["Call stack"])]
        want(len(r) == 1 and [r[0]["Calls"], r[0]["Bytes allocated"], r[0]["Peak live bytes"]] ==
             [int(f[2]), int(f[3]), int(f[4])], "report: site %s: %s" % (f[1], r))
svg = open(sys.argv[7]).read()
for f in [f for f in facts if int(f[3]) >= h["bytes"] // 100]:  # the narrower ones are merged
    t = re.findall(r"<title>%s \([^<]*\) \(([0-9.]+) (B|KiB|MiB)," % f[1], svg)
    want(len(t) == 1, "flame graph: one frame of %s: %s" % (f[1], t))
    if t:
        v = float(t[0][0]) * {"B": 1, "KiB": 1024, "MiB": 1 << 20}[t[0][1]]
        want(abs(v - int(f[3])) <= 0.01 * int(f[3]), "flame graph: %s weighs %s, expected %s bytes" % (f[1], t[0], f[3]))
# 3. The sampled events estimate the total; the big blocks are all events.
rate = h["sample_rate"]
mem = [e for e in trace["traceEvents"] if e.get("name") == "[memory]"]
allocs = [e["args"]["Bytes"] for e in mem if e["args"]["Bytes"] > 0]
def weight(b):
    b = abs(b)
    return b if b >= rate else b / (1 - math.exp(-b / rate))
# Each sampled event, allocation or free, carries its weight ("Weight", float precision).
for e in mem:
    w = e["args"].get("Weight")
    want(w is not None and abs(w - weight(e["args"]["Bytes"])) <= 1e-6 * w + 1,
         "event of %d bytes: Weight %s, expected %.0f" % (e["args"]["Bytes"], w, weight(e["args"]["Bytes"])))
est = sum(e["args"].get("Weight", 0) for e in mem if e["args"]["Bytes"] > 0)
want(abs(est - h["bytes"]) <= 0.10 * h["bytes"], "weighted estimate %.0f vs %d bytes" % (est, h["bytes"]))
want(len(allocs) < h["calls"] / 20, "sampled: %d events of %d calls" % (len(allocs), h["calls"]))
for b in bigs:
    want(allocs.count(b) == len([x for x in bigs if x == b]), "block of %d: %d events" % (b, allocs.count(b)))
    want(sum(1 for e in mem if e["args"]["Bytes"] == -b) == bigs.count(b), "block of %d: its free" % b)
want(all(e["args"]["Total Reserved"] >= e["args"]["Total Allocated"] for e in mem),
     "an event whose reserved bytes (the high water) are below its allocated bytes")
frees = [e for e in mem if e["args"]["Bytes"] < 0]
want(len(frees) <= len(allocs), "frees only of sampled blocks: %d > %d" % (len(frees), len(allocs)))
want(all(e["args"].get("Call stack") for e in mem if e["args"]["Bytes"] > 0), "a sampled event without its stack")
ctr = [e for e in trace["traceEvents"] if e.get("ph") == "C" and "allocated bytes" in e.get("name", "")]
want(len(ctr) >= 1, "no allocated bytes counter")
# 4. The independent counter: the program's own calls and bytes.
m = re.search(r"^count %s (\d+) (\d+)$" % re.escape(prog), err, re.M)
want(m is not None, "no count line of %s in: %s" % (prog, err[-500:]))
own = [s for s in h["sites"] if frames(s) and "heap_agg_target.c" in frames(s)[0]]
if m:
    got = (sum(s["calls"] for s in own), sum(s["bytes"] for s in own))
    want(got == (int(m.group(1)), int(m.group(2))), "strobe's sites %s, the counter %s" % (got, m.groups()))
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("ok    %d sites exact; estimate %.0f of %d bytes from %d events; counter %s" % (len(facts), est, h["bytes"], len(allocs), m.groups() if m else None))
PY
if [ -x "$shared/validators/check_all.sh" ]; then
  strobe_check_trace "$shared" "$out/heap.json" --strict >"$out/check.log" 2>&1 ||
    { cat "$out/check.log"; fail "checkers on heap.json"; }
  echo "ok    checkers on $out/heap.json"
fi

# 5. --heap=all: an event per call, no sites.
"$strobe" record --heap=all -o "$out/all.json" -- "$target" >/dev/null 2>"$out/all.err"
rc=$?
[ "$rc" = 0 ] || { cat "$out/all.err"; fail "--heap=all: exit $rc"; }
grep -q "Largest allocators" "$out/all.err" && fail "--heap=all printed the table"
python3 - "$out/all.json" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
mem = [e for e in t["traceEvents"] if e.get("name") == "[memory]"]
n = sum(1 for e in mem if e["args"]["Bytes"] > 0)
if "strobe_heap" in t or n < 300000 + 128 or any("Weight" in e["args"] for e in mem):
    print("FAIL: --heap=all: %d allocation events, strobe_heap %s" % (n, "strobe_heap" in t))
    sys.exit(1)
print("ok    --heap=all: %d allocation events" % n)
PY

# 6. Bad values.
for v in abc 0 -5 12X 1.5M ""; do
  "$strobe" record --heap="$v" -o "$out/bad.json" -- true >"$out/bad.out" 2>"$out/bad.err"
  rc=$?
  [ "$rc" = 2 ] || fail "--heap=$v: exit $rc, not 2"
  [ "$(wc -l <"$out/bad.err")" -le 2 ] && grep -q -- "--heap" "$out/bad.err" ||
    { cat "$out/bad.err"; fail "--heap=$v: no clear message"; }
  [ -e "$out/bad.json" ] && fail "--heap=$v: a trace"
done
echo "ok    bad --heap values: exit 2"
exit 0

#!/bin/bash
# torch_samples_heap.sh: issue 31's measurements on a 2-second torch script (a matmul loop behind
# two Python functions), in one run, with the CPU model:
#  1. strobe record --sample with DWARF unwinding (the default where libdw is built in) and with
#     frame pointers (--call-graph fp): the share of samples with an unresolved frame ("??" or
#     an unnamed address), the median stack depth, and the heaviest stack through aten::mm's
#     kernel; the same script under perf record --call-graph dwarf where perf may sample, with
#     its share of samples holding an [unknown] frame;
#  2. strobe record --heap: the trace's size, strobe summary's call-site tables (non-empty), the
#     peak RSS of strobe record and of strobe summary, and the calls and bytes of the process's
#     strobe_heap totals against an independent LD_PRELOAD counter (tests/heap_count_preload.c)
#     counting every call but strobe's own (from its library, or on its named threads) on the
#     same run.
#
#   bench/torch_samples_heap.sh [--strobe PATH] [--counter PATH] [--python PATH] [--out DIR]
#
# Defaults: build/strobe, build/tests/libheap_count_preload.so, /usr/bin/python3 (Debian's, with
# python3-torch), a temporary folder (kept with --out).
set -u
strobe=build/strobe
counter=build/tests/libheap_count_preload.so
py=/usr/bin/python3
out=
while [ $# -gt 0 ]; do
  case "$1" in
  --strobe) strobe=$2; shift 2 ;;
  --counter) counter=$2; shift 2 ;;
  --python) py=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  *) echo "torch_samples_heap.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
"$py" -c 'import torch' 2>/dev/null || { echo "torch_samples_heap.sh: $py has no torch" >&2; exit 2; }
if [ -z "$out" ]; then
  out=$(mktemp -d /tmp/strobe-torch.XXXXXX)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out" || exit 1
cat >"$out/torch_script.py" <<'PY'
import time
import torch

a = torch.randn(256, 256)
b = torch.randn(256, 256)


def layer(x):
    return torch.mm(x, b).relu()


def model(x):
    for _ in range(4):
        x = layer(x) / 16.0
    return x


t0 = time.time()
while time.time() - t0 < 2.0:
    model(a)
PY
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cpus"
# rss CMD...: runs CMD and prints the peak RSS of CMD's own process in MiB on stderr, read from
# its /proc status (VmHWM) every 2 ms until it ends: getrusage's figure for children would take
# in the recorded program too.
rss() {
  "$py" -c 'import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:])
hwm = 0
while p.poll() is None:
    try:
        for line in open("/proc/%d/status" % p.pid):
            if line.startswith("VmHWM:"):
                hwm = max(hwm, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.002)
print("%.1f" % (hwm / 1024.0), file=sys.stderr)
sys.exit(p.returncode)' "$@"
}
stats() { # FOLDED LABEL
  "$py" - "$1" "$2" <<'PY'
import re, statistics, sys
rows = []
for line in open(sys.argv[1]):
    head, _, n = line.rstrip("\n").rpartition(" ")
    rows.append((head.split(";"), int(n)))
total = sum(n for _, n in rows)
unres = re.compile(r"^\?\?|^0x[0-9a-f]+$|\[unknown\]")
# A static function of a stripped library: named by its module and its start ("lib.so+0x12").
stat = re.compile(r"^[^ ;]+\+0x[0-9a-f]+$")
bad = sum(n for fr, n in rows if any(unres.search(f) for f in fr))
frames = sum(n * len(fr) for fr, n in rows)
unnamed = sum(n * sum(1 for f in fr if stat.search(f)) for fr, n in rows)
depths = []
for fr, n in rows:
    depths += [len(fr)] * n
mm = [(n, fr) for fr, n in rows if any("mm" in f and ("sgemm" in f or "gemm" in f) for f in fr)]
mm.sort(key=lambda x: -x[0])
print("%s: %d samples, %.1f%% with an unresolved frame, median depth %d, %.0f%% of frames static "
      "functions of stripped modules (module+offset), %d through a gemm kernel" %
      (sys.argv[2], total, 100.0 * bad / max(total, 1), statistics.median(depths) if depths else 0,
       100.0 * unnamed / max(frames, 1), sum(n for n, _ in mm)))
if mm:
    print("  heaviest gemm stack (%d samples), leaf first:" % mm[0][0])
    for f in reversed(mm[0][1]):
        print("    " + f[:150])
PY
}
for cg in dwarf fp; do
  "$strobe" record --sample --call-graph "$cg" -o "$out/sample_$cg.json" -- "$py" "$out/torch_script.py" \
    >/dev/null 2>"$out/sample_$cg.err" || { cat "$out/sample_$cg.err"; exit 1; }
  "$strobe" stacks --samples "$out/sample_$cg.json" >"$out/sample_$cg.folded" 2>/dev/null || exit 1
  stats "$out/sample_$cg.folded" "strobe --sample --call-graph $cg"
done
if perf record -q -F 1000 --call-graph dwarf -o "$out/perf.data" -- "$py" "$out/torch_script.py" \
  >/dev/null 2>"$out/perf.err"; then
  perf script -i "$out/perf.data" -F comm,ip,sym,dso 2>/dev/null | "$py" -c '
import sys
stacks, cur = [], []
for line in sys.stdin:
    s = line.strip()
    if not s:
        if cur: stacks.append(cur)
        cur = []
    elif line[0] in " \t":
        cur.append(s)
if cur: stacks.append(cur)
bad = sum(1 for st in stacks if any("[unknown] ([unknown])" in f for f in st))
frames = sum(len(st) for st in stacks)
unnamed = sum(1 for st in stacks for f in st if "[unknown] (" in f and "([unknown])" not in f)
depths = sorted(len(st) for st in stacks)
print("perf record --call-graph dwarf: %d samples, %.1f%% with an unresolved frame (no module), "
      "median depth %d, %.0f%% of frames [unknown] in a known module (static functions)" %
      (len(stacks), 100.0 * bad / max(len(stacks), 1), depths[len(depths) // 2] if depths else 0,
       100.0 * unnamed / max(frames, 1)))'
else
  echo "perf record: not run here ($(tail -1 "$out/perf.err"))"
fi
# 2. --heap, with the independent counter ahead of strobe's interposer.
rec_rss=$(rss env LD_PRELOAD="$counter" HEAP_COUNT_ALL=1 HEAP_COUNT_SKIP=libstrobe_record \
  HEAP_COUNT_SKIP_THREADS=strobe_ "$strobe" record --heap -o "$out/heap.json" -- "$py" "$out/torch_script.py" \
  2>&1 >/dev/null | tee "$out/heap.err" | tail -1)
sum_rss=$(rss "$strobe" summary "$out/heap.json" 2>&1 >"$out/summary.txt" | tail -1)
echo "strobe record --heap: trace $(($(stat -c %s "$out/heap.json") / 1024)) KiB; peak RSS: strobe record ${rec_rss} MiB, strobe summary ${sum_rss} MiB"
grep -A4 "Top call sites by peak live bytes" "$out/summary.txt" | cut -c1-150
"$py" - "$out/heap.json" "$out/heap.err" <<'PY'
import json, re, sys
t = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
hs = t.get("strobe_heap") or []
h = max(hs, key=lambda h: h["calls"])
m = re.findall(r"^count (\S+) (\d+) (\d+)$", err, re.M)
print("strobe_heap (pid %s): %d calls, %d bytes, %d sites kept, missed %d, unmapped %d" %
      (h.get("pid"), h["calls"], h["bytes"], len(h["sites"]), h["missed_calls"], h["unmapped_blocks"]))
for prog, c, b in m:
    print("counter (%s): %s calls, %s bytes" % (prog, c, b))
PY

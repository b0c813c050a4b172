#!/bin/bash
# zero_code.sh BUILD_DIR OUT_DIR: strobe record on a CUDA program that knows nothing of strobe
# (tests/gpu/plain_cuda.cu: cudart linked statically, NVTX ranges), on a real GPU (issue 17):
#   1. `strobe record --activities cpu,cuda`: the trace holds the program's NVTX ranges, its three
#      kernels, memset and two copies, each kernel linked to its launch (same correlation, a flow),
#      the launch inside its NVTX "step" on the same thread; checked in JSON and .pftrace (read
#      back by strobe summary/kernels);
#   2. the launch cost: N empty kernel launches timed in the program, with nothing attached, with a
#      bare CUPTI client enabling the same activity kinds (tests/gpu/bare_cupti.c, the floor for
#      any CUPTI tracer), and under strobe record; median of 3 runs each; with torch.profiler on
#      a loop of the same size where the machine has PyTorch with CUDA.
# BUILD_DIR holds a built strobe (the CLI, libstrobe_record.so). Exit 0, 1 (a check failed), 77
# (no GPU or nvcc).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1 out=$2
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$nvcc" ] || ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no nvcc or no GPU"; exit 77; fi
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
mkdir -p "$out"
rc=0
fail() { echo "FAIL: $*"; rc=1; }
"$nvcc" -O2 -I"$cuda_home/include" "$root/tests/gpu/plain_cuda.cu" -o "$out/plain_cuda" || exit 1
cupti_lib=$(ls -d "$cuda_home"/extras/CUPTI/lib64 "$cuda_home"/lib64 "$cuda_home"/targets/x86_64-linux/lib 2>/dev/null |
  while read -r d; do [ -e "$d/libcupti.so" ] && echo "$d" && break; done)
cupti_inc=$(ls -d "$cuda_home"/extras/CUPTI/include "$cuda_home"/include 2>/dev/null |
  while read -r d; do [ -e "$d/cupti.h" ] && echo "$d" && break; done)
gcc -O2 -shared -fPIC -I"$cupti_inc" -I"$cuda_home/include" "$root/tests/gpu/bare_cupti.c" \
  -L"$cupti_lib" -lcupti -Wl,-rpath,"$cupti_lib" -o "$out/libbare_cupti.so" || exit 1
export STROBE_RECORD_LIB=$build/libstrobe_record.so
strobe=$build/strobe
syms=$(nm -D "$STROBE_RECORD_LIB")
for sym in InitializeInjection InitializeInjectionNvtx2; do
  grep -q " T $sym\$" <<<"$syms" || fail "libstrobe_record.so does not export $sym"
done

echo "== 1. strobe record --activities cpu,cuda on plain_cuda"
for fmt in json pftrace; do
  "$strobe" record --activities cpu,cuda -o "$out/plain.$fmt" -- "$out/plain_cuda" >"$out/plain.$fmt.out" 2>"$out/plain.$fmt.err"
  r=$?
  cat "$out/plain.$fmt.err"
  [ $r = 0 ] || fail "strobe record ($fmt) exited $r"
  grep -q '^ok$' "$out/plain.$fmt.out" || fail "plain_cuda's output changed ($fmt)"
done
"$strobe" convert -q "$out/plain.pftrace" "$out/plain_pf.json" || fail "convert of plain.pftrace"
for t in "$out/plain.json" "$out/plain_pf.json"; do
  python3 - "$t" <<'PY' || rc=1
import json, sys
path = sys.argv[1]
ev = json.load(open(path))["traceEvents"]
bad = []
def want(ok, msg):
    if not ok: bad.append(msg)
x = [e for e in ev if e.get("ph") == "X"]
kern = [e for e in x if e.get("cat") == "kernel" and "scale" in e.get("name", "")]
mset = [e for e in x if e.get("cat") == "gpu_memset"]
mcpy = [e for e in x if e.get("cat") == "gpu_memcpy"]
launch = [e for e in x if e.get("cat") == "cuda_runtime" and e.get("name", "").startswith("cudaLaunchKernel")]
steps = [e for e in x if e.get("name") == "step"]
setup = [e for e in x if e.get("name") == "setup"]
want(len(kern) == 3, "3 scale kernels: %d" % len(kern))
want(len(mset) == 1, "1 memset: %d" % len(mset))
want(len(mcpy) == 2, "2 copies: %d" % len(mcpy))
want(len(launch) >= 3, "3 launches: %d" % len(launch))
want(len(steps) == 3 and len(setup) == 1, "NVTX ranges: %d step, %d setup" % (len(steps), len(setup)))
corr = {e["args"].get("correlation") for e in launch}
for k in kern:
    want(k["args"].get("correlation") in corr, "kernel correlation %s has its launch" % k["args"].get("correlation"))
flows = [e for e in ev if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g"]
want(len(flows) >= 6, "launch->kernel flows: %d" % len(flows))
for l in launch[:3]:
    inside = [s for s in steps if s["tid"] == l["tid"] and s["ts"] <= l["ts"] and l["ts"] + l["dur"] <= s["ts"] + s["dur"]]
    want(len(inside) == 1, "launch at %s inside an NVTX step on its thread" % l["ts"])
for b in bad: print("FAIL:", path, b)
print("checked", path, ":", len(kern), "kernels,", len(mcpy), "copies,", len(mset), "memset,", len(launch), "launches,", len(steps), "steps")
sys.exit(1 if bad else 0)
PY
done
"$strobe" summary "$out/plain.json" | head -20
"$strobe" kernels "$out/plain.pftrace" | head -12 || fail "strobe kernels on the .pftrace"

echo "== 2. launch cost (empty kernels, host time per launch, median of 3)"
n=${STROBE_GPU_LAUNCHES:-20000}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run3() { for i in 1 2 3; do "$@" 2>/dev/null | awk '/^launch_us/ {print $2}'; done | median; }
base=$(run3 "$out/plain_cuda" overhead "$n")
bare=$(run3 env CUDA_INJECTION64_PATH="$out/libbare_cupti.so" "$out/plain_cuda" overhead "$n")
strb=$(run3 "$strobe" record -q --activities cpu,cuda -o "$out/overhead.json" -- "$out/plain_cuda" overhead "$n")
echo "launches: $n"
echo "no tool:            $base us/launch"
echo "bare CUPTI (floor): $bare us/launch"
echo "strobe record:      $strb us/launch"
awk -v b="$base" -v f="$bare" -v s="$strb" 'BEGIN { if (b > 0 && f > 0) printf "strobe vs bare CUPTI: %+.3f us (%.2fx); vs no tool: %+.3f us\n", s - f, s / f, s - b }'
k=$(python3 -c "import json; print(sum(1 for e in json.load(open('$out/overhead.json'))['traceEvents'] if e.get('cat') == 'kernel'))")
echo "kernels in the overhead trace: $k (of $((n + 1000)))"
[ "$k" -ge "$n" ] || fail "the overhead trace lost kernels: $k"
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  python3 - "$n" <<'PY'
import sys, time, torch
n = int(sys.argv[1])
x = torch.zeros(1, device="cuda")
def loop():
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n): x.add_(1)
    t1 = time.perf_counter(); torch.cuda.synchronize(); return (t1 - t) / n * 1e6
loop(); plain = loop()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]):
    prof = loop()
print("torch x.add_(1): %.3f us/op plain, %.3f us/op under torch.profiler (+%.3f)" % (plain, prof, prof - plain))
PY
else
  echo "(no PyTorch with CUDA here: torch.profiler not compared)"
fi
exit $rc

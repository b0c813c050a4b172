#!/bin/bash
# The GPU check: runs strobe's CUDA tracing on a real NVIDIA GPU and checks the trace. Run it
# from anywhere as scripts/gpu-check.sh; its output is meant to be pasted into an issue note.
#
#   1. finds a GPU (nvidia-smi -L, libcuda.so.1): none -> prints SKIP and exits 77
#   2. builds strobe (Release) into build-gpu/ and tests/gpu/workload.cu with nvcc against it
#   3. runs the workload (kernels, copies, memsets, a CUDA graph, two streams, two host threads)
#      and tests/gpu/check_gpu_trace.py on its trace and manifest
#   4. ../shared/validators/check_all.sh TRACE --strict, when present
#   5. strobe summary and strobe kernels on the trace; then the workload streamed to .json and
#      .pftrace: every kernel and copy of the manifest in the stream file, checkers, CLI
#   6. the overhead mode: 20000 empty kernels, unprofiled and profiled
#   7. cuda_metrics: an unknown metric refused, then the range profiler per kernel (every kernel
#      carries each metric of STROBE_GPU_METRICS as an arg); skipped, with the reason, where the
#      driver keeps the counters from this user
#   8. zero code (tests/gpu/zero_code.sh): strobe record on a CUDA program that never calls
#      strobe (cudart static, NVTX ranges): its kernels, copies, memset, launches and NVTX ranges
#      in the trace, and the launch cost next to a bare CUPTI client's
#   9. torch (where python3 imports torch with CUDA): the Python package with its torch observer,
#      then tests/gpu/torch_check.py: one workload under torch.profiler and strobe.profiler,
#      op names and counts equal, per-op self device time within 5%, every kernel linked
#  10. zero code on torch: strobe record --torch --activities cpu,cuda of the same workload;
#      then with --capture-range cuda-profiler-api (torch.cuda.profiler.start/stop); then a
#      one-GPU torch.distributed job on NCCL (tests/gpu/torch_nccl.py): the NCCL plugin's events
#
# Options: --build-only  do step 2 only (works without a GPU: checks that everything compiles)
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc); CUDA_ARCH_FLAGS
# (default: the GPU's own compute capability, else sm_75..sm_90 and compute_90 PTX);
# STROBE_GPU_BUILD_DIR (default build-gpu); STROBE_GPU_LAUNCHES (default 20000);
# STROBE_GPU_METRICS (default sm__cycles_elapsed.avg,smsp__inst_executed.sum).
# Exit status: 0 every step passed, 1 a step failed, 77 skipped (no GPU), 2 bad usage.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${STROBE_GPU_BUILD_DIR:-$root/build-gpu}
validators=$root/../shared/validators/check_all.sh
out=$build/gpu-check
launches=${STROBE_GPU_LAUNCHES:-20000}
metrics=${STROBE_GPU_METRICS:-sm__cycles_elapsed.avg,smsp__inst_executed.sum}
build_only=0
case "${1:-}" in
  "") ;;
  --build-only) build_only=1 ;;
  *) echo "usage: scripts/gpu-check.sh [--build-only]" >&2; exit 2 ;;
esac

step() { printf '\n==== %s\n' "$*"; }
failures=()
fail() { echo "FAIL: $*"; failures+=("$*"); }

# ---- 1. Is there a GPU? -------------------------------------------------------------------------
find_gpu() {
  local smi_out libcuda=""
  if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then libcuda=yes; fi
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/wsl/lib /usr/local/nvidia/lib64; do
    [ -e "$d/libcuda.so.1" ] && libcuda=yes
  done
  if command -v nvidia-smi >/dev/null 2>&1; then
    if smi_out=$(nvidia-smi -L 2>&1) && grep -q '^GPU ' <<<"$smi_out"; then
      if [ -z "$libcuda" ]; then
        gpu_why="nvidia-smi -L lists a GPU but libcuda.so.1 is not in the loader's path"
        return 1
      fi
      return 0
    fi
    gpu_why="nvidia-smi -L: $(head -n1 <<<"${smi_out:-no output}")"
    return 1
  fi
  if [ -n "$libcuda" ] && ls /dev/nvidia[0-9]* >/dev/null 2>&1; then return 0; fi
  gpu_why="nvidia-smi not found; libcuda.so.1 ${libcuda:+found}${libcuda:-not found}; $(
    ls /dev/nvidia[0-9]* >/dev/null 2>&1 && echo "/dev/nvidia* present" || echo "no /dev/nvidia*")"
  return 1
}
gpu_why=""
if [ $build_only = 0 ] && ! find_gpu; then
  echo "SKIP: no NVIDIA GPU/driver here ($gpu_why)"
  echo "SKIP: scripts/gpu-check.sh --build-only still builds strobe and the CUDA workload"
  exit 77
fi

echo "strobe gpu-check: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -srm)"
echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(
  git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
if [ $build_only = 0 ]; then
  nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total --format=csv \
    2>/dev/null || nvidia-smi -L 2>/dev/null || true
fi

# ---- 2. Build ----------------------------------------------------------------------------------
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$nvcc" ]; then
  echo "FAIL: nvcc not found (set NVCC, or put the CUDA toolkit's bin/ on PATH)"
  exit 1
fi
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
echo "nvcc: $nvcc ($("$nvcc" --version | grep -o 'release [0-9.]*' || echo '?'))"

if [ -n "${CUDA_ARCH_FLAGS:-}" ]; then
  arch_flags=$CUDA_ARCH_FLAGS
else
  # The GPU's own architecture where nvidia-smi tells it (plus PTX for it); otherwise a list of
  # real architectures that this toolkit supports (-arch=native fails without a GPU).
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')
  if [[ "$cc" =~ ^[0-9]+$ ]]; then
    arch_flags="-gencode arch=compute_$cc,code=[sm_$cc,compute_$cc]"
  else
    arch_flags=""
    supported=$("$nvcc" --list-gpu-code 2>/dev/null || true)
    for a in 75 80 86 89 90; do
      if [ -z "$supported" ] || grep -qx "sm_$a" <<<"$supported"; then
        arch_flags+=" -gencode arch=compute_$a,code=sm_$a"
      fi
    done
    arch_flags+=" -gencode arch=compute_90,code=compute_90"
  fi
fi

step "build strobe (Release) into $build"
mkdir -p "$build"
log=$build/gpu-check-cmake.log
# A pip-installed torch: its CMake config, so that the torch observer (libstrobe_torch.so) is built.
torch_prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
         ${torch_prefix:+-DCMAKE_PREFIX_PATH="$torch_prefix"} >"$log" 2>&1 &&
       cmake --build "$build" -j"$(nproc)" >>"$log" 2>&1; }; then
  tail -n 40 "$log"
  echo "FAIL: the strobe build failed (log: $log)"
  exit 1
fi
echo "ok: $build/libstrobe.so, $build/strobe"

step "compile tests/gpu/workload.cu"
mkdir -p "$out"
workload=$build/gpu-workload
read -ra arch <<<"$arch_flags"
cmd=("$nvcc" -std=c++17 -O2 -lineinfo "${arch[@]}" -Xcompiler "-Wall,-Wextra" -I"$root/include"
     "$root/tests/gpu/workload.cu" -o "$workload" "$build/libstrobe.so"
     -Xlinker -rpath -Xlinker "$build" -lpthread)
echo "${cmd[*]}"
if ! "${cmd[@]}"; then
  echo "FAIL: nvcc could not build the workload"
  exit 1
fi
echo "ok: $workload"
if [ $build_only = 1 ]; then
  echo "build only: done"
  exit 0
fi

# strobe loads CUPTI at start: make the toolkit's copy findable where the loader would not.
for d in "$cuda_home/extras/CUPTI/lib64" "$cuda_home/lib64" "$cuda_home/targets/$(uname -m)-linux/lib"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done

# ---- 3. The traced workload and its check -------------------------------------------------------
trace=$out/workload.pt.trace.json
manifest=$out/manifest.json
rm -f "$trace" "$manifest"
step "run: gpu-workload trace $trace $manifest"
"$workload" trace "$trace" "$manifest"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$trace" ] || [ ! -s "$manifest" ]; then
  fail "the workload exited $rc (trace or manifest missing)"
else
  echo "manifest:"
  cat "$manifest"
  step "tests/gpu/check_gpu_trace.py"
  python3 "$root/tests/gpu/check_gpu_trace.py" "$trace" "$manifest" || fail "check_gpu_trace.py"

  step "../shared/validators/check_all.sh --strict"
  if [ -x "$validators" ]; then
    "$validators" "$trace" --strict || fail "check_all.sh --strict"
  else
    echo "skipped: $validators not present"
  fi

  step "strobe summary"
  "$build/strobe" summary "$trace" || fail "strobe summary"
  step "strobe kernels"
  "$build/strobe" kernels "$trace" || fail "strobe kernels"
fi

# ---- 5b. Streaming -----------------------------------------------------------------------------
# The same workload streamed (issue 7): the device activity is appended to the stream file at
# stop. Each stream must hold every kernel and copy of its manifest, pass the checkers and read
# with the CLI (.pftrace through strobe convert).
for fmt in json pftrace; do
  sfile=$out/stream.$fmt
  rm -f "$sfile"
  step "streaming: STROBE_GPU_STREAM=$sfile gpu-workload trace"
  if ! STROBE_GPU_STREAM=$sfile "$workload" trace "$out/stream_result.json" "$out/stream_manifest.json" \
     || [ ! -s "$sfile" ]; then
    fail "streaming to .$fmt: the workload failed or wrote no stream"
    continue
  fi
  sjson=$sfile
  if [ "$fmt" = pftrace ]; then
    sjson=$out/stream.pftrace.json
    "$build/strobe" convert "$sfile" "$sjson" || { fail "strobe convert $sfile"; continue; }
  fi
  python3 - "$sjson" "$out/stream_manifest.json" <<'PY' || fail "streaming to .$fmt: device activity missing"
import json, sys
doc = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))
ev = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]
kernels = sum(1 for e in ev if e.get("cat") == "kernel")
copies = sum(1 for e in ev if e.get("cat") == "gpu_memcpy")
launches = sum(1 for e in ev if e.get("cat") == "cuda_runtime")
ops = sum(1 for e in ev if e.get("cat") in ("cpu_op", "user_annotation"))
print("stream: %d kernels (manifest %d), %d copies (manifest %d), %d runtime calls, %d CPU ranges"
      % (kernels, m["kernels_total"], copies, m["memcpys_total"], launches, ops))
sys.exit(0 if kernels == m["kernels_total"] and copies == m["memcpys_total"] and ops > 0 else 1)
PY
  if [ -x "$validators" ]; then
    "$validators" "$sfile" --strict >/dev/null 2>&1 || fail "check_all.sh --strict $sfile"
  fi
  "$build/strobe" kernels "$sfile" >/dev/null || fail "strobe kernels $sfile"
done

# ---- 6. Overhead -------------------------------------------------------------------------------
step "overhead: gpu-workload overhead $launches"
"$workload" overhead "$launches" || fail "overhead mode"

# ---- 7. Metrics (the CUPTI range profiler) -------------------------------------------------------
step "metrics: gpu-workload metrics $out/metrics.pt.trace.json $metrics"
"$workload" metrics "$out/metrics.pt.trace.json" "$metrics"
rc=$?
if [ $rc -eq 78 ]; then
  echo "skipped: the range profiler is not available here (reason above)"
elif [ $rc -ne 0 ]; then
  fail "metrics mode (exit $rc)"
fi

# ---- 8. Zero code: strobe record on a CUDA program that knows nothing of strobe -----------------
step "zero code: tests/gpu/zero_code.sh (strobe record --activities cpu,cuda)"
STROBE_GPU_LAUNCHES=$launches "$root/tests/gpu/zero_code.sh" "$build" "$out/zero-code" ||
  fail "zero-code pass (strobe record)"

# ---- 9. torch: strobe.profiler beside torch.profiler on CUDA ------------------------------------
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  step "torch: the Python package with its observer (pip --target $out/py)"
  rm -rf "$out/py"
  if python3 -m pip install -q --no-build-isolation --no-index --target "$out/py" "$root/python" \
       >"$out/pip.log" 2>&1 && ls "$out"/py/strobe/_torch_observer*.so >/dev/null 2>&1; then
    step "torch: tests/gpu/torch_check.py (torch.profiler and strobe.profiler, CUDA)"
    PYTHONPATH=$out/py python3 "$root/tests/gpu/torch_check.py" "$out/torch" || fail "torch_check.py"
    if [ -x "$validators" ]; then
      "$validators" "$out/torch/strobe.json" --strict || fail "check_all.sh --strict strobe.json"
    fi
  else
    tail -n 20 "$out/pip.log"
    fail "the Python package or its torch observer did not build (log: $out/pip.log)"
  fi

  # ---- 10. Zero code on torch ----------------------------------------------------------------------
  if [ -e "$build/libstrobe_torch.so" ]; then
    step "torch: strobe record --torch --activities cpu,cuda"
    t=$out/torch-record.json
    "$build/strobe" record --torch --activities cpu,cuda -o "$t" -- \
      python3 "$root/tests/gpu/torch_check.py" "$out/torch" --workload-only &&
      python3 "$root/tests/gpu/torch_check.py" --check-trace "$t" || fail "strobe record --torch"
    "$build/strobe" summary "$t" -n 15 || fail "strobe summary $t"
    step "torch: strobe record --torch --capture-range cuda-profiler-api"
    t=$out/torch-capture.json
    "$build/strobe" record --torch --activities cpu,cuda --capture-range cuda-profiler-api \
      -o "$t" -- python3 "$root/tests/gpu/torch_check.py" "$out/torch" --workload-only \
      --capture-range &&
      python3 "$root/tests/gpu/torch_check.py" --check-trace "$t" --ranges 4 ||
      fail "strobe record --torch --capture-range cuda-profiler-api"
    step "torch: a one-GPU torch.distributed job on NCCL under strobe record (the NCCL plugin)"
    t=$out/torch-nccl.json
    "$build/strobe" record --torch --activities cpu,cuda -o "$t" -- \
      python3 "$root/tests/gpu/torch_nccl.py"
    rc=$?
    if [ $rc -eq 77 ]; then
      echo "skipped: no NCCL in this torch"
    elif [ $rc -ne 0 ]; then
      fail "torch_nccl.py under strobe record (exit $rc)"
    else
      python3 - "$t" <<'PY' || fail "no NCCL plugin events (nccl:all_reduce) in $t"
import json, sys
doc = json.load(open(sys.argv[1]))
n = sum(1 for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X" and
        str(e.get("name", "")).startswith("nccl:all_reduce"))
print("nccl:all_reduce events: %d; distributedInfo: %s" % (n, doc.get("distributedInfo")))
sys.exit(0 if n >= 5 else 1)
PY
    fi
    for f in "$out/torch-record.json" "$out/torch-capture.json" "$t"; do
      [ -x "$validators" ] && [ -s "$f" ] && { "$validators" "$f" --strict >/dev/null 2>&1 ||
        fail "check_all.sh --strict $f"; }
    done
  else
    fail "torch imports with CUDA, but $build/libstrobe_torch.so was not built (torch's CMake config: $torch_prefix)"
  fi
else
  step "torch"
  echo "skipped: python3 does not import torch with a CUDA device"
fi

# ---- Summary -----------------------------------------------------------------------------------
step "summary"
if [ ${#failures[@]} -eq 0 ]; then
  echo "gpu-check: PASS"
  exit 0
fi
printf 'gpu-check: FAIL (%d):\n' "${#failures[@]}"
printf '  - %s\n' "${failures[@]}"
exit 1

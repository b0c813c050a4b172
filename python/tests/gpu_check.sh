#!/bin/bash
# gpu_check.sh: on a machine with a CUDA device, CUPTI headers and Python headers: builds the
# extension in place and profiles a cudaMemset made through ctypes with ProfilerActivity.CUDA;
# prints the events and the table, writes $OUT/gpu.json (OUT: a folder, default /tmp).
set -u
out=${OUT:-/tmp}
cd "$(dirname "$0")/.." || exit 1
python3 -c 'import sysconfig, os, sys; sys.exit(0 if os.path.isfile(sysconfig.get_paths()["include"] + "/Python.h") else 77)' ||
  { echo "SKIP: no Python headers"; exit 77; }
ls /usr/local/cuda/include/cupti.h >/dev/null || { echo "SKIP: no cupti.h"; exit 77; }
STROBE_BUILD_JOBS=$(nproc) python3 setup.py -q build_ext --inplace >"$out/build.log" 2>&1 ||
  { tail -20 "$out/build.log"; exit 1; }
PYTHONPATH=. OUT="$out" python3 - <<'PY'
import ctypes, glob, os
import strobe.profiler as P
libs = sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*")) + \
    sorted(glob.glob("/usr/local/cuda/targets/*/lib/libcudart.so*"))
lib = ctypes.CDLL(libs[0])
p = ctypes.c_void_p()
assert lib.cudaFree(None) == 0
with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]) as prof:
    with P.record_function("alloc_and_set"):
        assert lib.cudaMalloc(ctypes.byref(p), 1 << 24) == 0
        assert lib.cudaMemset(p, 0, 1 << 24) == 0
        assert lib.cudaDeviceSynchronize() == 0
print(prof._stats())
for e in prof.events():
    print(e.name, e.category, e.device_type.name, e.correlation_id, e.end_ns - e.start_ns,
          e.cpu_parent.name if e.cpu_parent else None)
print(prof.key_averages().table(sort_by="cpu_time_total"))
dev = [e for e in prof.events() if not e.is_cpu]
rf = [a for a in prof.key_averages() if a.key == "alloc_and_set"][0]
print("device events", len(dev), "rf device_time_total", rf.device_time_total)
prof.export_chrome_trace(os.path.join(os.environ["OUT"], "gpu.json"))
assert dev, "no device events"
PY

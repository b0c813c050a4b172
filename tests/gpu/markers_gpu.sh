#!/bin/bash
# markers_gpu.sh: markers and captures on a GPU machine (issue 18). Builds libstrobe into
# BUILD_DIR (default build-gpu-markers), builds tests/gpu/markers_gpu.cu with nvcc, runs it
# (wait_until_completed and a capture against the real driver), checks the capture's trace with
# the independent checkers where ../shared has them, and, where nsys is installed, records the
# program with `nsys profile --capture-range=cudaProfilerApi` and lists strobe's NVTX ranges, and
# where ncu is, checks that `ncu --profile-from-start off` profiles exactly the captured kernels.
# Exit 77 without a GPU or nvcc.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-gpu-markers}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$nvcc" ] || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no nvcc or no GPU"; exit 77
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTROBE_BUILD_TESTS=OFF \
  -DSTROBE_BUILD_EXAMPLES=OFF >/dev/null || exit 1
cmake --build "$build" -j"$(nproc)" --target strobe >/dev/null || exit 1
out=$build/markers-gpu && mkdir -p "$out"
"$nvcc" -O2 -I"$root/include" "$root/tests/gpu/markers_gpu.cu" -L"$build" -lstrobe \
  -Xlinker -rpath="$build" -o "$out/markers_gpu" || exit 1
rc=0
"$out/markers_gpu" "$out" || rc=1
check=$root/../shared/validators/check_all.sh
if [ -x "$check" ] && [ -f "$out/capture.json" ]; then
  "$check" "$out/capture.json" --strict || rc=1
else
  echo "(trace checkers not run: $check missing)"
fi
if command -v nsys >/dev/null 2>&1; then
  nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop -t cuda,nvtx \
    -o "$out/nsys" --force-overwrite true "$out/markers_gpu" "$out" || rc=1
  nsys stats --report nvtx_sum "$out/nsys.nsys-rep" | tee "$out/nvtx_sum.txt"
  grep -q captured_op "$out/nvtx_sum.txt" || { echo "FAIL: no strobe range in nsys's NVTX report"; rc=1; }
else
  echo "(nsys not installed: the Nsight Systems check was not run)"
fi
if command -v ncu >/dev/null 2>&1; then
  # ncu profiles only the kernels inside the capture ranges: the 4 of STROBE_CAPTURE's scope
  # (the other 7 launches are outside any capture).
  mkdir -p "$out/ncu"
  ncu --profile-from-start off --metrics gpu__time_duration.sum "$out/markers_gpu" "$out/ncu" \
    >"$out/ncu.txt" 2>&1
  n=$(grep -c 'spin(long long) (' "$out/ncu.txt")
  echo "ncu --profile-from-start off: $n kernels profiled (expected 4)"
  [ "$n" -eq 4 ] || { echo "FAIL: ncu's capture range"; tail -20 "$out/ncu.txt"; rc=1; }
else
  echo "(ncu not installed: the Nsight Compute check was not run)"
fi
exit $rc

#!/bin/bash
# Two copies of strobe in one process: tests/record_two_target.c, linked with libstrobe.so, runs
# a session of its own with CUDA (the stand-in libcuda.so.1 and CUPTI, tests/fake_cuda) under
# `strobe record --activities cpu,cuda`. The program's session keeps CUDA (its own trace has the
# stand-in's kernel and launch, and its range), strobe record says why it has no CUDA and records
# the rest (the program's NVTX range, in the record's trace, not the program's), and the program's
# exit status comes back. Both traces pass the checkers (--strict) where SHARED_DIR has them.
# Usage: test_record_two.sh STROBE TARGET FAKE_CUPTI FAKE_CUDA_DIR OUT_DIR SHARED_DIR.
set -u
strobe=$1 target=$2 cupti=$3 cudadir=$4 out=$5 shared=$6
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"

STROBE_CUPTI_PATH=$cupti LD_LIBRARY_PATH=$cudadir "$strobe" record --activities cpu,cuda \
  -o "$out/rec.json" -- "$target" "$out/own.json" "$cupti" >"$out/out.txt" 2>"$out/err.txt"
rc=$?
[ "$rc" = 0 ] || { cat "$out/out.txt" "$out/err.txt"; fail "exit $rc"; }
grep -q "^own 0$" "$out/out.txt" || { cat "$out/out.txt"; fail "the program's own session did not start"; }
grep -q "the program uses strobe itself" "$out/err.txt" || { cat "$out/err.txt"; fail "no word on CUDA left to the program"; }
python3 - "$out/own.json" "$out/rec.json" "$out/out.txt" <<'PY' || exit 1
import json, sys
own = json.load(open(sys.argv[1]))["traceEvents"]
rec = json.load(open(sys.argv[2]))["traceEvents"]
pid = int(open(sys.argv[3]).read().split()[1])
bad = []
def want(ok, msg):
    if not ok:
        bad.append(msg)
def names(ev, cat=None):
    return [e["name"] for e in ev if e.get("ph") == "X" and (cat is None or e.get("cat") == cat)]
k = names(own, "kernel")
want(len(k) == 1 and "square" in k[0], "the program's trace has its kernel: %s" % k)
want("cudaLaunchKernel" in names(own), "and its launch: %s" % names(own))
want("own-range" in names(own), "and its range: %s" % names(own))
want(not names(rec, "kernel"), "strobe record's trace has no CUDA: %s" % names(rec, "kernel"))
want([e for e in rec if e.get("name") == "nvtx-outer" and e.get("pid") == pid],
     "strobe record's trace has the NVTX range on pid %d" % pid)
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("ok    two copies: the program's session kept CUDA, strobe record the NVTX range")
PY
if [ -x "$shared/validators/check_all.sh" ]; then
  for t in "$out/own.json" "$out/rec.json"; do
    strobe_check_trace "$shared" "$t" --strict >"$t.check.log" 2>&1 || { cat "$t.check.log"; fail "checkers on $t"; }
    echo "ok    checkers on $t"
  done
fi
echo "test_record_two: ok"

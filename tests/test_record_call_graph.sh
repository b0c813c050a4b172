#!/bin/bash
# `strobe record --sample --call-graph` on a program built without frame pointers
# (tests/unwind_record_target.c, and the library it opens with dlopen, unwind_dso.c):
#  - dwarf: at least 90% of the samples in rec_hot and dso_hot have their whole chain (c, b, a in
#    that order), and "strobe_cpu_sampling" (in the process's part) says dwarf; the trace passes the independent checkers
#    (--strict) where SHARED_DIR/validators exists;
#  - fp: fewer than half of them do (the dwarf check can fail);
#  - bad values are usage errors (exit 2, one line): an unknown mode, a size out of range,
#    --call-graph without --sample; where DWARF unwinding is not built in, --call-graph dwarf
#    says so and exits 2.
# Usage: test_record_call_graph.sh STROBE TARGET DSO OUT_DIR SHARED_DIR. Exit 77 (skipped) without
# python3, or where perf_event_open is refused.
set -u
strobe=$1 target=$2 dso=$3 out=$4 shared=$5
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"

for bad in lbr dwarf,3 dwarf,70000 dwarf,x fp,8 ""; do
  "$strobe" record --sample --call-graph "$bad" -o "$out/bad.json" -- /bin/true 2>"$out/bad.err"
  [ $? = 2 ] || fail "--call-graph '$bad': not a usage error"
  [ "$(wc -l <"$out/bad.err")" = 1 ] || { cat "$out/bad.err"; fail "--call-graph '$bad': not one line"; }
done
"$strobe" record --call-graph fp -o "$out/bad.json" -- /bin/true 2>/dev/null
[ $? = 2 ] || fail "--call-graph without --sample: not a usage error"

# share MODE: records the target with --call-graph MODE and prints the smallest share (percent)
# of hot samples with their whole chain, of the two chains.
share() {
  "$strobe" record -q --keep-parts --sample --call-graph "$1" -o "$out/$1.json" -- "$target" \
    "$dso" 400 2>"$out/$1.err" || { cat "$out/$1.err"; fail "record --call-graph $1: exit $?"; }
  python3 - "$out/$1.json" "$1" "$(dirname "$0")" <<'PY' || exit 1
import glob, json, sys
sys.path.insert(0, sys.argv[3])
from cpu_profile import samples_by_tid
t = json.load(open(sys.argv[1]))
# The sampler's metadata is in the process's part (the merged trace keeps no per-process ones).
part = [json.load(open(p)) for p in glob.glob(sys.argv[1] + ".parts/*.json")]
meta = part[0].get("strobe_cpu_sampling") if len(part) == 1 else None
if meta is None:
    print("SKIP"); sys.exit(0)
want = "dwarf" if sys.argv[2].startswith("dwarf") else "frame pointers"
if not meta["callchain"].startswith(want):
    print("callchain %r, not %s" % (meta["callchain"], want), file=sys.stderr); sys.exit(1)
shares = []
for p in ("rec", "dso"):
    s = [";".join(st) for v in samples_by_tid(t).values() for st in v
         if st and st[0].startswith(p + "_hot")]
    def whole(st):
        i = st.find(p + "_c"); i = st.find(p + "_b", i) if i >= 0 else -1
        return i >= 0 and st.find(p + "_a", i) >= 0
    n = sum(1 for st in s if whole(st))
    print("%s: %d of %d hot samples with the whole chain" % (p, n, len(s)), file=sys.stderr)
    if len(s) < 50:
        print("too few samples in %s_hot: %d" % (p, len(s)), file=sys.stderr); sys.exit(1)
    shares.append(n * 100 // len(s))
print(min(shares))
PY
}

fp=$(share fp) || fail "fp"
[ "$fp" = SKIP ] && { echo "SKIP: no sampling (perf_event_open refused)"; exit 77; }
[ "$fp" -lt 50 ] || fail "fp: $fp% of hot samples have the whole chain without frame pointers"
if "$strobe" record --sample --call-graph dwarf -o "$out/x.json" -- /bin/true 2>"$out/dw.err"; then
  dw=$(share dwarf) || fail "dwarf"
  [ "$dw" -ge 90 ] || fail "dwarf: only $dw% of hot samples have the whole chain"
  if [ -d "$shared/validators" ]; then
    strobe_check_trace "$shared" "$out/dwarf.json" --strict >"$out/check.log" 2>&1 ||
      { tail -20 "$out/check.log"; fail "dwarf.json: the checkers found problems"; }
  fi
  echo "ok: fp $fp%, dwarf $dw%"
else
  grep -q "not built in\|libdw" "$out/dw.err" || { cat "$out/dw.err"; fail "dwarf refused without saying why"; }
  echo "ok: fp $fp%; dwarf not available: $(cat "$out/dw.err")"
fi

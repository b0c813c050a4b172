#!/bin/bash
# CPU samples of a C++ program under `strobe record --sample` (tests/sample_frames_target.cpp,
# which links no libstdc++), as `strobe stacks --samples` folds them:
#  1. C++ names are demangled, as c++filt prints them (no "_Z" frame is left);
#  2. one frame per function: no frame carries a line, and each hot function is the leaf of one
#     folded stack only, though its samples fall on several lines; the line is each sample's
#     own (the chunk's "lines");
#  3. strobe's own threads (the sampler's drain thread, the stream writer) have no samples: the
#     single-threaded program's samples are all on its one thread;
#  4. JSON and .pftrace of one recording give the same folded counts (convert both ways, and a
#     recording made straight to .pftrace), flamegraph --metric samples reads both;
#  5. with the checkers of SHARED_DIR/validators where present: the traces pass them (--strict),
#     Perfetto imports every JSON sample (cpu_profile_stack_sample), DevTools finds the profile.
# Usage: test_sample_frames.sh STROBE TARGET OUT_DIR SHARED_DIR. Exit 77 (skipped) without
# python3, or where this machine may not sample (perf_event_open refused).
set -u
strobe=$1 target=$2 out=$3 shared=$4
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

"$strobe" record -q --sample=1000 -o "$out/frames.json" -- "$target" 600 >/dev/null 2>"$out/err"
rc=$?
[ "$rc" = 0 ] || { cat "$out/err"; fail "strobe record: exit $rc"; }
if grep -q "sampling" "$out/err"; then
    echo "SKIP: $(grep sampling "$out/err" | head -1)"
    exit 77
fi
"$strobe" stacks --samples "$out/frames.json" >"$out/folded" || fail "stacks --samples"
cat "$out/folded"

# 1. Demangled, as c++filt has it.
grep -q '_Z' "$out/folded" && fail "a mangled name is left: $(grep -o '_Z[A-Za-z0-9_]*' "$out/folded" | head -1)"
for want in 'strobe_test::Worker::hot(int)' 'strobe_test::Box<double>::spin(int)' \
    'strobe_test::Box<long>::spin(int)'; do
    grep -qF "$want" "$out/folded" || fail "no frame $want"
done
if command -v nm >/dev/null && command -v c++filt >/dev/null; then
    for sym in $(nm "$target" | awk '$3 ~ /^_ZN11strobe_test/ && ($3 ~ /hot/ || $3 ~ /spin/) {print $3}'); do
        name=$(c++filt "$sym")
        grep -qF "$name (" "$out/folded" || fail "c++filt says $sym is $name; not in the samples"
    done
fi

# 2. One frame per function; the line is an arg.
grep -Eq ':[0-9]+\)(;| [0-9]+$)' "$out/folded" && fail "a frame with a line: $(grep -Eo '[^;]*:[0-9]+\)' "$out/folded" | head -1)"
for f in 'Worker::hot(int)' 'Box<double>::spin(int)'; do
    n=$(grep -cF "$f (" "$out/folded")
    [ "$n" = 1 ] || fail "$f is the leaf of $n folded stacks, not 1"
done

python3 - "$out/frames.json" <<'PY' || fail "trace"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
bad = []
# The samples are Chrome's CPU profile events ("Profile", "ProfileChunk"), not instants.
if any(e.get("cat") == "cpu_sample" for e in ev): bad.append("cpu_sample instants in the JSON")
nodes, samples = {}, []  # (pid, id, node id) -> node; (pid, tid, leaf node, line)
for e in ev:
    if e.get("ph") != "P" or e.get("name") != "ProfileChunk": continue
    cp = e["args"]["data"]["cpuProfile"]
    for n in cp.get("nodes", []): nodes[(e["pid"], e["id"], n["id"])] = n
    lines = cp.get("lines", [0] * len(cp["samples"]))
    if len(e["args"]["data"]["timeDeltas"]) != len(cp["samples"]): bad.append("timeDeltas != samples")
    for leaf, line in zip(cp["samples"], lines):
        samples.append((e["pid"], e["tid"], nodes[(e["pid"], e["id"], leaf)], line))
if len(samples) < 100: bad.append("about 600 samples wanted: %d" % len(samples))
if sum(1 for s in samples if s[3] > 0) < 0.8 * len(samples):
    bad.append("samples without their line: %r" % [s[3] for s in samples[:5]])
hot = {s[3] for s in samples if s[2]["callFrame"]["functionName"].startswith("strobe_test::Worker::hot")}
if len(hot) < 2: bad.append("Worker::hot sampled on one line only: %r" % sorted(hot))
urls = {s[2]["callFrame"]["url"] for s in samples if "strobe_test" in s[2]["callFrame"]["functionName"]}
if not all(u.endswith("sample_frames_target.cpp") for u in urls): bad.append("urls: %r" % urls)
# 3. The program has one thread (tid = pid); strobe's threads must not appear.
names = {(e["pid"], e["tid"]): e.get("args", {}).get("name")
         for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
other = {(s[0], s[1]) for s in samples if s[1] != s[0]}
if other: bad.append("samples of threads other than the program's: %r" %
                     [(t, names.get(t)) for t in sorted(other)])
for b in bad: print("FAIL:", b)
sys.exit(1 if bad else 0)
PY

# 4. One recording in both formats: stacks --samples gives the same counts from the .json, from
#    its .pftrace conversion, and from that converted back; a recording straight to .pftrace
#    reads as its JSON conversion does. flamegraph --metric samples reads both.
"$strobe" convert "$out/frames.json" "$out/frames.pftrace" || fail "convert to .pftrace"
"$strobe" convert "$out/frames.pftrace" "$out/frames2.json" || fail "convert back to .json"
for f in frames.pftrace frames2.json; do
    "$strobe" stacks --samples "$out/$f" >"$out/$f.folded" || fail "stacks --samples $f"
    cmp -s "$out/folded" "$out/$f.folded" || { diff "$out/folded" "$out/$f.folded"; fail "$f: other counts"; }
    "$strobe" flamegraph --metric samples -o "$out/$f.svg" "$out/$f" || fail "flamegraph $f"
    grep -q "Worker::hot" "$out/$f.svg" || fail "flamegraph $f: no Worker::hot"
done
"$strobe" record -q --sample=1000 -o "$out/direct.pftrace" -- "$target" 300 >/dev/null 2>&1 ||
    fail "strobe record to .pftrace"
"$strobe" convert "$out/direct.pftrace" "$out/direct.json" || fail "convert direct.pftrace"
"$strobe" stacks --samples "$out/direct.pftrace" >"$out/direct.p.folded" || fail "stacks direct.pftrace"
"$strobe" stacks --samples "$out/direct.json" >"$out/direct.j.folded" || fail "stacks direct.json"
cmp -s "$out/direct.p.folded" "$out/direct.j.folded" || fail "direct.pftrace and its JSON differ"
grep -q "Worker::hot" "$out/direct.p.folded" || fail "direct.pftrace: no Worker::hot"

# 5. The independent checkers.
if [ -x "$shared/validators/check_all.sh" ]; then
    . "$(dirname "$0")/validators.sh"
    for f in frames.json frames2.json frames.pftrace direct.pftrace; do
        strobe_check_trace "$shared" "$out/$f" --strict >"$out/check" 2>&1 ||
            { cat "$out/check"; fail "the checkers' findings on $f"; }
    done
    # Perfetto imports the JSON's profiles as CPU samples, DevTools as a samples profile.
    home=$(strobe_validators_home)
    n=$("$home/tp_query" "$out/frames.json" --sql 'select count(*) as n from cpu_profile_stack_sample' |
        tail -1)
    want=$(awk '{s += $NF} END {print s}' "$out/folded")
    [ "$n" = "$want" ] || fail "Perfetto's cpu_profile_stack_sample: $n rows, not $want"
    if command -v node >/dev/null; then
        node "$home/parse_trace.mjs" "$out/frames.json" --json | grep -q '"samplesProfiles": 1,' ||
            fail "DevTools: no samples profile"
    fi
fi
echo "ok"

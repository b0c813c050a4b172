#!/bin/bash
# `strobe record --heap-stacks` on tests/heap_sites_target.c, whose allocation sites are known:
# the table of the largest allocators names each site by its leaf function and caller, with the
# bytes, count and peak live bytes the program worked out itself (malloc_usable_size), largest
# first, on standard error, and with --stats on standard output; the trace still holds the
# [memory] events and passes the checkers (--strict) where SHARED_DIR has them. A forked child
# (tests/record_target.c fork: 77777 bytes in the parent, 55555 in the child, both from main)
# counts its own sites, and the table sums the two processes' rows.
# Each allocation's [memory] event carries its call stack ("Call stack", innermost first): the
# target prints every allocation's address, size and the functions its stack must begin with, and
# each one's event is found in that order (same "Addr" and "Bytes") in the JSON written while
# recording and in a .pftrace run converted back to JSON; with --heap=all no [memory] event has
# one.
# Usage: test_record_heap.sh STROBE TARGET OUT_DIR SHARED_DIR RECORD_TARGET. Exit 77 without
# python3.
set -u
strobe=$1 target=$2 out=$3 shared=$4 rtarget=$5
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/validators.sh"

"$strobe" record --heap-stacks -o "$out/heap.json" -- "$target" >"$out/heap.out" 2>"$out/heap.err" ||
  { cat "$out/heap.err"; fail "exit $?"; }
"$strobe" record --heap-stacks --stats -o "$out/stats.json" -- "$target" >"$out/stats.out" 2>"$out/stats.err" ||
  { cat "$out/stats.err"; fail "--stats: exit $?"; }
for t in heap:err stats:out; do
  python3 - "$out/${t%%:*}.${t#*:}" "$out/${t%%:*}.out" "$out/${t%%:*}.json" <<'PY' || { cat "$out/${t%%:*}.${t#*:}"; exit 1; }
import json, sys
text = open(sys.argv[1]).read().splitlines()
facts = [l.split() for l in open(sys.argv[2]) if l.startswith("site ")]
bad = []
def want(ok, msg):
    if not ok:
        bad.append(msg)
head = [i for i, l in enumerate(text) if "Largest allocators" in l]
want(len(head) == 1, "one table: %s" % text)
rows = []
for l in text[head[0] + 2:] if head else []:
    f = l.split()
    if len(f) >= 6 and f[4] == "<-" and f[0].isdigit():
        rows.append((int(f[0]), int(f[1]), int(f[2]), f[3], f[5]))
for _, leaf, caller, b, c, p in facts:
    r = [x for x in rows if x[3] == leaf and x[4] == caller]
    want(len(r) == 1, "one row for %s <- %s: %s" % (leaf, caller, rows))
    if r:
        want(r[0][:3] == (int(b), int(c), int(p)), "%s <- %s: bytes, count, peak %s, expected %s" % (leaf, caller, r[0][:3], (b, c, p)))
order = [x[3] for x in rows if x[3] in ("alloc_big", "alloc_small")]
want(order == ["alloc_big", "alloc_small"], "largest first: %s" % order)
events = json.load(open(sys.argv[3]))["traceEvents"]
mem = [e for e in events if e.get("name") == "[memory]"]
want(len(mem) >= 2 * (10 + 1000), "the [memory] events are still there: %d" % len(mem))
if bad:
    print("FAIL (%s):\n  %s" % (sys.argv[1], "\n  ".join(bad)))
    sys.exit(1)
print("ok    %s: %d sites, the known ones exact" % (sys.argv[1], len(rows)))
PY
done
grep -q "Largest allocators" "$out/stats.err" && fail "--stats: the table went to standard error too"
# With --heap=all (no sites): no table.
"$strobe" record --heap=all -o "$out/plain.json" -- "$target" >/dev/null 2>"$out/plain.err" || fail "--heap=all: exit $?"
grep -q "Largest allocators" "$out/plain.err" && fail "--heap=all printed the table"

# The allocating call stacks: streamed JSON, and .pftrace -> JSON through strobe convert.
"$strobe" record --heap-stacks -o "$out/heap.pftrace" -- "$target" >"$out/pft.out" 2>"$out/pft.err" ||
  { cat "$out/pft.err"; fail ".pftrace: exit $?"; }
"$strobe" convert "$out/heap.pftrace" "$out/back.json" 2>"$out/back.err" ||
  { cat "$out/back.err"; fail "convert heap.pftrace: exit $?"; }
for t in heap.json:heap.out back.json:pft.out plain.json:-; do
  python3 - "$out/${t%%:*}" "$out/${t#*:}" <<'PY' || exit 1
import json, re, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
mem = [e for e in events if e.get("name") == "[memory]"]
bad = []
def want(ok, msg):
    if not ok and len(bad) < 10:
        bad.append(msg)
def frames(stack):
    # Functions innermost first, less " (file:line)".
    return [re.sub(r" \(.*\)$", "", f) for f in stack.split(";")]
if sys.argv[2].endswith("-"):
    # --heap=all: the events, none with a stack.
    want(len(mem) >= 2 * (10 + 1000), "--heap: the [memory] events: %d" % len(mem))
    with_stack = [e for e in mem if "Call stack" in e.get("args", {})]
    want(not with_stack, "--heap=all: %d [memory] events with a Call stack" % len(with_stack))
    ok = "%d [memory] events, none with a call stack" % len(mem)
else:
    blocks = [l.split() for l in open(sys.argv[2]) if l.startswith("block ")]
    want(len(blocks) == 10 + 1000, "the target's blocks: %d" % len(blocks))
    mem.sort(key=lambda e: e["ts"])
    # The blocks were made in this order on one thread: each one's event is the next event of
    # its address and size after the previous block's.
    prev, found, example = -1, 0, ""
    for _, addr, size, want_frames in blocks:
        key = (int(addr), int(size))
        i = prev + 1
        while i < len(mem) and (int(mem[i]["args"].get("Addr", -1)), int(mem[i]["args"].get("Bytes", 0))) != key:
            i += 1
        want(i < len(mem), "no [memory] event for the block at %s of %s bytes" % (addr, size))
        if i >= len(mem):
            continue
        prev = i
        found += 1
        stack = mem[i]["args"].get("Call stack")
        want(stack is not None, "the block at %s: no Call stack: %s" % (addr, mem[i]["args"]))
        if stack is None:
            continue
        example = stack
        exp = want_frames.split(";")
        got = frames(stack)
        want(got[:len(exp)] == exp, "the block at %s: frames %s, expected %s first" % (addr, got[:len(exp) + 1], exp))
    frees = [e for e in mem if int(e["args"].get("Bytes", 0)) < 0 and "Call stack" in e["args"]]
    want(not frees, "frees carry no stack: %d do" % len(frees))
    ok = "%d allocations' events with their call stacks (the last: %s)" % (found, example[:120])
if bad:
    print("FAIL (%s):\n  %s" % (sys.argv[1], "\n  ".join(bad)))
    sys.exit(1)
print("ok    %s: %s" % (sys.argv[1], ok))
PY
done

# fork without exec: one row for main, the parent's block and the child's.
"$strobe" record --heap-stacks -o "$out/fork.json" -- "$rtarget" fork >/dev/null 2>"$out/fork.err" ||
  { cat "$out/fork.err"; fail "fork: exit $?"; }
python3 - "$out/fork.err" <<'PY' || { cat "$out/fork.err"; exit 1; }
import sys
rows = [l.split() for l in open(sys.argv[1]) if " <- " in l]
main = [r for r in rows if len(r) >= 6 and r[3] == "main"]
ok = len(main) == 1 and int(main[0][1]) == 2 and 77777 + 55555 <= int(main[0][0]) < 77777 + 55555 + 64
if not ok:
    print("FAIL: fork: one row for main, 2 allocations of 77777 and 55555 bytes: %s" % main)
    sys.exit(1)
print("ok    fork: main's blocks of both processes in one row: %s" % main[0][:3])
PY

if [ -x "$shared/validators/check_all.sh" ]; then
  for f in heap.json heap.pftrace; do
    strobe_check_trace "$shared" "$out/$f" --strict >"$out/$f.check.log" 2>&1 || { cat "$out/$f.check.log"; fail "checkers on $f"; }
    echo "ok    checkers on $out/$f"
  done
else
  echo "checkers skipped"
fi
echo "test_record_heap: ok"

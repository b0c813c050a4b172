#!/usr/bin/env bash
# cli_conventions.sh: what the strobe commands promise on their command line and their output.
#   - text from a trace (names, string ids, categories, keys, stack frames) never reaches the
#     output raw when it holds control characters: tables and reports escape it (\e, \n ...),
#     folded stacks keep one line per stack, JSON output is valid; a path with control
#     characters is escaped in a one-line error;
#   - usage errors are one line with exit 2, options may follow the trace;
#   - convert writes .pftrace.gz, and a failed write (the file size limit, ulimit -f) leaves an
#     existing output as it was and no partial or temporary file, in both directions; an output
#     name of 250 bytes works (the temporary name stays within NAME_MAX).
# Usage: cli_conventions.sh STROBE SOURCE_DIR WORK_DIR
set -u
STROBE=$1 SRC=$2 WORK=$3
fail=0
rm -rf "$WORK" && mkdir -p "$WORK"
ESC="$SRC/tests/cli/escape.json"
BASIC="$SRC/tests/cli/summary_basic.json"

ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fail=1; }

# Bytes a terminal acts on: C0 controls but \n, DEL, and the C1 controls in UTF-8 (C2 80..9F).
raw_controls() { LC_ALL=C grep -c -P '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$1"; }

for c in summary kernels stacks info check; do
    "$STROBE" "$c" "$ESC" >"$WORK/$c.out" 2>"$WORK/$c.err"
    rc=$?
    want=0
    [ "$c" = check ] && want=1
    if [ $rc -ne $want ]; then bad "$c on escape.json: exit $rc: $(cat "$WORK/$c.err")"; continue; fi
    n=$(raw_controls "$WORK/$c.out")
    if [ "$n" != 0 ]; then
        bad "$c: $n output lines hold raw control characters:"; cat -A "$WORK/$c.out" | head -5
    else
        ok "$c: no raw control characters in the output"
    fi
done
grep -qF 'evil\e[31mred\nline' "$WORK/summary.out" || bad "summary: escaped name missing"
grep -qF 'launch\r\u0085c1' "$WORK/summary.out" || bad "summary: \\r and C1 not escaped"
grep -qF 'k\e[2Jclear' "$WORK/kernels.out" || bad "kernels: escaped name missing"
grep -qF 's\n7' "$WORK/kernels.out" || bad "kernels: escaped stream missing"
grep -qF 'tid "t\e]0;x\x07" events 2 "th\eread"' "$WORK/info.out" || bad "info: escaped thread missing"
grep -qF 'we\eird\nkey' "$WORK/info.out" || bad "info: escaped metadata key missing"
grep -qF '"open\eB"' "$WORK/check.out" || bad "check: escaped name missing"
grep -qF 'id "id\e\n"' "$WORK/check.out" || bad "check: escaped flow id missing"
# Folded stacks: one line per stack, "frames weight".
if [ "$(wc -l <"$WORK/stacks.out")" = 2 ] && ! grep -qvE '^[^ ;]([^;]*;)*[^;]* [0-9]+$' "$WORK/stacks.out"; then
    ok "stacks: two lines of 'frames weight'"
else
    bad "stacks: not one line per stack:"; cat -A "$WORK/stacks.out"
fi

# JSON outputs are valid JSON and keep the names (escaped by JSON's rules).
for c in "info --format json" "check -f json" "summary --format=json" "kernels -f json"; do
    "$STROBE" $c "$ESC" >"$WORK/json.out" 2>"$WORK/json.err"
    [ "$(raw_controls "$WORK/json.out")" = 0 ] || bad "$c: raw control characters"
    grep -q 'u001b' "$WORK/json.out" || bad "$c: no \\u001b escape in the JSON"
    if command -v python3 >/dev/null; then
        if python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$WORK/json.out" 2>"$WORK/py.err"; then
            ok "$c: valid JSON"
        else
            bad "$c: invalid JSON: $(cat "$WORK/py.err")"
        fi
    fi
done
"$STROBE" info -f json "$BASIC" >"$WORK/info.json"
for key in '"file": ' '"schema_version": ' '"time_span": {"first_ts_us": ' '"threads": [' \
    '"devices": [' '"by_phase": {' '"by_category": {' '"metadata_keys": ['; do
    grep -qF "$key" "$WORK/info.json" || bad "info --format json: no $key"
done
"$STROBE" check --format=json "$SRC/tests/cli/check_clean.json" >"$WORK/clean.json"
rc=$?
[ $rc -eq 0 ] && grep -qF '"problems": 0' "$WORK/clean.json" || bad "check -f json on a clean trace: exit $rc"

# A path holding an escape and a newline: one line on stderr, escaped.
weird="$WORK/bad"$'\e[31m\n'"name.json"
printf 'not json' >"$weird"
for c in summary kernels stacks info check; do
    "$STROBE" "$c" "$weird" >/dev/null 2>"$WORK/err"
    rc=$?
    if [ $rc -ne 2 ] || [ "$(wc -l <"$WORK/err")" != 1 ] || [ "$(raw_controls "$WORK/err")" != 0 ] ||
        ! grep -qF 'bad\e[31m\nname.json' "$WORK/err"; then
        bad "$c on a path with control characters: exit $rc:"; cat -A "$WORK/err"
    fi
done
"$STROBE" summary "$BASIC" --sort $'x\e[2J' >/dev/null 2>"$WORK/err"
[ "$(raw_controls "$WORK/err")" = 0 ] && grep -qF 'x\e[2J' "$WORK/err" || bad "usage error echoes raw bytes"

# Usage: options after the trace, --opt=value; errors are one line, exit 2.
"$STROBE" summary "$BASIC" --limit=1 --format=csv >"$WORK/out" || bad "summary T --limit=1"
[ "$(wc -l <"$WORK/out")" = 2 ] || bad "summary T --limit=1: $(wc -l <"$WORK/out") lines, want 2"
for args in "summary $BASIC --bogus" "kernels $BASIC -Z" "info --format" "check --examples=x $BASIC" \
    "stacks --metric" "convert -o" "ps extra" "trigger --pid" "memory-profile --nope" \
    "summary $BASIC $BASIC" "info"; do
    # shellcheck disable=SC2086
    "$STROBE" $args >/dev/null 2>"$WORK/err"
    rc=$?
    if [ $rc -ne 2 ] || [ "$(wc -l <"$WORK/err")" != 1 ] || ! grep -q -- "--help" "$WORK/err"; then
        bad "strobe $args: exit $rc: $(cat "$WORK/err")"
    fi
done
ok "usage errors: one line, exit 2"

# convert: .pftrace.gz, and writes through a temporary file.
conv="$WORK/convert"
mkdir -p "$conv"
if "$STROBE" convert "$BASIC" "$conv/t.pftrace.gz" 2>"$WORK/err" &&
    [ "$(head -c 2 "$conv/t.pftrace.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] &&
    "$STROBE" info "$conv/t.pftrace.gz" >/dev/null &&
    "$STROBE" convert "$conv/t.pftrace.gz" -o "$conv/back.json" 2>>"$WORK/err" &&
    [ "$("$STROBE" info "$BASIC" | grep '^  X')" = "$("$STROBE" info "$conv/back.json" | grep '^  X')" ]; then
    ok "convert: .pftrace.gz written (gzip), read back, converted back to JSON"
else
    bad "convert to .pftrace.gz: $(cat "$WORK/err")"
fi
long=$(printf 'n%.0s' $(seq 1 242))
if "$STROBE" convert "$BASIC" "$conv/$long.pftrace" 2>"$WORK/err" && [ -s "$conv/$long.pftrace" ]; then
    ok "convert: a 250-byte output name"
else
    bad "convert to a 250-byte name: $(cat "$WORK/err")"
fi
# A trace big enough that its output passes the 1 KiB size limit set below.
{
    printf '{"traceEvents": [\n'
    for i in $(seq 1 400); do
        printf '{"ph": "X", "cat": "cpu_op", "name": "op%d", "pid": 1, "tid": 1, "ts": %d, "dur": 1},\n' "$i" $((i * 2))
    done
    printf '{"ph": "X", "cat": "cpu_op", "name": "last", "pid": 1, "tid": 1, "ts": 1000, "dur": 1}]}\n'
} >"$conv/big.json"
"$STROBE" convert "$conv/big.json" "$conv/big.pftrace" || bad "convert big.json"
limited() { (trap '' XFSZ; ulimit -f 1; "$STROBE" "$@"); }
for pair in "big.json keep.pftrace" "big.pftrace keep.json" "big.pftrace keep.json.gz"; do
    set -- $pair
    printf 'KEEP' >"$conv/$2"
    limited convert "$conv/$1" "$conv/$2" 2>"$WORK/err"
    rc=$?
    if [ $rc -ne 2 ] || [ "$(cat "$conv/$2")" != KEEP ]; then
        bad "convert $1 $2 past the size limit: exit $rc, the existing output $( [ -f "$conv/$2" ] && echo changed || echo removed): $(cat "$WORK/err")"
    else
        ok "convert $1 $2 past the size limit: exit 2, the existing output kept ($(head -1 "$WORK/err"))"
    fi
    rm -f "$conv/$2"
    limited convert "$conv/$1" "$conv/$2" 2>/dev/null
    [ -e "$conv/$2" ] && bad "convert $1 $2 past the size limit left a partial file"
done
leftovers=$(ls -A "$conv" | grep -c '^\.strobe-convert')
[ "$leftovers" = 0 ] || bad "convert left $leftovers temporary files"
exit $fail

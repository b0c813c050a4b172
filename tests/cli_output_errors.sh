#!/usr/bin/env bash
# cli_output_errors.sh: an output that cannot be written is refused with the system's reason
# (strerror), never "a system call failed", and exit 2, for convert (both directions), merge,
# report, flamegraph and record -o:
#   - a missing folder: "No such file or directory";
#   - a read-only folder: "Read-only file system" (a read-only tmpfs, mounted in a mount namespace
#     of the test's own: `unshare -m`; skipped with the reason where that is refused). The tests
#     run as root, which ignores permission bits, so a folder without write permission would not
#     do;
#   - a full disk: "No space left on device", writing to a character device that works as
#     /dev/full does (made here with mknod, so that a regression that renames over its output
#     replaces the test's node, not /dev/full), which must still be a device afterwards; and for
#     record -o, which refuses an output that is not a regular file, a full tmpfs (unshare -m).
# Usage: cli_output_errors.sh STROBE SOURCE_DIR WORK_DIR [record|no-record] (no-record: no
# program is recorded, where strobe's preloaded library is built with a sanitizer).
set -u
strobe=$1 src=$2 work=$3 runs=${4:-record}
rm -rf "$work" && mkdir -p "$work"
fail=0 skipped=
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fail=1; }
in_json="$work/in.json" in_pf="$work/in.pftrace"
cp "$src/tests/cli/summary_basic.json" "$in_json"
"$strobe" convert -q "$in_json" "$in_pf" || { echo "FAIL  cannot make $in_pf"; exit 1; }

# expect WHY LABEL CMD...: CMD fails with exit $want (2 unless set), and its stderr names WHY (and
# no generic message but strobe record's "cannot start a session" after the reason).
expect() {
    local why=$1 label=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    if [ $rc -ne "${want:-2}" ]; then
        bad "$label: exit $rc, want ${want:-2}: $(cat "$work/err")"
    elif grep -v "cannot start a session" "$work/err" | grep -q "a system call failed\|input/output error"; then
        bad "$label: a generic message: $(cat "$work/err")"
    elif ! grep -qF "$why" "$work/err"; then
        bad "$label: no \"$why\" in: $(cat "$work/err")"
    else
        ok "$label: $(grep -F "$why" "$work/err" | head -1)"
    fi
}

# all WHY DIR: every command writing into folder DIR.
all() {
    local why=$1 d=$2
    expect "$why" "convert to .pftrace in $d" "$strobe" convert -q "$in_json" "$d/x.pftrace"
    expect "$why" "convert to .json in $d" "$strobe" convert -q "$in_pf" "$d/x.json"
    expect "$why" "merge -o in $d" "$strobe" merge -q -o "$d/x.json" "$in_json"
    expect "$why" "report -o in $d" "$strobe" report -q -o "$d/x.html" "$in_json"
    expect "$why" "flamegraph -o in $d" "$strobe" flamegraph -q -o "$d/x.svg" "$in_json"
    expect "$why" "record -o in $d" "$strobe" record -q -o "$d/x.json" -- /bin/true
}

all "No such file or directory" "$work/missing"

# A read-only folder and a full one, in a mount namespace of our own (gone when it ends).
cat >"$work/mounts.sh" <<'SH'
set -u
work=$1
mkdir -p "$work/ro" "$work/fullfs"
mount -t tmpfs -o ro,size=64k tmpfs "$work/ro" || exit 77
mount -t tmpfs -o size=16k tmpfs "$work/fullfs" || exit 77
head -c 65536 /dev/zero >"$work/fullfs/fill" 2>/dev/null
. "$work/funcs.sh"
all "Read-only file system" "$work/ro"
# No process could record: no trace, and the status is the program's (strobe record --help).
if [ "$runs" = record ]; then
    want=0 expect "No space left on device" "record -o on a full filesystem" \
        "$strobe" record -q -o "$work/fullfs/x.json" -- /bin/true
else
    echo "skip  record -o on a full filesystem: a sanitized libstrobe_record.so is not preloaded"
fi
expect "No space left on device" "merge -o on a full filesystem" \
    "$strobe" merge -q -o "$work/fullfs/x.json" "$in_json"
[ -z "$(ls "$work/fullfs" | grep -v '^fill$')" ] || bad "files left on the full filesystem: $(ls "$work/fullfs")"
exit $fail
SH
{
    declare -p strobe work in_json in_pf runs
    declare -f ok bad expect all
    echo "fail=0"
} >"$work/funcs.sh"
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
    unshare -m bash "$work/mounts.sh" "$work"
    rc=$?
    if [ $rc -eq 77 ]; then
        skipped="$skipped; read-only and full folders (mount -t tmpfs refused)"
    elif [ $rc -ne 0 ]; then
        fail=1
    fi
else
    skipped="$skipped; read-only and full folders (unshare -m refused: no mount namespace)"
fi

# A full disk as /dev/full gives it: every write fails with ENOSPC. The output exists and is a
# device: it is written in place, never replaced by a rename.
if mknod "$work/full" c 1 7 2>/dev/null && mknod "$work/full.pftrace" c 1 7 2>/dev/null; then
    expect "No space left on device" "convert to .pftrace on a full device" \
        "$strobe" convert -q "$in_json" "$work/full.pftrace"
    expect "No space left on device" "convert to .json on a full device" \
        "$strobe" convert -q "$in_pf" "$work/full"
    expect "No space left on device" "merge -o on a full device" \
        "$strobe" merge -q -o "$work/full" "$in_json"
    expect "No space left on device" "merge -o .pftrace on a full device" \
        "$strobe" merge -q -o "$work/full.pftrace" "$in_json"
    expect "No space left on device" "report -o on a full device" \
        "$strobe" report -q -o "$work/full" "$in_json"
    expect "No space left on device" "flamegraph -o on a full device" \
        "$strobe" flamegraph -q -o "$work/full" "$in_json"
    for f in "$work/full" "$work/full.pftrace"; do
        [ -c "$f" ] && ok "$f is still a device" || bad "$f was replaced: $(ls -l "$f")"
    done
else
    skipped="$skipped; a full device (mknod refused)"
fi

[ -n "$skipped" ] && echo "SKIP  parts not checked here: ${skipped#; }"
[ $fail -eq 0 ] && echo "PASS"
exit $fail

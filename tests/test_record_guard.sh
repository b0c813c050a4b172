#!/bin/bash
# `strobe record`'s guards and reports around what it cannot do:
#  1. an output that names PROGRAM (directly or through a symlink), another existing executable
#     file, or something that is not a regular file (/dev/null) is refused before PROGRAM runs:
#     exit 2, one line, PROGRAM's binary unchanged, its marker file not made;
#  2. a set-user-ID program that the loader runs in secure-execution mode (LD_PRELOAD ignored: a
#     copy of TARGET owned by another user, chmod u+s, run by this user) is said to be not
#     recorded, and why; no closing line claims a recorded process; PROGRAM's status;
#  3. a full filesystem (a 64 KiB tmpfs with one page left, where `mount` works: root): the
#     process whose part could not be written is named, by pid and program name, with what was
#     lost; PROGRAM's status.
# Usage: test_record_guard.sh STROBE TARGET OUT_DIR (TARGET: tests/record_target.c).
set -u
strobe=$1 target=$2 out=$3
rm -rf "$out" && mkdir -p "$out" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# 1. Outputs that must not be replaced.
cp "$target" "$out/prog" && ln -s prog "$out/prog-link" || exit 1
printf '#!/bin/sh\n' >"$out/tool.sh" && chmod +x "$out/tool.sh"
sum=$(cksum <"$out/prog")
for bad in "$out/prog" "$out/prog-link" "$out/tool.sh" /dev/null; do
  rm -f "$out/marker"
  "$strobe" record -o "$bad" -- "$out/prog" marker "$out/marker" >/dev/null 2>"$out/refused.err"
  rc=$?
  [ "$rc" = 2 ] || { cat "$out/refused.err"; fail "-o $bad: exit $rc, not 2"; }
  [ -e "$out/marker" ] && fail "-o $bad: PROGRAM ran"
  [ "$(wc -l <"$out/refused.err")" = 1 ] || { cat "$out/refused.err"; fail "-o $bad: not one line"; }
  echo "refused: $(cat "$out/refused.err")"
done
[ "$(cksum <"$out/prog")" = "$sum" ] || fail "PROGRAM's binary changed"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
[ "$(head -c2 "$out/tool.sh")" = "#!" ] || fail "tool.sh was replaced"
grep -q "PROGRAM itself" <("$strobe" record -o "$out/prog" -- "$out/prog" exit 0 2>&1) ||
  fail "-o PROGRAM: the message does not say it is PROGRAM"
# %p expanded after PROGRAM ran: the same check then (the parts are kept, nothing replaced).
cp "$target" "$out/p-x" || exit 1
"$strobe" record -o "$out/p-%p" -- /bin/sh -c "ln -s '$out/p-x' '$out/p-'\$\$" >/dev/null 2>"$out/pexp.err"
rc=$?
[ "$rc" = 2 ] || { cat "$out/pexp.err"; fail "-o with %%p naming an executable: exit $rc"; }
[ "$(cksum <"$out/p-x")" = "$(cksum <"$target")" ] || fail "%p: the executable was replaced"
# A plain output still works.
"$strobe" record -q -o "$out/ok.json" -- "$out/prog" exit 0 || fail "a plain output: exit $?"
[ -s "$out/ok.json" ] || fail "a plain output: no trace"

# 2. A set-user-ID program in secure-execution mode.
uid=$(id -u)
other=$(getent passwd nobody | cut -d: -f3)
if [ "$uid" = 0 ] && [ -n "$other" ] && [ "$other" != 0 ]; then
  cp "$target" "$out/suid" && chown nobody "$out/suid" && chmod 4755 "$out/suid" || exit 1
elif [ "$uid" != 0 ]; then
  echo "setuid: not root, so a set-user-ID file of this user does not differ; skipped"
  other=
else
  echo "setuid: no user nobody; skipped"
  other=
fi
if [ -n "$other" ]; then
  "$strobe" record -o "$out/suid.json" -- "$out/suid" exit 5 >"$out/suid.out" 2>"$out/suid.err"
  rc=$?
  cat "$out/suid.err"
  [ "$rc" = 5 ] || fail "setuid: exit $rc, not PROGRAM's 5"
  grep -q "$out/suid (pid [0-9]*) was not recorded: it is set-user-ID" "$out/suid.err" ||
    fail "setuid: not said that the program was not recorded, and why"
  grep -q "wrote" "$out/suid.err" && fail "setuid: a closing line claims a recorded process"
  # The same file without the bit is recorded: the report is about the bit.
  chmod u-s "$out/suid"
  "$strobe" record -o "$out/nosuid.json" -- "$out/suid" exit 0 >/dev/null 2>"$out/nosuid.err" ||
    fail "without u+s: exit $?"
  grep -q "not recorded" "$out/nosuid.err" && fail "without u+s: said not recorded"
  grep -q "wrote $out/nosuid.json: 1 process" "$out/nosuid.err" || { cat "$out/nosuid.err"; fail "without u+s: not recorded"; }
  # Set-user-ID to this very user (root's own set-user-ID file): not secure mode; recorded.
  if [ "$uid" = 0 ]; then
    cp "$target" "$out/suid-root" && chmod 4755 "$out/suid-root" || exit 1
    "$strobe" record -o "$out/suidroot.json" -- "$out/suid-root" exit 0 >/dev/null 2>"$out/suidroot.err" ||
      fail "root's set-user-ID file: exit $?"
    grep -q "wrote $out/suidroot.json: 1 process" "$out/suidroot.err" ||
      { cat "$out/suidroot.err"; fail "root's own set-user-ID file: not recorded"; }
  fi
fi

# 3. A full filesystem.
mnt="$out/tmpfs"
mkdir -p "$mnt"
if mount -t tmpfs -o size=64k tmpfs "$mnt" 2>/dev/null; then
  trap 'umount "$mnt" 2>/dev/null' EXIT
  # One page left: a part file and its name file can be made, and the name written, but not
  # the trace's first write.
  dd if=/dev/zero of="$mnt/fill" bs=4096 count=15 2>/dev/null
  "$strobe" record -o "$mnt/t.json" -- /bin/sh -c 'echo "pid $$"; exit 3' >"$out/full.out" 2>"$out/full.err"
  rc=$?
  cat "$out/full.err"
  [ "$rc" = 3 ] || fail "full filesystem: exit $rc, not PROGRAM's 3"
  pid=$(awk '/^pid/ {print $2}' "$out/full.out")
  grep -q "process $pid (sh) was not recorded: its part file could not be created or written in .* (the filesystem is full); all its events are lost" "$out/full.err" ||
    fail "full filesystem: the process $pid (sh) is not named with what was lost"
  umount "$mnt"
  trap - EXIT
else
  echo "full filesystem: cannot mount a tmpfs here (not root?); skipped"
fi
echo "test_record_guard: ok"

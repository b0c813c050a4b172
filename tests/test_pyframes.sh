#!/bin/sh
# test_pyframes.sh STROBE_CLI DIR SHARED_DIR TESTS_DIR: Python frames in CPU samples.
#
# Records tests/pyframes_target.py under Debian's /usr/bin/python3 with `strobe record --sample`
# and checks `strobe stacks --samples` (pyframes_check.py): each thread's hot Python function is
# the innermost Python frame of at least 80% of its samples (the main thread's, and a
# threading.Thread's), and zlib's C frames sit above the Python function that calls it; the part's
# "strobe_cpu_sampling" counts the samples that got Python frames. Then with --no-python-frames:
# no Python frame. The traces pass SHARED_DIR's checkers --strict, where present.
# Exits 77 without /usr/bin/python3 3.11 or 3.12, or where perf sampling is refused.
cli=$1 dir=$2 shared=$3 tests=$4
py=/usr/bin/python3
[ -x "$py" ] || { echo "SKIP: no $py"; exit 77; }
"$py" -c 'import sys; sys.exit(0 if sys.version_info[:2] in ((3, 11), (3, 12)) else 1)' ||
    { echo "SKIP: $py is not CPython 3.11 or 3.12"; exit 77; }
rm -rf "$dir" && mkdir -p "$dir" || exit 1
fail=0
err() {
    echo "FAIL: $*"
    fail=1
}
"$cli" record -q --sample --keep-parts -o "$dir/on.json" -- "$py" "$tests/pyframes_target.py" 0.8 ||
    { echo "FAIL: strobe record --sample"; exit 1; }
if grep -q "CPU sampling requested but not done" "$dir"/on.json.parts/*.json; then
    echo "SKIP: perf sampling is refused here"
    exit 77
fi
"$cli" stacks --samples -q "$dir/on.json" >"$dir/on.folded" || err "strobe stacks --samples on.json"
"$py" "$tests/pyframes_check.py" "$dir/on.folded" || err "Python frames in on.json (above)"
grep -q '"python_frames": {"python": "3.1[12]", "records": [1-9]' "$dir"/on.json.parts/*.json ||
    err "no python_frames counts in the part's strobe_cpu_sampling"

"$cli" record -q --sample --no-python-frames -o "$dir/off.json" -- "$py" \
    "$tests/pyframes_target.py" 0.3 || { echo "FAIL: strobe record --no-python-frames"; exit 1; }
"$cli" stacks --samples -q "$dir/off.json" >"$dir/off.folded" || err "strobe stacks --samples off.json"
"$py" "$tests/pyframes_check.py" "$dir/off.folded" --none || err "Python frames with --no-python-frames"

if [ -x "$shared/validators/check_all.sh" ]; then
    . "$tests/validators.sh"
    for t in on.json off.json; do
        strobe_check_trace "$shared" "$dir/$t" --strict >"$dir/check.log" 2>&1 ||
            { cat "$dir/check.log"; err "$t does not pass the checkers"; }
    done
fi
[ $fail -eq 0 ] && echo "PASS"
exit $fail

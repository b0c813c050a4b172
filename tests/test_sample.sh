#!/bin/sh
# test_sample.sh STROBE_CLI DIR SHARED_DIR TESTS_DIR: the CPU-sampling traces test_sample leaves in
# DIR (saved.json, saved.pftrace, streamed.json, streamed.pftrace).
#
# - `strobe stacks --samples` on the four traces: the three threads' stacks (pre_main, post_main,
#   and the main thread's run) are there, each with at least 100 samples, and in each at least 80%
#   of the samples end in the thread's hot function (hot_pre, hot_post, hot_main);
# - `strobe convert` of saved.json to converted.pftrace writes the samples as Perfetto's, which
#   fold to the same counts as saved.json's;
# - with SHARED_DIR's validators: all five traces pass the three checkers --strict, and the trace
#   processor finds the .pftrace's samples as Perfetto CPU samples (perf_sample) on the threads,
#   the hot functions as leaf frames.
# Exits 77 when test_sample left no traces (it skipped: perf_event_open refused).
cli=$1 dir=$2 shared=$3 tests=$4
if [ ! -f "$dir/saved.json" ] || [ ! -f "$dir/streamed.pftrace" ]; then
    echo "SKIP: no sampled traces in $dir (test_sample skipped or did not run)"
    exit 77
fi
fail=0
err() {
    echo "FAIL: $*"
    fail=1
}

for f in saved.json streamed.json saved.pftrace streamed.pftrace; do
    out=$("$cli" stacks --samples -q "$dir/$f") || err "strobe stacks --samples $f failed"
    for pair in pre_main:hot_pre post_main:hot_post "run (:hot_main"; do
        root=${pair%%:*} hot=${pair#*:}
        # Lines of the thread (its entry frame in the stack): all samples, and those whose leaf
        # (the last frame) is the hot function.
        counts=$(printf '%s\n' "$out" | awk -v root="$root" -v hot="$hot" '
            index($0, root) {
                n = $NF; all += n
                line = $0; sub(/ [0-9]+$/, "", line)
                k = split(line, fr, ";")
                if (index(fr[k], hot) == 1) leaf += n
            }
            END { printf "%d %d", all, leaf }')
        all=${counts% *} leaf=${counts#* }
        echo "$f: $root: $all samples, $leaf ending in $hot"
        [ "$all" -ge 100 ] || err "$f: only $all samples under $root"
        [ $((leaf * 10)) -ge $((all * 8)) ] || err "$f: $hot is the leaf of $leaf of $all samples"
    done
done

"$cli" convert "$dir/saved.json" "$dir/converted.pftrace" || err "strobe convert failed"
# The same result as .pftrace folds to the same counts (its PerfSample packets are read).
"$cli" stacks --samples -q "$dir/converted.pftrace" >"$dir/converted.folded" 2>"$dir/stderr.txt" ||
    err "stacks --samples on a .pftrace: exit $?"
"$cli" stacks --samples -q "$dir/saved.json" >"$dir/saved.json.folded" 2>>"$dir/stderr.txt"
cmp -s "$dir/saved.json.folded" "$dir/converted.folded" ||
    err "stacks --samples: saved.json and its .pftrace differ"

if [ ! -x "$shared/validators/check_all.sh" ]; then
    echo "validators absent ($shared/validators): the checkers were not run"
    exit $fail
fi
. "$tests/validators.sh"
for f in saved.json saved.pftrace streamed.json streamed.pftrace converted.pftrace; do
    if ! strobe_check_trace "$shared" "$dir/$f" --strict >"$dir/$f.check.txt" 2>&1; then
        cat "$dir/$f.check.txt"
        err "$f does not pass the checkers"
    fi
done
TP="$(strobe_validators_home)/tp_query"
for f in saved.pftrace streamed.pftrace converted.pftrace; do
    q=$(flock -s "$STROBE_VLOCK" "$TP" "$dir/$f" --sql "select count(distinct utid) as threads, count(*) as samples from perf_sample" --sql "select f.name as leaf, count(*) as n from perf_sample s join stack_profile_callsite c on s.callsite_id = c.id join stack_profile_frame f on c.frame_id = f.id group by f.name order by n desc limit 3")
    echo "$q"
    row=$(printf '%s\n' "$q" | awk '/^threads/ { getline; print; exit }')
    threads=$(echo "$row" | awk '{print $1}') samples=$(echo "$row" | awk '{print $2}')
    # At least the three; strobe's own threads (a stream's writer) are sampled too.
    [ "${threads:-0}" -ge 3 ] || err "$f: perf samples on ${threads:-0} threads, expected 3"
    [ "${samples:-0}" -ge 300 ] || err "$f: ${samples:-0} perf samples, expected at least 300"
    for hot in hot_pre hot_post hot_main; do
        printf '%s\n' "$q" | grep -q "^$hot " || err "$f: $hot is not among the top leaf frames"
    done
done
exit $fail

#!/bin/bash
# Runs the independent trace checkers (Perfetto's trace processor, the Chrome DevTools engine,
# speedscope) with --strict on every trace the trace zoo and the demo write into OUT_DIR, and on
# every trace other tests saved with strobe's writer under TESTS_OUT_DIR (CTest runs this test
# after them): json_writer/, install/, perfetto/, ondemand/, stream/ (streamed files, one cut by
# SIGKILL, and flight recorder dumps), gpu/ (JSON and .pftrace) and roundtrip.json*. Other files
# there (the reader's and the fuzzers' inputs) are malformed on purpose and are not strobe's output.
# Usage: validate_traces.sh ZOO_BINARY DEMO_BINARY OUT_DIR SHARED_DIR TESTS_OUT_DIR [CLI_BINARY]
# With CLI_BINARY (the strobe CLI), the demo's trace and the zoo's traces are also converted to
# Perfetto protobuf with `strobe convert` and checked (perfetto/ holds test_perfetto's .pftrace).
# Exit 77 (skipped) when SHARED_DIR/validators is absent, as in a user's clone.
set -u
zoo=$1 demo=$2 out=$3 shared=$4 tests_out=${5:-} cli=${6:-}
check="$shared/validators/check_all.sh"
# strobe_check_trace runs what check_all.sh runs, with its setup once (validators.sh says why).
. "$(dirname "$0")/validators.sh"
if [ ! -x "$check" ]; then
  echo "SKIP: $check not found (no ../shared beside the project); traces were not validated"
  exit 77
fi
rm -rf "$out" && mkdir -p "$out" || exit 1
traces=$("$zoo" "$out") || { echo "trace_zoo failed"; exit 1; }
"$demo" "$out/demo_trace.json" >/dev/null || { echo "demo failed"; exit 1; }
"$demo" --all "$out/demo_all.json" >/dev/null || { echo "demo --all failed"; exit 1; }
traces="$traces $out/demo_trace.json $out/demo_all.json"
# The demo's results written by the Perfetto writer directly (chosen by the suffix).
"$demo" "$out/demo_trace.pftrace" >/dev/null || { echo "demo (.pftrace) failed"; exit 1; }
"$demo" --all "$out/demo_all.pftrace" >/dev/null || { echo "demo --all (.pftrace) failed"; exit 1; }
traces="$traces $out/demo_trace.pftrace $out/demo_all.pftrace"
if [ -n "$cli" ]; then
  for t in $traces; do
    case "$t" in *.json|*.json.gz) ;; *) continue ;; esac
    pf="$t.converted.pftrace"
    "$cli" convert "$t" "$pf" || { echo "FAIL  strobe convert $t $pf"; exit 1; }
    traces="$traces $pf"
  done
fi
if [ -n "$tests_out" ]; then
  others=$({ find "$tests_out/json_writer" "$tests_out/install" "$tests_out/details" "$tests_out/gpu" -maxdepth 1 -type f \
             \( -name '*.json' -o -name '*.json.gz' \)
           find "$tests_out/ondemand" -maxdepth 1 -type f -name '*.json'
           find "$tests_out/schedule" -maxdepth 3 -type f \( -name '*.json' -o -name '*.json.gz' \)
           find "$tests_out/stream" -maxdepth 1 -type f \( -name '*.json' -o -name '*.pftrace' \)
           find "$tests_out/perfetto" "$tests_out/gpu" -maxdepth 1 -type f -name '*.pftrace'
           find "$tests_out" -maxdepth 1 -type f -name 'roundtrip.json*' ! -name '*.log'; } \
           2>/dev/null | sort)
  [ -n "$others" ] || { echo "no traces from other tests under $tests_out"; exit 1; }
  traces="$traces $others"
fi
fail=0
for t in $traces; do
  log="$t.check.log"
  if strobe_check_trace "$shared" "$t" --strict >"$log" 2>&1; then
    echo "ok    $t"
  else
    echo "FAIL  $t"; cat "$log"; fail=1
  fi
done
exit $fail

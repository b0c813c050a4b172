#!/usr/bin/env bash
# skip_reasons.sh: scripts/test.sh says why each skipped test was skipped, which CTest does not.
# A scratch CTest project with a test that skips with a reason (SKIP_RETURN_CODE 77), one that
# skips printing nothing, one that passes and one that fails; CTest runs it with --output-junit,
# and tests/skip_reasons.py must print the first's reason and CTest's word for the second, and
# nothing for the others. It also checks that CTest itself still prints no reason (if a later
# CTest does, scripts/test.sh's extra lines can go).
# Usage: skip_reasons.sh SOURCE_DIR WORK_DIR. Exit 77 without python3.
set -u
src=$1 work=$2
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$work" && mkdir -p "$work/proj"
fail=0
bad() { echo "FAIL  $*"; fail=1; }
cat >"$work/proj/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(skips NONE)
enable_testing()
add_test(NAME says_why COMMAND sh -c "echo 'checking'; echo 'SKIP: /nonexistent/traces not found'; exit 77")
add_test(NAME says_nothing COMMAND sh -c "exit 77")
set_tests_properties(says_why says_nothing PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME passes COMMAND sh -c "echo 'skip nothing'; exit 0")
add_test(NAME fails COMMAND sh -c "echo 'SKIP: not a skip'; exit 1")
CMAKE
cmake -S "$work/proj" -B "$work/b" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
(cd "$work/b" && ctest --output-junit "$work/junit.xml" >"$work/ctest.out" 2>&1)
grep -q 'says_why .*Skipped' "$work/ctest.out" || bad "CTest did not skip says_why: $(cat "$work/ctest.out")"
grep -q '/nonexistent/traces' "$work/ctest.out" && echo "note  CTest now prints the reason itself"
python3 "$src/tests/skip_reasons.py" "$work/junit.xml" >"$work/reasons.out" 2>&1 || bad "skip_reasons.py exit $?"
cat "$work/reasons.out"
grep -qx '  says_why: SKIP: /nonexistent/traces not found' "$work/reasons.out" || bad "says_why's reason missing"
grep -q '^  says_nothing: printed no reason (CTest: ' "$work/reasons.out" || bad "says_nothing not listed"
grep -q 'passes\|fails' "$work/reasons.out" && bad "a test that ran is listed as skipped"
grep -q '^Why the 2 skipped test(s) were skipped:' "$work/reasons.out" || bad "no heading with the count"
# A report with no skipped test prints nothing; a missing report is an error (exit 2).
(cd "$work/b" && ctest -R passes --output-junit "$work/none.xml" >/dev/null 2>&1)
[ -z "$(python3 "$src/tests/skip_reasons.py" "$work/none.xml")" ] || bad "output with no skipped test"
python3 "$src/tests/skip_reasons.py" "$work/missing.xml" 2>/dev/null; [ $? -eq 2 ] || bad "a missing report: not exit 2"
[ $fail -eq 0 ] && echo "ok    skipped tests' reasons printed"
exit $fail

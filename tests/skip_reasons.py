#!/usr/bin/env python3
"""skip_reasons.py: says why each skipped test was skipped, from CTest's JUnit report.

CTest (3.25 here) prints "Skipped" for a test that exits with its SKIP_RETURN_CODE, and never
the test's output, not even with --output-on-failure, which shows only failures. The JUnit report
(ctest --output-junit FILE) keeps each test's output, so the reason a test printed is there:
scripts/test.sh runs this after CTest.

For each skipped test, one line "  NAME: REASON": the test's output lines that say "skip" (as
every skipping test of strobe prints its reason: "SKIP: ...", "...: skipped"), or else its last
line, or CTest's own word when it printed nothing ("Unable to find executable ...").

usage: skip_reasons.py JUNIT_XML   (exit 0; 2 when the report cannot be read)
"""
import sys
import xml.etree.ElementTree as ET

MAX_LINES = 3


def reason(out, ctest_said):
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    said = [ln for ln in lines if "skip" in ln.lower()]
    picked = said[-MAX_LINES:] if said else lines[-1:]
    if picked:
        return " / ".join(picked)
    return "printed no reason (CTest: %s)" % (ctest_said or "skipped")


def main():
    if len(sys.argv) != 2:
        print("usage: skip_reasons.py JUNIT_XML", file=sys.stderr)
        return 2
    try:
        root = ET.parse(sys.argv[1]).getroot()
    except (OSError, ET.ParseError) as e:
        print("skip_reasons.py: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 2
    skipped = []
    for case in root.iter("testcase"):
        if case.find("skipped") is None:
            continue
        why = reason(case.findtext("system-out"), case.find("skipped").get("message"))
        skipped.append((case.get("name", "?"), why))
    if skipped:
        print("\nWhy the %d skipped test(s) were skipped:" % len(skipped))
        for name, why in skipped:
            print("  %s: %s" % (name, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints the CTest entries a run skipped, with each one's reason.

    scripts/ctest-skips.py JUNIT.xml     (from `ctest --output-junit JUNIT.xml`)

A test that skips prints one line "SKIP: <reason>" and exits 77 (CTest's SKIP_RETURN_CODE;
tests/support/skip.h, tests/cli/common.sh); the reason shown is that line, or the last line of
the test's output when it has none. Exit status 0 (skips are reported, not failures)."""
import sys
import xml.etree.ElementTree as ET


def reason(output):
    lines = [l.strip() for l in (output or "").splitlines() if l.strip()]
    for line in lines:
        if line.startswith("SKIP: "):
            return line[len("SKIP: "):]
    return lines[-1] if lines else "(no output)"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = ET.parse(sys.argv[1]).getroot()
    skipped = []
    for case in root.iter("testcase"):
        if case.find("skipped") is None:
            continue
        out = case.find("system-out")
        skipped.append((case.get("name"), reason(out.text if out is not None else "")))
    total = sum(1 for _ in root.iter("testcase"))
    print(f"== skipped: {len(skipped)} of {total} CTest entries")
    for name, why in skipped:
        print(f"  {name}: {why}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Prints the name of every failed test case in a Catch2 v2 console log, one per line, once.

The console reporter opens each failing case with a rule of dashes, the case's name (a long
one wrapped onto lines indented deeper than a section), then its sections, indented two
spaces, another rule, the file:line, a rule of dots; the failure follows.
    scripts/device/failed_tests.py gpu_tests.log
"""
import sys


def failed_names(lines):
    names, i = [], 0
    while i < len(lines):
        if lines[i].startswith("-----") and i + 1 < len(lines) and not lines[i + 1].startswith("---"):
            name = lines[i + 1].rstrip("\n")
            j = i + 2
            # A long name wraps onto lines indented deeper than a section's two spaces.
            while j < len(lines) and lines[j].startswith("    ") and not lines[j].strip().startswith("---"):
                name += " " + lines[j].strip()
                j += 1
            while j < len(lines) and not lines[j].startswith("-----"):
                j += 1
            block_end = j + 1
            while block_end < len(lines) and not lines[block_end].startswith("-----"):
                block_end += 1
            body = "".join(lines[j:block_end])
            if ("FAILED" in body or "fatal error condition" in body or "unexpected exception" in body) \
                    and name not in names and not name.startswith(" "):
                names.append(name)
            i = block_end
        else:
            i += 1
    return names


if __name__ == "__main__":
    with open(sys.argv[1], errors="replace") as f:
        print("\n".join(failed_names(f.readlines())))

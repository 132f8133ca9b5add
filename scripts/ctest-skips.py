#!/usr/bin/env python3
"""Prints the CTest entries a run skipped, with each one's reason, and fails on a skip this
machine is not allowed.

    scripts/ctest-skips.py JUNIT.xml [--build-dir DIR] [--allowed FILE]

JUNIT.xml comes from `ctest --output-junit JUNIT.xml`. A test that skips prints one line
"SKIP: <reason>" and exits 77 (CTest's SKIP_RETURN_CODE; tests/support/skip.h,
tests/cli/common.sh); the reason shown is that line, or the last line of the test's output when
it has none. FILE (default scripts/allowed-skips.txt) lists the skips allowed, each under
conditions checked on this machine (its CPU flags, GPU, user, CI=true, Python modules,
commands, and the build's generated/build_config.h in DIR, by default JUNIT.xml's folder).
Exit status: 0 when every skip is allowed, 1 otherwise (each one not allowed is named)."""
import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET


def reason(output):
    lines = [l.strip() for l in (output or "").splitlines() if l.strip()]
    for line in lines:
        if line.startswith("SKIP: "):
            return line[len("SKIP: "):]
    return lines[-1] if lines else "(no output)"


class Machine:
    """The conditions of allowed-skips.txt, each checked once on this machine."""

    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.cache = {}

    def cpu_flags(self):
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("flags"):
                        return set(line.split(":", 1)[1].split())
        except OSError:
            pass
        return set()

    def build_has(self, what):
        path = os.path.join(self.build_dir, "generated", "build_config.h")
        try:
            text = open(path).read()
        except OSError:
            sys.exit(f"ctest-skips.py: no {path} (pass the build folder with --build-dir)")
        m = re.search(rf"#define DLT_HAVE_{what} (\d)", text)
        if not m:
            sys.exit(f"ctest-skips.py: {path} has no DLT_HAVE_{what}")
        return m.group(1) == "1"

    def gpu(self):
        if not self.build_has("CUDA"):
            return False
        if os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1", "none", "NoDevFiles"):
            return False
        if not shutil.which("nvidia-smi"):
            return False
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        return out.returncode == 0 and any(l.startswith("GPU ") for l in out.stdout.splitlines())

    def python_module(self, module):
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        return subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0

    def holds(self, cond):
        cond = cond.strip()
        if cond.startswith("!"):
            return not self.holds(cond[1:])
        if cond not in self.cache:
            kind, _, arg = cond.partition(":")
            if kind == "always":
                v = True
            elif kind == "ci":
                v = os.environ.get("CI") == "true"
            elif kind == "root":
                v = os.geteuid() == 0
            elif kind == "gpu":
                v = self.gpu()
            elif kind == "build":
                v = self.build_has(arg)
            elif kind == "cpu":
                v = set(arg.split(",")) <= self.cpu_flags()
            elif kind == "python":
                v = self.python_module(arg)
            elif kind == "command":
                v = (os.access(arg, os.X_OK) if "/" in arg else shutil.which(arg) is not None)
            else:
                sys.exit(f"ctest-skips.py: unknown condition '{cond}' in the allowed skips")
            self.cache[cond] = v
        return self.cache[cond]


def read_allowed(path):
    rules = []
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ")]
        if len(parts) != 3:
            sys.exit(f"{path}:{n}: expected NAME | REASON | CONDITIONS, got: {line}")
        rules.append((parts[0], parts[1], [c for c in parts[2].split("&")], f"{path}:{n}"))
    return rules


def allowed_by(rules, machine, name, why):
    for name_pat, reason_pat, conds, where in rules:
        if fnmatch.fnmatchcase(name, name_pat) and fnmatch.fnmatchcase(why, reason_pat):
            if all(machine.holds(c) for c in conds):
                return f"{where}: {' & '.join(c.strip() for c in conds)}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit")
    ap.add_argument("--build-dir", help="the build folder (default: JUNIT.xml's folder)")
    ap.add_argument("--allowed", default=os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "allowed-skips.txt")))
    args = ap.parse_args()
    machine = Machine(args.build_dir or os.path.dirname(os.path.abspath(args.junit)))
    rules = read_allowed(args.allowed)
    root = ET.parse(args.junit).getroot()
    skipped = []
    for case in root.iter("testcase"):
        if case.find("skipped") is None:
            continue
        out = case.find("system-out")
        skipped.append((case.get("name"), reason(out.text if out is not None else "")))
    total = sum(1 for _ in root.iter("testcase"))
    print(f"== skipped: {len(skipped)} of {total} CTest entries")
    refused = []
    for name, why in skipped:
        rule = allowed_by(rules, machine, name, why)
        print(f"  {name}: {why}")
        print(f"    allowed here by {rule}" if rule else "    NOT ALLOWED on this machine")
        if not rule:
            refused.append(name)
    if refused:
        print(f"== {len(refused)} skip(s) not allowed on this machine ({args.allowed}): "
              "make the test run here, or, if this machine truly cannot run it, add its condition there")
        for name in refused:
            print(f"  {name}")
        sys.exit(1)


if __name__ == "__main__":
    main()

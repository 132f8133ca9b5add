#!/usr/bin/env python3
"""Checks the include graph of lib/ against docs/architecture.md's folder table.

Reads every `#include "x/..."` under lib/ that names a file of lib/ and fails (exit 1, one line
per offence naming file:line, the include and the rule) on:
  * an include of a folder that the including folder may not include (ALLOWED below, which is
    the "may include" column of docs/architecture.md's table, in the order
    util -> tensor -> backend -> layers -> config -> net -> optim / dist / onnx -> data -> train);
  * a cycle between folders in the graph the includes actually form;
  * an include of the CUDA plugin's internals (backend/cuda/) from outside lib/backend/;
  * a CUDA, cuDNN, cuBLAS or NCCL system header outside lib/backend/cuda/;
  * train/draw/ including more than util/, train/progress.h, train/run_status.h and itself;
  * a dynamic_cast to a class declared in lib/layers/ outside lib/layers/ (the network asks
    layers through Layer's interface and their published data, never their concrete types);
  * a device test (`bool cpu`, `is_cpu()`, `DeviceType::`) in the fusion code (lib/net/fusion*):
    the fusion plan asks the backend whether it runs a fused op (Backend::supports).
Prints the folder graph it found. Standard-library Python only.

    python3 scripts/check-includes.py [SOURCE_DIR]
"""
import os
import re
import sys

ORDER = ["util", "tensor", "backend", "layers", "config", "net", "optim", "dist", "onnx", "data", "train"]

# What each folder of lib/ may include besides itself: docs/architecture.md's table.
ALLOWED = {
    "util": set(),
    "tensor": {"util"},
    "backend": {"tensor", "util"},
    "layers": {"backend", "tensor", "util"},
    "config": {"layers", "backend", "tensor", "util"},
    "net": {"config", "layers", "backend", "tensor", "util"},
    "optim": {"net", "config", "layers", "backend", "tensor", "util"},
    "dist": {"net", "config", "layers", "backend", "tensor", "util"},
    "onnx": {"net", "config", "layers", "backend", "tensor", "util"},
    "data": {"config", "tensor", "util"},
    "train": {"optim", "dist", "onnx", "data", "net", "config", "layers", "backend", "tensor", "util"},
}

# Sanctioned exceptions: (including file, included file) -> why. None today: every include
# follows the table. An entry here is the only way to allow an include against it.
EXCEPTIONS = {}

# Files outside lib/backend/cuda/ that may include CUDA system headers: none.
CUDA_HEADER = re.compile(r'#\s*include\s*<(cuda[^>]*|cudnn[^>]*|cublas[^>]*|nccl[^>]*|cuda/[^>]*)>')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([a-z_]+)/([^"]+)"')
DRAW_MAY_INCLUDE = ("util/", "train/progress.h", "train/run_status.h", "train/draw/")


def sources(lib):
    for root, _dirs, files in os.walk(lib):
        for name in sorted(files):
            if name.endswith((".h", ".cpp", ".cu", ".cuh")):
                yield os.path.join(root, name)


def find_cycle(graph):
    """A list of folders forming a cycle in graph (folder -> set of folders), or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


LAYER_CLASS = re.compile(r"^\s*class\s+(\w+)\b[^;]*$")
DYNAMIC_CAST = re.compile(r"dynamic_cast\s*<\s*(?:const\s+)?(?:\w+::)*(\w+)")
DEVICE_TEST = re.compile(r"\bbool\s+cpu\b|\bis_cpu\s*\(|\bDeviceType::")


def layer_classes(lib):
    """The classes lib/layers/'s headers declare (a definition, not a forward declaration)."""
    names = set()
    folder = os.path.join(lib, "layers")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".h"):
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = LAYER_CLASS.match(line)
                    if m:
                        names.add(m.group(1))
    return names


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    lib = os.path.join(src, "lib")
    if not os.path.isdir(lib):
        print(f"check-includes: {lib} is not a folder (give the source directory)", file=sys.stderr)
        return 2
    assert set(ALLOWED) == set(ORDER)
    for folder, allowed in ALLOWED.items():  # the table itself follows the order
        for a in allowed:
            assert ORDER.index(a) < ORDER.index(folder), f"ALLOWED[{folder}] names {a}, which is not to its left"

    problems = []
    classes = layer_classes(lib)
    graph = {f: set() for f in ORDER}
    files = 0
    for path in sources(lib):
        files += 1
        rel = os.path.relpath(path, lib).replace(os.sep, "/")
        folder = rel.split("/")[0]
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        for number, line in enumerate(lines, 1):
            where = f"lib/{rel}:{number}"
            if CUDA_HEADER.search(line) and not rel.startswith("backend/cuda/"):
                problems.append(f"{where}: {line.strip()}: CUDA headers belong in lib/backend/cuda/ only")
            cast = DYNAMIC_CAST.search(line)
            if cast and cast.group(1) in classes and folder != "layers":
                problems.append(f"{where}: dynamic_cast to the layer class {cast.group(1)} outside lib/layers/ "
                                f"(ask the layer through Layer's interface or its published traits)")
            if rel.startswith("net/fusion") and DEVICE_TEST.search(line.split("//")[0]):
                problems.append(f"{where}: a device test in the fusion code ({line.strip()}): ask the backend "
                                f"whether it runs the fused op (Backend::supports)")
            m = INCLUDE.match(line)
            if not m:
                continue
            target, inner = m.group(1), m.group(2)
            included = f"{target}/{inner}"
            if not os.path.isfile(os.path.join(lib, target, inner)):
                continue  # not a file of lib/ (a library's header)
            if folder not in ALLOWED:
                problems.append(f"{where}: lib/{folder}/ is not in the folder table (docs/architecture.md)")
                continue
            if target not in ALLOWED:
                problems.append(f"{where}: includes {included}, but lib/{target}/ is not in the folder table")
                continue
            if (rel, included) in EXCEPTIONS:
                continue
            if target != folder:
                graph[folder].add(target)
                if target not in ALLOWED[folder]:
                    problems.append(f"{where}: {folder}/ includes {included}, but {folder}/ may include only "
                                    f"{', '.join(sorted(ALLOWED[folder], key=ORDER.index)) or 'nothing of ours'}")
            if included.startswith("backend/cuda/") and not rel.startswith("backend/"):
                problems.append(f"{where}: includes {included}: the CUDA plugin's internals are lib/backend's only "
                                f"(reach the plugin through backend/cuda_plugin.h)")
            if rel.startswith("train/draw/") and not included.startswith(DRAW_MAY_INCLUDE):
                problems.append(f"{where}: train/draw/ includes {included}, but it may include only util/, "
                                f"train/progress.h, train/run_status.h and itself")

    cycle = find_cycle(graph)
    if cycle:
        problems.append("a cycle between folders: " + " -> ".join(cycle))
    for folder in ORDER:
        print(f"{folder} -> {' '.join(sorted(graph[folder], key=ORDER.index)) or '(nothing)'}")
    for p in problems:
        print(p)
    if problems:
        print(f"check-includes: {len(problems)} problem(s) in {files} files of lib/ (the rules: docs/architecture.md)")
        return 1
    print(f"check-includes: ok ({files} files of lib/, no include against the folder order, no cycle)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

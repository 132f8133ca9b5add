#!/usr/bin/env python3
"""Compares the parameters and states of two dltrain model.bin files (format: lib/net/model_file.cpp).

usage: compare_models.py A.bin B.bin [--tol 1e-5]
Per tensor, the error is max|a - b| / max|b| (relative to the tensor's largest value). Prints
the largest error and the tensor it is in; exits 1 when it exceeds --tol or the tensors differ
in names or shapes. Standard library only.
"""
import struct
import sys


def read_tensors(path):
    data = open(path, "rb").read()
    if data[:8] != b"DLTMODEL":
        sys.exit(f"{path}: not a dltrain model file")
    pos, tensors = 32, {}
    while pos < len(data):
        tag = data[pos:pos + 4]
        (length,) = struct.unpack_from("<Q", data, pos + 4)
        body, pos = pos + 12, pos + 12 + length
        if tag not in (b"PARM", b"STAT"):
            continue
        (count,) = struct.unpack_from("<I", data, body)
        p = body + 4
        for _ in range(count):
            names = []
            for _ in range(2):
                (n,) = struct.unpack_from("<I", data, p)
                names.append(data[p + 4:p + 4 + n].decode())
                p += 4 + n
            (rank,) = struct.unpack_from("<I", data, p)
            shape = struct.unpack_from(f"<{rank}Q", data, p + 4)
            p += 4 + 8 * rank
            numel = 1
            for s in shape:
                numel *= s
            tensors[f"{tag.decode()}:{names[0]}.{names[1]}"] = struct.unpack_from(f"<{numel}f", data, p)
            p += 4 * numel
    return tensors


def main():
    args = sys.argv[1:]
    tol = 1e-5
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        del args[i:i + 2]
    a, b = read_tensors(args[0]), read_tensors(args[1])
    if a.keys() != b.keys():
        print(f"tensors differ: {sorted(a.keys() ^ b.keys())}")
        return 1
    worst, where = 0.0, ""
    for k in a:
        if len(a[k]) != len(b[k]):
            print(f"{k}: {len(a[k])} vs {len(b[k])} values")
            return 1
        scale = max((abs(v) for v in b[k]), default=0.0) or 1.0
        err = max((abs(x - y) for x, y in zip(a[k], b[k])), default=0.0) / scale
        if err > worst or not where:
            worst, where = err, k
    print(f"max relative error {worst:.3e} (in {where}) over {len(a)} tensors; tolerance {tol:g}")
    return 0 if worst <= tol else 1


if __name__ == "__main__":
    sys.exit(main())

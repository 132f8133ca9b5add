#!/usr/bin/env python3
"""Largest difference between the weights of two dltrain models exported as ONNX
(`dltrain export model.bin -o m.onnx`): every initializer by name, max |a - b| and the largest
|a| for scale. Prints one line per model pair and exits 1 when the largest difference is over
--tol (default: report only).
    scripts/device/compare_models.py a.onnx b.onnx [--tol 1e-6]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def weights(path):
    return {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(path).graph.initializer}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=None)
    args = ap.parse_args()
    a, b = weights(args.a), weights(args.b)
    if sorted(a) != sorted(b):
        print(f"compare_models: different initializers: {sorted(set(a) ^ set(b))[:5]}")
        return 1
    worst, worst_name, scale, count = 0.0, "", 0.0, 0
    for name in a:
        if a[name].shape != b[name].shape:
            print(f"compare_models: {name}: shapes {a[name].shape} and {b[name].shape}")
            return 1
        d = float(np.max(np.abs(a[name] - b[name]))) if a[name].size else 0.0
        scale = max(scale, float(np.max(np.abs(a[name]))) if a[name].size else 0.0)
        count += a[name].size
        if d > worst:
            worst, worst_name = d, name
    print(f"{args.a} vs {args.b}: {len(a)} tensors, {count} values, max |diff| {worst:.3g}"
          f" ({worst_name or '-'}), max |value| {scale:.3g}")
    return 1 if args.tol is not None and worst > args.tol else 0


if __name__ == "__main__":
    sys.exit(main())

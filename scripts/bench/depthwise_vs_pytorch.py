#!/usr/bin/python3
"""One depthwise (or grouped) 3x3 convolution, forward + backward (data and weight gradients),
in dltrain (`dltrain time --json`, the layer's forward_ms + backward_ms) and in PyTorch eager
(nn.Conv2d(groups=...), channels_last, the same shape), on the CPU with the same threads.

dltrain times the layer inside a tiny network (a 1x1 convolution before it, so that its data
gradient is needed, as in a real network; global pooling and a classifier after it).
PyTorch times conv(x) and the backward of a fixed dy with x.requires_grad, i.e. dx, dw and db.
Both run NHWC. Prints one line per shape; --json for JSON lines.

  /usr/bin/python3 scripts/bench/depthwise_vs_pytorch.py [--shapes "32x56x56x64 32x28x28x128"]
      [--groups channel-wise|N] [--multiplier 1] [--stride 1] [--threads 2] [--iterations 20] [--json]

Environment: DLTRAIN (default build/dltrain). Run on idle cores.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def dltrain_ms(dltrain, n, h, w, c, groups, multiplier, stride, threads, iterations):
    g = "channel-wise" if groups == "channel-wise" else str(groups)
    cfg = f"""layers:
  - {{type: imageInput, Name: input, InputSize: [{h}, {w}, {c}], Normalization: none}}
  - {{type: convolution2d, Name: pre, FilterSize: 1, NumFilters: {c}}}
  - {{type: groupedConvolution2d, Name: dw, FilterSize: 3, NumFiltersPerGroup: {multiplier}, NumGroups: {g},
     Stride: {stride}, Padding: same}}
  - {{type: globalAveragePooling2d, Name: gap}}
  - {{type: fullyConnected, Name: fc, OutputSize: 10}}
  - {{type: softmax, Name: softmax}}
  - {{type: classification, Name: output, Classes: [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9]}}
training:
  MiniBatchSize: {n}
  ExecutionEnvironment: cpu
"""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(cfg)
        path = f.name
    try:
        out = subprocess.run([dltrain, "time", path, "--json", "--threads", str(threads), "--iterations",
                              str(iterations), "--warmup", "3"], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    r = json.loads(out.strip().splitlines()[-1])
    layer = next(l for l in r["layers"] if l["name"] == "dw")
    return layer["forward_ms"], layer["backward_ms"]


def torch_ms(n, h, w, c, groups, multiplier, stride, threads, iterations):
    import torch
    torch.set_num_threads(threads)
    g = c if groups == "channel-wise" else int(groups)
    k = g * multiplier
    conv = torch.nn.Conv2d(c, k, 3, stride=stride, padding=1, groups=g).to(memory_format=torch.channels_last)
    x = torch.randn(n, c, h, w).to(memory_format=torch.channels_last).requires_grad_(True)
    with torch.no_grad():
        dy = torch.randn_like(conv(x)).contiguous(memory_format=torch.channels_last)

    def fwd():
        return conv(x)

    def both():
        conv.zero_grad(set_to_none=True)
        x.grad = None
        conv(x).backward(dy)

    def best(fn):
        for _ in range(3):
            fn()
        times = []
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(iterations):
                fn()
            times.append((time.perf_counter() - t) / iterations * 1e3)
        return min(times)

    f = best(lambda: fwd())
    fb = best(both)
    return f, fb - f, torch.__version__


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="32x56x56x64 32x28x28x128 32x14x14x256", help="NxHxWxC ...")
    p.add_argument("--groups", default="channel-wise")
    p.add_argument("--multiplier", type=int, default=1)
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    dltrain = os.environ.get("DLTRAIN", os.path.join(ROOT, "build", "dltrain"))
    for s in a.shapes.split():
        n, h, w, c = (int(v) for v in s.split("x"))
        df, db = dltrain_ms(dltrain, n, h, w, c, a.groups, a.multiplier, a.stride, a.threads, a.iterations)
        tf, tb, version = torch_ms(n, h, w, c, a.groups, a.multiplier, a.stride, a.threads, a.iterations)
        row = {"shape": s, "groups": a.groups, "multiplier": a.multiplier, "stride": a.stride, "threads": a.threads,
               "dltrain_forward_ms": df, "dltrain_backward_ms": db, "torch_forward_ms": tf, "torch_backward_ms": tb,
               "torch": version, "ratio": (tf + tb) / (df + db)}
        if a.json:
            print(json.dumps(row))
        else:
            print(f"{s} groups {a.groups} x{a.multiplier} stride {a.stride}, {a.threads} threads: dltrain "
                  f"{df:.2f} + {db:.2f} ms, PyTorch {version} {tf:.2f} + {tb:.2f} ms (forward + backward); "
                  f"PyTorch / dltrain {row['ratio']:.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""PyTorch's side of the attention op's timing: forward + backward of softmax(Q K^T / sqrt(d)) V
on token tensors (n, seq, heads * dim), the heads split and merged by views, autograd for the
gradients of Q, K and V; float32, best of 5 rounds of 3 steps. dltrain's side is the hidden test
    build/tests/dltrain_tests "cpu attention: forward + backward timing at 32x3x65x64"
(the same sizes; OMP_NUM_THREADS sets its threads). Indicative only: run both on an idle machine.

    /usr/bin/python3 scripts/bench/attention_vs_pytorch.py [--n 32 --heads 3 --seq 65 --dim 64 --threads 2]
"""
import argparse
import math
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--seq", type=int, default=65)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(3)
    c = a.heads * a.dim
    q, k, v = (torch.rand(a.n, a.seq, c, requires_grad=True) for _ in range(3))
    do = torch.rand(a.n, a.seq, c)

    def split(t):
        return t.view(a.n, a.seq, a.heads, a.dim).transpose(1, 2)

    def step():
        s = split(q) @ split(k).transpose(2, 3) * (1 / math.sqrt(a.dim))
        o = (torch.softmax(s, dim=3) @ split(v)).transpose(1, 2).reshape(a.n, a.seq, c)
        q.grad = k.grad = v.grad = None
        o.backward(do)

    step()
    best = 1e30
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(3):
            step()
        best = min(best, (time.perf_counter() - t) * 1e3 / 3)
    print("pytorch %s attention %dx%dx%dx%d forward+backward: %.3f ms (%d threads)" %
          (torch.__version__, a.n, a.heads, a.seq, a.dim, best, torch.get_num_threads()))


if __name__ == "__main__":
    main()

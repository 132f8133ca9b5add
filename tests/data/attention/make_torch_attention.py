#!/usr/bin/python3
"""Writes torch_attention.txt beside this script: fixed inputs, PyTorch's attention and gradients.

tests/backend/test_cpu_attention.cpp reads the file and compares dltrain's CPU attention op
(backend/attention_op.h) with it. Run with Debian's PyTorch (python3-torch, 1.13):
    /usr/bin/python3 tests/data/attention/make_torch_attention.py
PyTorch 1.13 has no scaled_dot_product_attention: the attention is written out in torch ops,
softmax(Q K^T * scale + mask) V per head, the mask -inf above the diagonal (causal,
top-left aligned as torch.nn.functional.scaled_dot_product_attention's is_causal), on token
tensors (n, seq, heads * dim) whose heads are channel blocks (torch.nn.MultiheadAttention's
split). Inputs are float32 values (written exactly); PyTorch computes in float64; the
gradients are autograd's for the loss sum(O * dO).

File format: blocks of lines "key v1 v2 ...", a block from "case NAME" to "end"; "sizes" is
n heads seq_q seq_kv key_dim value_dim causal scale (scale 0: 1 / sqrt(key_dim)).
"""
import math
import os

import torch

torch.manual_seed(51)
D = torch.float64


def floats(shape, lo, hi):
    return (torch.rand(shape, dtype=torch.float32) * (hi - lo) + lo).to(D)


def line(key, values, digits=17):
    """float32 inputs need 9 significant digits to read back exactly; results get 17."""
    if isinstance(values, torch.Tensor):
        values = values.flatten().tolist()
    return key + " " + " ".join("%.*g" % (digits, v) for v in values)


def attention(q, k, v, heads, causal, scale):
    n, sq, _ = q.shape
    skv = k.shape[1]
    split = lambda t: t.reshape(n, t.shape[1], heads, -1).transpose(1, 2)  # (n, heads, seq, dim)
    s = split(q) @ split(k).transpose(2, 3) * scale
    if causal:
        s = s.masked_fill(torch.ones(sq, skv, dtype=torch.bool).triu(1), float("-inf"))
    o = torch.softmax(s, dim=3) @ split(v)
    return o.transpose(1, 2).reshape(n, sq, -1)


def case(name, n, heads, sq, skv, dk, dv, causal, scale=0.0):
    q = floats((n, sq, heads * dk), -2, 2).requires_grad_()
    k = floats((n, skv, heads * dk), -2, 2).requires_grad_()
    v = floats((n, skv, heads * dv), -1, 1).requires_grad_()
    do = floats((n, sq, heads * dv), -1, 1)
    o = attention(q, k, v, heads, causal, scale if scale else 1 / math.sqrt(dk))
    (o * do).sum().backward()
    out = ["case " + name, line("sizes", [n, heads, sq, skv, dk, dv, int(causal), scale])]
    for key, t in [("q", q.detach()), ("k", k.detach()), ("v", v.detach()), ("dO", do)]:
        out.append(line(key, t, 9))
    for key, t in [("O", o.detach()), ("dQ", q.grad), ("dK", k.grad), ("dV", v.grad)]:
        out.append(line(key, t))
    out.append("end")
    return "\n".join(out)


cases = [
    case("one head, 6 tokens", 1, 1, 6, 6, 4, 4, False),
    case("3 heads, 5 queries over 7 keys, key dim 4 value dim 3", 1, 3, 5, 7, 4, 3, False),
    case("causal, 2 heads of 7 tokens", 1, 2, 7, 7, 3, 3, True),
    case("causal, 6 queries over 3 keys, scale 0.25", 1, 2, 6, 3, 2, 3, True, 0.25),
    case("2 images, 2 heads of 9 tokens, dim 4", 2, 2, 9, 9, 4, 4, False),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_attention.txt")
with open(path, "w") as f:
    f.write("# written by make_torch_attention.py (torch " + torch.__version__ + "); do not edit\n")
    f.write("\n".join(cases) + "\n")

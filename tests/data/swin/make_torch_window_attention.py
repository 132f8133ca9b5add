"""Writes torch_window_attention.txt: torchvision's ShiftedWindowAttention (Swin's attention), its
ShiftedWindowAttentionV2 (Swin V2's cosine attention; its position bias from a learnable table
rather than the MLP, its key bias zero as V2 holds it, one head's logit scale past the clamp) and
MaxViT's window and grid attention (PartitionAttentionLayer's partition, axis swap and
RelativePositionalMultiHeadAttention) on fixed random inputs and learnables, the output and the
gradients of sum(y * r), for tests/layers/test_window_attention.cpp.

Run with a PyTorch that has torchvision's Swin (>= 0.13), e.g. the zoo venv:
  build/zoo-venv/bin/python tests/data/swin/make_torch_window_attention.py
Each case: a 'case NAME H W C HEADS WH WW SH SW N PARTITION' line, then 'KEY v v v ...' lines:
x (N, H, W, C), r, y, dx and, for each learnable, 'param NAME' and 'grad NAME' in dltrain's
names and shapes (QueryWeights (C, C) = rows 0..C-1 of qkv.weight, ..., RelativePositionBias
((2 WH - 1) (2 WW - 1), HEADS) = relative_position_bias_table, LogitScale (HEADS) = V2's
logit_scale); PARTITION is window, grid or cosine (window partition, CosineAttention). MaxViT scales the scores by
C^-1/2 rather than the head's d^-1/2: its query weights and bias are written times sqrt(d / C)
(what an import folds in), their gradients divided by it.
"""
import os

import torch
from torchvision.models.maxvit import RelativePositionalMultiHeadAttention, WindowDepartition, WindowPartition
from torchvision.models.swin_transformer import ShiftedWindowAttention, ShiftedWindowAttentionV2
from torchvision.models.swin_transformer import _get_relative_position_bias

CASES = [
    # name, H, W, C, heads, window, shift, N
    ("plain", 4, 4, 6, 2, (2, 2), (0, 0), 2),
    ("shifted_padded", 5, 7, 6, 3, (3, 3), (1, 1), 2),
    ("rectangular_shift", 6, 8, 4, 2, (3, 4), (1, 2), 1),
    ("window_covers_rows", 3, 8, 4, 1, (4, 4), (2, 2), 1),  # rows padded to 4: not shifted
]


# MaxViT: name, H, W, C, head_dim, partition_size, partition_type, N
MAXVIT_CASES = [
    ("maxvit_window", 6, 6, 8, 4, 3, "window", 2),
    ("maxvit_grid", 8, 8, 8, 2, 2, "grid", 2),  # sequences of 2x2 tokens spaced 4 apart
]


# Swin V2 (CosineAttention): name, H, W, C, heads, window, shift, N
COSINE_CASES = [
    ("cosine_shifted_padded", 5, 7, 6, 3, (3, 3), (1, 1), 2),
]


class CosineWindowAttention(ShiftedWindowAttentionV2):
    """torchvision's Swin V2 attention with its position bias read from a learnable table (the
    values its continuous position bias MLP gives, 16 sigmoid(cpb_mlp(...)), in dltrain's
    RelativePositionBias) rather than from the MLP."""

    def __init__(self, c, win, shift, heads):
        super().__init__(c, list(win), list(shift), heads)
        rows = (2 * win[0] - 1) * (2 * win[1] - 1)
        self.table = torch.nn.Parameter(torch.zeros(rows, heads))

    def get_relative_position_bias(self):
        return _get_relative_position_bias(self.table, self.relative_position_index, self.window_size)


class MaxVitAttention(torch.nn.Module):
    """PartitionAttentionLayer's attention path without its norm: (N, H, W, C) in and out."""

    def __init__(self, c, head_dim, size, partition_type, h, w):
        super().__init__()
        self.attn = RelativePositionalMultiHeadAttention(c, head_dim, size * size)
        n_partitions = h // size
        self.p = size if partition_type == "window" else n_partitions
        self.grid = partition_type == "grid"
        self.h, self.w = h, w

    def forward(self, x):
        x = x.permute(0, 3, 1, 2)
        x = WindowPartition()(x, self.p)
        if self.grid:
            x = x.swapaxes(-2, -3)
        x = self.attn(x)
        if self.grid:
            x = x.swapaxes(-2, -3)
        x = WindowDepartition()(x, self.p, self.h // self.p, self.w // self.p)
        return x.permute(0, 2, 3, 1)


def learnables(c, qkv, proj, table, f, logit=None):
    """'param NAME' and 'grad NAME' lines in dltrain's names: the joint qkv Linear split into Q, K
    and V (the query's weight and bias times f, their gradients divided by it), the output
    projection, the relative position table."""
    w, b = qkv.weight, qkv.bias
    named = [
        ("QueryWeights", w[:c] * f, w.grad[:c] / f),
        ("KeyWeights", w[c:2 * c], w.grad[c:2 * c]),
        ("ValueWeights", w[2 * c:], w.grad[2 * c:]),
        ("OutputWeights", proj.weight, proj.weight.grad),
        ("QueryBias", b[:c] * f, b.grad[:c] / f),
        ("KeyBias", b[c:2 * c], b.grad[c:2 * c]),
        ("ValueBias", b[2 * c:], b.grad[2 * c:]),
        ("OutputBias", proj.bias, proj.bias.grad),
        ("RelativePositionBias", table, table.grad),
    ]
    if logit is not None:
        named.append(("LogitScale", logit, logit.grad))
    lines = []
    for name, value, grad in named:
        lines += [row("param " + name, value), row("grad " + name, grad)]
    return lines


def run(m, n, h, w, c):
    """The module on fixed random x (N, H, W, C) in double, and the gradients of sum(y * r): the
    x, r, y and dx lines."""
    x = torch.empty(n, h, w, c, dtype=torch.float64).uniform_(-1.5, 1.5).requires_grad_(True)
    r = torch.empty(n, h, w, c, dtype=torch.float64).uniform_(-1.0, 1.0)
    m.train(False)
    y = m(x)
    (y * r).sum().backward()
    return [row("x", x), row("r", r), row("y", y), row("dx", x.grad)]


def row(key, t):
    return key + " " + " ".join(f"{v:.9g}" for v in t.detach().reshape(-1).tolist())


def main():
    torch.manual_seed(0)
    lines = ["# written by make_torch_window_attention.py (torch " + torch.__version__ + ")"]
    for name, h, w, c, heads, win, shift, n in CASES:
        m = ShiftedWindowAttention(c, list(win), list(shift), heads).double()
        with torch.no_grad():
            for p in m.parameters():
                p.uniform_(-0.5, 0.5)
            m.relative_position_bias_table.uniform_(-1.0, 1.0)
        data = run(m, n, h, w, c)
        lines.append(f"case {name} {h} {w} {c} {heads} {win[0]} {win[1]} {shift[0]} {shift[1]} {n} window")
        lines += data
        lines += learnables(c, m.qkv, m.proj, m.relative_position_bias_table, 1.0)
    for name, h, w, c, head_dim, size, ptype, n in MAXVIT_CASES:
        m = MaxVitAttention(c, head_dim, size, ptype, h, w).double()
        a = m.attn
        with torch.no_grad():
            for p in a.parameters():
                p.uniform_(-0.5, 0.5)
            a.relative_position_bias_table.uniform_(-1.0, 1.0)
        data = run(m, n, h, w, c)
        heads = c // head_dim
        # dltrain's windows: Partition window, WindowSize = the partition; grid: the grid of
        # `size` x `size` tokens spaced h / size apart.
        lines.append(f"case {name} {h} {w} {c} {heads} {size} {size} 0 0 {n} {ptype}")
        lines += data
        f = (head_dim / c) ** 0.5
        lines += learnables(c, a.to_qkv, a.merge, a.relative_position_bias_table, f)
    for name, h, w, c, heads, win, shift, n in COSINE_CASES:
        m = CosineWindowAttention(c, win, shift, heads).double()
        with torch.no_grad():
            for p in m.parameters():
                p.uniform_(-0.5, 0.5)
            m.table.uniform_(0.0, 16.0)  # 16 sigmoid(.) lies in (0, 16)
            m.qkv.bias[c:2 * c] = 0  # torchvision's V2 holds the key bias at zero
            m.logit_scale.copy_(torch.tensor([2.0, 2.5, 5.0], dtype=torch.float64).view(heads, 1, 1))  # head 2 clamped
        data = run(m, n, h, w, c)
        lines.append(f"case {name} {h} {w} {c} {heads} {win[0]} {win[1]} {shift[0]} {shift[1]} {n} cosine")
        lines += data
        lines += learnables(c, m.qkv, m.proj, m.table, 1.0, m.logit_scale)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_window_attention.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()

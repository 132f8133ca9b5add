#!/usr/bin/python3
"""Writes torch_adamw.txt beside this script: PyTorch's AdamW over several steps on fixed numbers.

tests/optim/test_adamw.cpp reads the file and runs dltrain's Optimizer (Solver: adamw, CPU)
on the same parameters, gradients and learning rates. Run with Debian's PyTorch
(python3-torch, 1.13):
    /usr/bin/python3 tests/data/optim/make_torch_adamw.py
Every input is a float32 value (written exactly), so dltrain reads the numbers PyTorch was
given; torch.optim.AdamW (foreach=False) computes in float64.

dltrain's per-parameter factors map to one PyTorch parameter group per parameter: the group's
lr is the step's rate times the learn-rate factor, its weight_decay WeightDecay times the L2
factor. L2Regularization (dltrain's L2 term in the gradient, 0 by default with adamw) has no
AdamW argument: it is added to the gradient before the step, l2 * l2_factor * w with w before
the decay, as dltrain defines it (lib/backend/solver.h).

File format: blocks of lines "key v1 v2 ...", a block from "case NAME" to "end". Per
parameter i: pI.lr_factor, pI.l2_factor, pI.w0 (initial values), pI.gT (gradient of step T,
from 1), pI.wT (values after step T), pI.m and pI.s (AdamW's exp_avg and exp_avg_sq after the
last step). lr: the rate of each step.
"""
import os

import torch

torch.manual_seed(51)
D = torch.float64


def f32(x):
    """The float32 value nearest x, as a Python float."""
    return torch.tensor(x, dtype=torch.float32).item()


def floats(n, lo, hi):
    return (torch.rand(n, dtype=torch.float32) * (hi - lo) + lo).to(D)


def line(key, values):
    if isinstance(values, torch.Tensor):
        values = values.flatten().tolist()
    return key + " " + " ".join(repr(float(v)) for v in values)


def case(name, weight_decay, l2, beta1, beta2, eps, lrs, params):
    """params: (size, lr_factor, l2_factor) per parameter."""
    weight_decay, l2, beta1, beta2, eps = f32(weight_decay), f32(l2), f32(beta1), f32(beta2), f32(eps)
    lrs = [f32(lr) for lr in lrs]
    out = ["case " + name, line("weight_decay", [weight_decay]), line("l2", [l2]), line("beta1", [beta1]),
           line("beta2", [beta2]), line("eps", [eps]), line("params", [len(params)]), line("lr", lrs)]
    ws, groups = [], []
    for i, (size, lr_factor, l2_factor) in enumerate(params):
        w = floats(size, -2, 2).requires_grad_(False)
        ws.append(w)
        groups.append({"params": [w], "lr": lrs[0] * lr_factor, "weight_decay": weight_decay * l2_factor})
        out += [line("p%d.lr_factor" % i, [lr_factor]), line("p%d.l2_factor" % i, [l2_factor]),
                line("p%d.w0" % i, w)]
    opt = torch.optim.AdamW(groups, betas=(beta1, beta2), eps=eps, foreach=False)
    for t, lr in enumerate(lrs, start=1):
        for i, (w, group, (size, lr_factor, l2_factor)) in enumerate(zip(ws, opt.param_groups, params)):
            g = floats(size, -1, 1)
            out.append(line("p%d.g%d" % (i, t), g))
            w.grad = g + l2 * l2_factor * w  # dltrain's L2 term, from the undecayed w
            group["lr"] = lr * lr_factor     # a schedule's rate reaches the decay too
        opt.step()
        for i, w in enumerate(ws):
            out.append(line("p%d.w%d" % (i, t), w))
    for i, w in enumerate(ws):
        state = opt.state[w]
        assert int(state["step"].item()) == len(lrs)
        out += [line("p%d.m" % i, state["exp_avg"]), line("p%d.s" % i, state["exp_avg_sq"])]
    out.append("end")
    return "\n".join(out)


# (size, lr_factor, l2_factor): a weight, a bias (BiasL2Factor 0: no decay), one with factors.
params = [(7, 1.0, 1.0), (3, 1.0, 0.0), (5, 2.0, 0.5)]
cases = [
    # PyTorch's and dltrain's defaults (WeightDecay 0.01), warmup then decay of the rate.
    case("defaults", 0.01, 0.0, 0.9, 0.999, 1e-8, [1e-3, 2e-3, 3e-3, 2e-3, 1e-3], params),
    # Strong decay, other betas and eps: the decay is most of each step.
    case("strong decay", 0.5, 0.0, 0.8, 0.99, 1e-6, [0.05, 0.1, 0.1, 0.05, 0.02, 0.01], params),
    # L2Regularization set as well: an L2 term in the gradient besides the decoupled decay.
    case("decay and L2", 0.1, 0.01, 0.9, 0.999, 1e-8, [0.01, 0.01, 0.01, 0.01], params),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_adamw.txt")
with open(path, "w") as f:
    f.write("# Written by make_torch_adamw.py (PyTorch " + torch.__version__ + "); do not edit.\n")
    f.write("\n".join(cases) + "\n")
print("wrote", path)

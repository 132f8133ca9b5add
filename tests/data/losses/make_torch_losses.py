#!/usr/bin/python3
"""Writes torch_losses.txt beside this script: fixed inputs, PyTorch's loss and gradient.

tests/backend/test_cpu_losses.cpp reads the file and compares dltrain's CPU loss kernels
(Backend::loss) with it. Run with Debian's PyTorch (python3-torch, 1.13):
    /usr/bin/python3 tests/data/losses/make_torch_losses.py
Inputs are float32 values (written exactly); PyTorch computes in float64.

Each case states PyTorch's reduction; the test applies the factor to MATLAB's definition
(backend.h, Backend::loss_async): R responses or C classes per image,
  mse   MSELoss (mean over all values)     = dltrain's half MSE * 2 / R
  mae   L1Loss                             = dltrain's * 1 / R
  huber HuberLoss(delta)                   = dltrain's * 1 / R
  bce   BCEWithLogitsLoss (of the logits)  = dltrain's * 1 / C
generalized Dice, focal cross-entropy and Tversky have no PyTorch module: they are written below in
torch ops from MATLAB's definitions (factor 1), their gradients by autograd.

File format: blocks of lines "key v1 v2 ...", a block from "case NAME" to "end".
"""
import os

import torch

torch.manual_seed(52)
D = torch.float64


def floats(n, lo, hi):
    return (torch.rand(n, dtype=torch.float32) * (hi - lo) + lo).to(D)


def line(key, values):
    if isinstance(values, torch.Tensor):
        values = values.flatten().tolist()
    return key + " " + " ".join(repr(float(v)) for v in values)


def block(name, fields):
    out = ["case " + name]
    for key, values in fields:
        out.append(line(key, values) if not isinstance(values, str) else key + " " + values)
    out.append("end")
    return "\n".join(out)


def regression(name, module, n, r, pytorch_factor):
    y = floats(n * r, -2, 2).reshape(n, r).requires_grad_()
    t = floats(n * r, -2, 2).reshape(n, r)
    loss = module(y, t)
    loss.backward()
    return block(name, [("kind", name.split()[0]), ("images", [n]), ("width", [r]),
                        ("delta", [getattr(module, "delta", 1.0)]), ("pytorch_factor", [pytorch_factor]),
                        ("outputs", y.detach()), ("targets", t), ("loss", [loss.item()]), ("grad", y.grad)])


def bce(n, c):
    x = floats(n * c, -4, 4).reshape(n, c).requires_grad_()
    t = torch.randint(0, 2, (n, c)).to(D)
    loss = torch.nn.BCEWithLogitsLoss()(x, t)
    loss.backward()
    # BCELoss of the sigmoid's probabilities gives the same value.
    assert abs(torch.nn.BCELoss()(torch.sigmoid(x.detach()), t).item() - loss.item()) < 1e-12
    return block("bce", [("kind", "bce"), ("images", [n]), ("width", [c]), ("pytorch_factor", [1.0 / c]),
                         ("logits", x.detach()), ("targets", t), ("loss", [loss.item()]), ("grad", x.grad)])


def generalized_dice(images, pixels, c, labels):
    """MATLAB's generalized Dice loss per image, mean over the images with a counted pixel."""
    x = floats(images * pixels * c, -3, 3).reshape(images, pixels, c).requires_grad_()
    lab = torch.tensor(labels).reshape(images, pixels)
    mask = (lab >= 0).to(D).unsqueeze(2)                       # undefined pixels count nowhere
    y = torch.softmax(x, dim=2) * mask
    t = torch.nn.functional.one_hot(lab.clamp(min=0), c).to(D) * mask
    count = t.sum(dim=1)                                        # (images, c)
    w = torch.where(count > 0, 1 / count.clamp(min=1) ** 2, torch.zeros_like(count))
    a = (w * (y * t).sum(dim=1)).sum(dim=1)
    b = (w * (y * y + t * t).sum(dim=1)).sum(dim=1)
    keep = b > 0
    loss = (1 - 2 * a[keep] / b[keep]).mean()
    loss.backward()
    return block("dice", [("kind", "dice"), ("images", [images]), ("width", [c]), ("pytorch_factor", [1.0]),
                          ("logits", x.detach()), ("labels", labels), ("loss", [loss.item()]), ("grad", x.grad)])


def tversky(images, pixels, c, alpha, beta, labels):
    """The Tversky loss of MATLAB's example layer per image (sum over the classes of 1 - TI,
    TI = (TP + 1e-8) / (TP + alpha FP + beta FN + 1e-8)), over the counted pixels, mean over the
    images with a counted pixel."""
    x = floats(images * pixels * c, -3, 3).reshape(images, pixels, c).requires_grad_()
    lab = torch.tensor(labels).reshape(images, pixels)
    mask = (lab >= 0).to(D).unsqueeze(2)
    y = torch.softmax(x, dim=2) * mask
    t = torch.nn.functional.one_hot(lab.clamp(min=0), c).to(D) * mask
    tp = (y * t).sum(dim=1)
    fp = (y * (1 - t) * mask).sum(dim=1)
    fn = ((1 - y) * t).sum(dim=1)
    ti = (tp + 1e-8) / (tp + alpha * fp + beta * fn + 1e-8)
    keep = mask.squeeze(2).sum(dim=1) > 0
    loss = (1 - ti).sum(dim=1)[keep].mean()
    loss.backward()
    return block("tversky", [("kind", "tversky"), ("images", [images]), ("width", [c]), ("alpha", [alpha]),
                             ("beta", [beta]), ("pytorch_factor", [1.0]), ("logits", x.detach()), ("labels", labels),
                             ("loss", [loss.item()]), ("grad", x.grad)])


def focal(n, c, gamma, alpha, labels, weights):
    """MATLAB's focalCrossEntropy of softmax probabilities: -alpha (1 - p)^gamma log p of the
    label's p; class weights multiply, the mean divides by their sum over the counted labels."""
    x = floats(n * c, -3, 3).reshape(n, c).requires_grad_()
    lab = torch.tensor(labels)
    keep = lab >= 0
    logp = torch.log_softmax(x, dim=1)[keep].gather(1, lab[keep].unsqueeze(1)).squeeze(1)
    w = torch.tensor(weights, dtype=D)[lab[keep]] if weights else torch.ones_like(logp)
    loss = (w * -alpha * (1 - logp.exp()) ** gamma * logp).sum() / w.sum()
    loss.backward()
    fields = [("kind", "focal"), ("images", [n]), ("width", [c]), ("gamma", [gamma]), ("alpha", [alpha]),
              ("pytorch_factor", [1.0]), ("logits", x.detach()), ("labels", labels)]
    if weights:
        fields.append(("class_weights", weights))
    return block("focal", fields + [("loss", [loss.item()]), ("grad", x.grad)])


cases = [
    regression("mse", torch.nn.MSELoss(), 4, 3, 2.0 / 3),
    regression("mae", torch.nn.L1Loss(), 4, 3, 1.0 / 3),
    regression("huber delta 1", torch.nn.HuberLoss(delta=1.0), 5, 2, 1.0 / 2),
    regression("huber delta 0.5", torch.nn.HuberLoss(delta=0.5), 3, 4, 1.0 / 4),
    bce(3, 5),
    # Image 0: class 2 absent, one pixel undefined; image 1: every class present.
    generalized_dice(2, 6, 3, [0, 1, 1, -1, 0, 1, 2, 0, 1, 2, 2, 0]),
    focal(6, 4, 2.0, 0.25, [3, 0, -1, 1, 2, 3], []),
    focal(5, 3, 0.5, 0.75, [2, 0, 1, 1, 0], [0.5, 2.0, 1.25]),
    # Image 0: class 2 absent, one pixel undefined; image 1 all undefined (counts nowhere).
    tversky(3, 4, 3, 0.3, 0.7, [0, 1, -1, 1, -1, -1, -1, -1, 2, 0, 1, 2]),
    tversky(2, 5, 4, 1.0, 0.25, [3, 0, 1, 1, 0, 2, 2, 3, -1, 0]),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_losses.txt")
with open(path, "w") as f:
    f.write("# Written by make_torch_losses.py (PyTorch " + torch.__version__ + "); do not edit.\n")
    f.write("\n".join(cases) + "\n")
print("wrote", path)

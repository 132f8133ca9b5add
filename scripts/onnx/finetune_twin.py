#!/usr/bin/python3
"""Test helper (cli.onnx_finetune_twin): PyTorch's side of fine-tuning an imported network.
Small MobileNetV2- and EfficientNet-like networks (inverted residuals with batch norm; ReLU6,
or SiLU with squeeze-and-excitation) and a small vision transformer (vit: class token, position
table, one attention block written out), random weights and running statistics, exported in
inference mode with their BatchNormalization nodes kept (TrainingMode.PRESERVE of an eval
model), plus generated PNG class folders. Then the same weights fine-tuned as dltrain's
`base: {Model: NAME.onnx, RemoveLast: 3}` + fullyConnected(K, zero weights and bias,
WeightLearnRateFactor 10, BiasLearnRateFactor 20) + softmax + classification does it: sgdm,
momentum 0.9, L2 1e-4 on weights, normalisations' scale / offset and the ViT's class token and
position table (not biases), one mini-batch of
every image, batch norm with batch statistics. Writes the loss of each step.
Usage: finetune_twin.py export OUTDIR NAME       (NAME.onnx, data/train/cK/*.png)
       finetune_twin.py train OUTDIR NAME STEPS LR   (NAME.losses.txt: one loss per step)"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

SIZE, CLASSES, PER_CLASS = 24, 3, 4


def conv_bn(cin, cout, k=1, stride=1, groups=1, act=None):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, c, squeeze):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.fc2(nn.functional.silu(self.fc1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, c, expand, act, se):
        super().__init__()
        h = c * expand
        self.body = nn.Sequential(conv_bn(c, h, act=act), conv_bn(h, h, 3, groups=h, act=act),
                                  *([SqueezeExcitation(h, max(1, c // 4))] if se else []), conv_bn(h, c))

    def forward(self, x):
        return x + self.body(x)


class VisionTransformer(nn.Module):
    """A small ViT at 24x24: 4x4 patches (36 tokens of 16 channels), a class token, a position
    table, one pre-norm block (a joint qkv Linear split into 2 heads, softmax(Q K^T / sqrt(d)) V
    written out, the output projection; LayerNorm, Linear, GELU, Linear), a last LayerNorm and
    the class token's Linear (head)."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, (SIZE // 4) ** 2 + 1, dim) * 0.5)
        self.norm1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm2, self.mlp = nn.LayerNorm(dim), nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        b, _, c = x.shape
        x = torch.cat([self.cls.expand(b, -1, -1), x], 1) + self.pos
        n, d = x.shape[1], c // self.heads
        q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, -1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, c))
        x = x + self.mlp(self.norm2(x))
        return self.head(self.norm(x)[:, 0])


def build(name):
    if name == "vit":
        net = VisionTransformer()
        with torch.no_grad():  # LayerNorm's scale and offset away from 1 / 0
            for m in net.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0, 0.1)
        return net.eval()
    act, se = {"mobilenet": (nn.ReLU6, False), "efficientnet": (nn.SiLU, True)}[name]
    net = nn.Sequential(conv_bn(3, 8, 3, 2, act=act), InvertedResidual(8, 4, act, se), InvertedResidual(8, 4, act, se),
                        conv_bn(8, 32, act=act), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():  # running statistics and affine parameters away from 0 / 1
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.5)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return net.eval()


def images():
    """CLASSES x PER_CLASS images whose mean colour depends on the class, 0..255 uint8 HWC."""
    rng = np.random.default_rng(3)
    out = []
    for k in range(CLASSES):
        for _ in range(PER_CLASS):
            base = np.array([60 + 70 * k, 200 - 60 * k, 120], np.float64)
            out.append(np.clip(base + rng.normal(0, 40, (SIZE, SIZE, 3)), 0, 255).astype(np.uint8))
    return np.stack(out), np.repeat(np.arange(CLASSES), PER_CLASS)


def export(outdir, name):
    import cv2
    torch.manual_seed(1)
    net = build(name)
    torch.save(net.state_dict(), os.path.join(outdir, name + ".pt"))
    torch.onnx.export(net, torch.rand(1, 3, SIZE, SIZE) * 255, os.path.join(outdir, name + ".onnx"),
                      opset_version=13, training=torch.onnx.TrainingMode.PRESERVE)
    x, y = images()
    for i, (img, k) in enumerate(zip(x, y)):
        folder = os.path.join(outdir, "data", "train", f"c{k + 1}")
        os.makedirs(folder, exist_ok=True)
        cv2.imwrite(os.path.join(folder, f"{i}.png"), img[:, :, ::-1])  # RGB -> OpenCV's BGR


def train(outdir, name, steps, lr):
    torch.manual_seed(1)
    net = build(name)
    net.load_state_dict(torch.load(os.path.join(outdir, name + ".pt")))
    vit = isinstance(net, VisionTransformer)
    head = nn.Linear((net.head if vit else net[-1]).in_features, CLASSES)
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    if vit:
        net.head = head
    else:
        net[-1] = head
    net.train()
    decay, no_decay = [], []
    for m in net.modules():
        if m is head:
            continue
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            decay.append(m.weight)
            if m.bias is not None:
                no_decay.append(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
            decay += [m.weight, m.bias]
    if vit:  # dltrain's class token and position table have L2 factor 1
        decay += [net.cls, net.pos]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4, "lr": lr},
                           {"params": no_decay, "weight_decay": 0.0, "lr": lr},
                           {"params": [head.weight], "weight_decay": 1e-4, "lr": 10 * lr},
                           {"params": [head.bias], "weight_decay": 0.0, "lr": 20 * lr}], lr=lr, momentum=0.9)
    x, y = images()
    xt = torch.from_numpy(x).permute(0, 3, 1, 2).float().contiguous()
    yt = torch.from_numpy(y)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(xt), yt)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    with open(os.path.join(outdir, name + ".losses.txt"), "w") as f:
        f.write("\n".join(f"{v:.7g}" for v in losses) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3])
    else:
        train(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))

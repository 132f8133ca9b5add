#!/usr/bin/python3
"""Test helper: small PyTorch networks with the layers `multiplication` and `layerNormalization`
import, random weights, exported with torch.onnx.export; writes test images (raw float32 NHWC,
0..255) and PyTorch's softmax probabilities (raw float32).
  lnimage     LayerNorm over (C, H, W) with one scale / bias per channel   opset 17, axis -3
  lnchannels  ConvNeXt's LayerNorm2d: permute, LayerNorm(C), permute      opset 17, axis -1
  se          squeeze-and-excitation: AdaptiveAvgPool, 1x1 conv, ReLU,
              1x1 conv, sigmoid, times the feature map                     opset 13, Mul
  segate      the same with a ReLU gate instead of the sigmoid            opset 13, Mul
  lnimage13, lnchannels13   the LayerNorms above at opset 13: ReduceMean, Sub, Pow,
              ReduceMean, Add, Sqrt, Div, Mul, Add (over axes -3..-1, or -1 after a Transpose)
  lnshared13  two LayerNorm2d(8) with their default (equal) scale and offset at opset 13: the
              exporter writes the second's as Identity aliases of the first's
  lnfirst13   timm's channels-first LayerNorm2d: the same written by hand over axis 1 of an
              NCHW image, scale and offset (C, 1, 1)                      opset 13
Usage: mul_norm_models.py OUTDIR NAME...      (writes NAME.{onnx,in.f32,probs.f32})"""
import sys
import numpy as np
import torch
import torch.nn as nn

SIZE = 12


class LayerNorm2d(nn.Module):  # ConvNeXt's: LayerNorm over the channels of each pixel
    def __init__(self, c):
        super().__init__()
        self.ln = nn.LayerNorm(c, eps=1e-6)

    def forward(self, x):
        return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class LayerNormFirst(nn.Module):  # timm's LayerNorm2d for channels-first data
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(c) + 0.5)
        self.bias = nn.Parameter(torch.randn(c) * 0.3)

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + 1e-6)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class SqueezeExcitation(nn.Module):  # torchvision.ops.SqueezeExcitation
    def __init__(self, c, squeeze, gate=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.relu = nn.ReLU()
        self.sigmoid = gate()

    def forward(self, x):
        scale = self.sigmoid(self.fc2(self.relu(self.fc1(self.avgpool(x)))))
        return scale * x


def head(c, k=5):
    return [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, k)]


def build(name):
    if name in ("lnimage13", "lnchannels13"):
        return build(name[:-2])[0], 13
    if name == "lnshared13":
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), LayerNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3),
                             LayerNorm2d(8), *head(8)), 13
    if name == "lnfirst13":
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), LayerNormFirst(8), nn.ReLU(), nn.Conv2d(8, 9, 3),
                             LayerNormFirst(9), *head(9)), 13
    if name == "lnimage":
        ln = nn.LayerNorm([6, SIZE, SIZE])
        with torch.no_grad():  # one scale / bias per channel, as layerNormalization has
            ln.weight.copy_((torch.rand(6, 1, 1) + 0.5).expand(6, SIZE, SIZE))
            ln.bias.copy_((torch.randn(6, 1, 1) * 0.3).expand(6, SIZE, SIZE))
        return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), ln, nn.ReLU(), nn.Conv2d(6, 7, 3), *head(7)), 17
    if name == "lnchannels":
        blocks = [nn.Conv2d(3, 8, 3, padding=1), LayerNorm2d(8), nn.ReLU(), nn.Conv2d(8, 9, 3), LayerNorm2d(9)]
        for m in blocks:
            if isinstance(m, LayerNorm2d):
                with torch.no_grad():
                    m.ln.weight.copy_(torch.rand(m.ln.weight.shape) + 0.5)
                    m.ln.bias.copy_(torch.randn(m.ln.bias.shape) * 0.3)
        return nn.Sequential(*blocks, *head(9)), 17
    if name in ("se", "segate"):
        gate = nn.Sigmoid if name == "se" else nn.ReLU
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), SqueezeExcitation(8, 4, gate),
                             nn.Conv2d(8, 6, 3), SqueezeExcitation(6, 2, gate), *head(6)), 13
    raise SystemExit(f"unknown model {name}")


def main(out, names):
    for name in names:
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        model, opset = build(name)
        model.eval()
        with torch.no_grad():
            x = torch.rand(4, 3, SIZE, SIZE, generator=gen) * 255
            model[0].weight.mul_(1 / 255.0)  # images are 0..255 as dltrain feeds them
            z = model(x)  # moderate class scores (no saturated softmax): scale the last layer
            s = 3.0 / max(float(z.std()), 1e-6)
            model[-1].weight.mul_(s)
            model[-1].bias.mul_(s)
            probs = torch.softmax(model(x), 1)
        torch.onnx.export(model, x, f"{out}/{name}.onnx", input_names=["data"], output_names=["scores"],
                          opset_version=opset, dynamic_axes={"data": {0: "batch"}, "scores": {0: "batch"}})
        x.permute(0, 2, 3, 1).contiguous().numpy().astype(np.float32).tofile(f"{out}/{name}.in.f32")
        probs.numpy().astype(np.float32).tofile(f"{out}/{name}.probs.f32")
        print(f"{name}: opset {opset}, input {tuple(x.shape)}, probabilities {tuple(probs.shape)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

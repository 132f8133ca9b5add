#!/usr/bin/python3
"""Test helper: a small CNN (16x16) through every activation dltrain imports - ReLU6, clamp(min=0),
Hardtanh(0, c), SiLU, Hardswish, GELU, GELU(approximate='tanh'), Hardsigmoid, Tanh, Sigmoid - with
random weights (no downloads), exported with torch.onnx.export at opsets 10 (Clip attributes),
13 (Clip inputs, Hardswish as x * HardSigmoid(x), GELU decomposed) and 14 (HardSwish); and "gates",
the same network with ReLU in place of the three Clip activations (OpenCV 4.6's dnn reads Clip
only in its attribute form, which opset 11+ files cannot use). Writes test images (raw float32
NHWC, 0..255) and PyTorch's softmax probabilities (raw float32).
Usage: torch_activations.py OUTDIR
       (writes acts{10,13,14}.onnx, gates13.onnx, {acts,gates}.in.f32, {acts,gates}.probs.f32)"""
import sys
import numpy as np
import torch
import torch.nn as nn


class ClampMin(nn.Module):  # Clip with a min and no max: relu
    def forward(self, x):
        return torch.clamp(x, min=0)


class Acts(nn.Module):
    def __init__(self, clip, num_classes=10):
        super().__init__()
        c = 8
        self.features = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), nn.ReLU6() if clip else nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.SiLU(),
            nn.Conv2d(c, c, 3, stride=2, padding=1), nn.Hardswish(),
            nn.Conv2d(c, c, 3, padding=1), nn.GELU(),
            nn.Conv2d(c, c, 3, padding=1), nn.GELU(approximate="tanh"),
            nn.Conv2d(c, c, 1), ClampMin() if clip else nn.ReLU(),
            nn.Conv2d(c, c, 1), nn.Hardtanh(0.0, 1.5) if clip else nn.ReLU(),
            nn.Conv2d(c, c, 1), nn.Hardsigmoid(),
            nn.Conv2d(c, c, 1), nn.Tanh(),
            nn.Conv2d(c, c, 1), nn.Sigmoid(),
            nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


def main(out):
    for name, clip, opsets in [("acts", True, (10, 13, 14)), ("gates", False, (13,))]:
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(2)
        model = Acts(clip).eval()
        with torch.no_grad():
            x = torch.rand(4, 3, 16, 16, generator=gen) * 255
            # 0..255 images: the first conv's outputs reach past ReLU6's 6; later convs are
            # scaled so every activation sees its kinks and its curved part.
            model.features[0].weight.mul_(8 / 255.0)
            for m in list(model.features)[2:]:
                if isinstance(m, nn.Conv2d):
                    m.weight.mul_(3.0)
            z = model(x)
            s = 3.0 / max(float(z.std()), 1e-6)
            model.fc.weight.mul_(s)
            model.fc.bias.mul_(s)
            probs = torch.softmax(model(x), 1)
        for opset in opsets:
            torch.onnx.export(model, x, f"{out}/{name}{opset}.onnx", input_names=["data"], output_names=["scores"],
                              opset_version=opset, dynamic_axes={"data": {0: "batch"}, "scores": {0: "batch"}})
        x.permute(0, 2, 3, 1).contiguous().numpy().astype(np.float32).tofile(f"{out}/{name}.in.f32")
        probs.numpy().astype(np.float32).tofile(f"{out}/{name}.probs.f32")
        print(f"{name}: input {tuple(x.shape)}, probabilities {tuple(probs.shape)}, max {float(probs.max()):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])

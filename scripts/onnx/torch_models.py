#!/usr/bin/python3
"""Test helper: builds torchvision-style AlexNet (64x64), ResNet-18 (32x32), a small
up-convolution network (16x16, ConvTranspose2d with output_padding), a network of grouped
and depthwise convolutions (32x32, nn.Conv2d with groups) and a segmentation network (16x16,
scores per pixel: its probabilities per pixel in NHWC order) with random weights (no downloads,
no torchvision), exports them with torch.onnx.export, and writes test images (raw float32
NHWC, 0..255) and PyTorch's softmax probabilities (raw float32).
Usage: torch_models.py OUTDIR   (writes {alexnet,resnet18,upconv,grouped,segfcn}.{onnx,in.f32,probs.f32})"""
import sys
import numpy as np
import torch
import torch.nn as nn


class LrnFn(torch.autograd.Function):
    """torch exports LocalResponseNorm as a decomposition; this exports one ONNX LRN node."""
    @staticmethod
    def forward(ctx, x):
        return nn.functional.local_response_norm(x, 5, alpha=1e-4, beta=0.75, k=2.0)

    @staticmethod
    def symbolic(g, x):
        return g.op("LRN", x, size_i=5, alpha_f=1e-4, beta_f=0.75, bias_f=2.0)


class Lrn(nn.Module):
    def forward(self, x):
        return LrnFn.apply(x)


class AlexNet(nn.Module):  # torchvision.models.AlexNet, with LRN as in the original paper
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            Lrn(),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ELU(),
            nn.AvgPool2d(kernel_size=2, stride=1, padding=1, count_include_pad=True),
        )
        self.classifier = nn.Sequential(
            nn.Dropout(), nn.Linear(256 * 4 * 4, 512), nn.ReLU(inplace=True),
            nn.Dropout(), nn.Linear(512, 256), nn.ReLU(inplace=True), nn.Linear(256, num_classes))

    def forward(self, x):
        x = self.features(x)
        return self.classifier(torch.flatten(x, 1))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + idt)


class ResNet18(nn.Module):  # torchvision.models.resnet18's layout
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.avgpool(self.layers(x))
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


class UpConv(nn.Module):
    """ConvTranspose2d as U-Net and FCNs use it: 3x3 stride 2 with padding 1 and output_padding
    1 (asymmetric: one row and column more at the bottom / right), and 2x2 stride 2."""
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(inplace=True),               # 8x8
            nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),  # 16x16
            nn.ConvTranspose2d(6, 4, 2, stride=2), nn.ReLU())                               # 32x32
        self.classifier = nn.Linear(4 * 32 * 32, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class GroupedNet(nn.Module):
    """nn.Conv2d with groups as MobileNet (depthwise 3x3, depth multiplier 2), ResNeXt (3x3 in 4
    groups) and ShuffleNet (1x1 in 3 groups) use it, with batch norm and stride 2."""
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),     # 16x16
            nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU(),   # depthwise
            nn.Conv2d(16, 32, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, stride=2, padding=1, groups=32), nn.ReLU(inplace=True),          # 8x8, x2
            nn.Conv2d(64, 48, 3, padding=1, groups=4), nn.BatchNorm2d(48), nn.ReLU(inplace=True),
            nn.Conv2d(48, 48, 1, groups=3), nn.ReLU(inplace=True))
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Linear(48, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class SegFcn(nn.Module):
    """A segmentation network as torchvision's FCN heads end: scores per pixel at half size,
    bilinear upsampling (interpolate, align_corners False) back to the input's size, and a skip
    branch of per-pixel scores added (FCN-8s' fusion); the output is (N, 4, H, W) logits."""
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),  # 8x8
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True))
        self.classifier = nn.Conv2d(8, num_classes, 1)
        self.skip = nn.Conv2d(3, num_classes, 1)

    def forward(self, x):
        y = nn.functional.interpolate(self.classifier(self.features(x)), scale_factor=2, mode="bilinear",
                                      align_corners=False)
        return y + self.skip(x)


def randomize_bn(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def main(out):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    for name, model, size in [("alexnet", AlexNet(), 64), ("resnet18", ResNet18(), 32), ("upconv", UpConv(), 16),
                              ("grouped", GroupedNet(), 32), ("segfcn", SegFcn(), 16)]:
        model.eval()
        with torch.no_grad():
            randomize_bn(model, gen)
            x = torch.rand(4, 3, size, size, generator=gen) * 255
            # The images are 0..255 (as dltrain feeds them): scale the first conv instead.
            first = model.conv1 if name == "resnet18" else model.features[0]
            first.weight.mul_(1 / 255.0)
            if name == "segfcn":
                model.skip.weight.mul_(1 / 255.0)
            # Keep the class scores moderate (no saturated softmax): scale the last layer.
            last = {"alexnet": lambda: model.classifier[-1], "resnet18": lambda: model.fc,
                    "upconv": lambda: model.classifier, "grouped": lambda: model.classifier,
                    "segfcn": lambda: model.classifier}[name]()
            z = torch.log(model(x)) if name == "resnet18" else model(x)
            s = 3.0 / max(float(z.std()), 1e-6)
            last.weight.mul_(s)
            last.bias.mul_(s)
            y = model(x)
            probs = y if name == "resnet18" else torch.softmax(y, 1)
            if probs.dim() == 4:  # per pixel: dltrain's (N, H, W, K) order
                probs = probs.permute(0, 2, 3, 1).contiguous()
        torch.onnx.export(model, x, f"{out}/{name}.onnx", input_names=["data"], output_names=["scores"],
                          opset_version=13, dynamic_axes={"data": {0: "batch"}, "scores": {0: "batch"}})
        x.permute(0, 2, 3, 1).contiguous().numpy().astype(np.float32).tofile(f"{out}/{name}.in.f32")
        probs.numpy().astype(np.float32).tofile(f"{out}/{name}.probs.f32")
        print(f"{name}: input {tuple(x.shape)}, probabilities {tuple(probs.shape)}, max {float(probs.max()):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])

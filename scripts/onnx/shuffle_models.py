#!/usr/bin/python3
"""Test helper: small networks with ShuffleNet v2's channel operations, random weights (no
downloads), exported with torch.onnx.export (opset 13), with test images (raw float32 NHWC,
0..255) and PyTorch's softmax probabilities (raw float32):
  channel_ops   torch.split with sizes (Split with a constant `split` input), x[:, a:b] and
                x[:, a:] (Slice, the latter with end INT64_MAX), adaptive_max_pool2d(1) (a
                MaxPool of the whole image), amax over H, W with keepdim (ReduceMax keepdims 1)
  reducemax     amax over H, W without keepdim (ReduceMax keepdims 0, a flat (N, C) output)
  shuffle_block a ShuffleNet v2 unit as torchvision writes it, twice: x.chunk(2, 1) (at opset 13
                two Slices whose ends are computed from Shape(x)), a branch of convolutions (plain
                3x3 here instead of depthwise), cat, channel_shuffle (view / transpose /
                contiguous / view: Reshape - Transpose - Reshape)
  pixel_shuffle a convolution to 16 channels, F.pixel_shuffle(x, 2) (DepthToSpace, mode CRD), a
                convolution on the 2x larger image
Usage: shuffle_models.py OUTDIR [NAME ...]   (writes NAME.{onnx,in.f32,probs.f32})"""
import sys
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def channel_shuffle(x, groups):  # torchvision.models.shufflenetv2.channel_shuffle
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width)


def conv_bn_relu(cin, cout, k, relu=True):
    layers = [nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*(layers + [nn.ReLU()] if relu else layers))


class ChannelOps(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn_relu(3, 16, 3)
        self.branch = conv_bn_relu(8, 8, 3)
        self.fc = nn.Linear(6 + 8 + 3, num_classes)

    def forward(self, x):
        x = self.stem(x)
        a, b = torch.split(x, [8, 8], dim=1)
        y = torch.cat([a, self.branch(b)], 1)
        p, q, r = torch.split(y, [3, 6, 7], dim=1)
        u = torch.cat([r, p], 1)
        m = F.adaptive_max_pool2d(q, 1)
        v = u[:, 2:].amax(dim=(2, 3), keepdim=True)
        w = u[:, 1:4].amax(dim=(2, 3), keepdim=True)
        return self.fc(torch.flatten(torch.cat([m, v, w], 1), 1))


class ReduceMaxFlat(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn_relu(3, 12, 3)
        self.fc = nn.Linear(12, num_classes)

    def forward(self, x):
        return self.fc(self.stem(x).amax(dim=(2, 3)))


class ShuffleUnit(nn.Module):  # torchvision's InvertedResidual, stride 1
    def __init__(self, c):
        super().__init__()
        b = c // 2
        self.branch2 = nn.Sequential(conv_bn_relu(b, b, 1), conv_bn_relu(b, b, 3, relu=False), conv_bn_relu(b, b, 1))

    def forward(self, x):
        x1, x2 = x.chunk(2, dim=1)
        return channel_shuffle(torch.cat((x1, self.branch2(x2)), dim=1), 2)


class ShuffleBlock(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn_relu(3, 16, 3)
        self.units = nn.Sequential(ShuffleUnit(16), ShuffleUnit(16))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_max_pool2d(self.units(self.stem(x)), 1), 1))


class PixelShuffle(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn_relu(3, 16, 3)
        self.conv = conv_bn_relu(4, 8, 3)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        y = self.conv(F.pixel_shuffle(self.stem(x), 2))
        return self.fc(torch.flatten(F.adaptive_max_pool2d(y, 1), 1))


MODELS = {"channel_ops": (ChannelOps, 12), "reducemax": (ReduceMaxFlat, 10), "shuffle_block": (ShuffleBlock, 12),
          "pixel_shuffle": (PixelShuffle, 6)}


def randomize_bn(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def main(out, names):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    for name in names or MODELS:
        cls, size = MODELS[name]
        model = cls().eval()
        with torch.no_grad():
            randomize_bn(model, gen)
            x = torch.rand(4, 3, size, size, generator=gen) * 255
            model.stem[0].weight.mul_(1 / 255.0)  # the images are 0..255, as dltrain feeds them
            s = 3.0 / max(float(model(x).std()), 1e-6)  # moderate class scores: no saturated softmax
            model.fc.weight.mul_(s)
            model.fc.bias.mul_(s)
            probs = torch.softmax(model(x), 1)
        torch.onnx.export(model, x, f"{out}/{name}.onnx", input_names=["data"], output_names=["scores"],
                          opset_version=13)
        x.permute(0, 2, 3, 1).contiguous().numpy().astype(np.float32).tofile(f"{out}/{name}.in.f32")
        probs.numpy().astype(np.float32).tofile(f"{out}/{name}.probs.f32")
        print(f"{name}: input {tuple(x.shape)}, probabilities {tuple(probs.shape)}, max {float(probs.max()):.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

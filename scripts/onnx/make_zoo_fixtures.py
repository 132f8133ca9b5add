#!/usr/bin/env python3
"""Writes tests/data/onnx_zoo: small ONNX files of today's torchvision architectures, shrunk
through torchvision's own constructors (width 0.25, few blocks, tiny stages) at 32x32, with
random weights (seed 0), the ImageNet normalisation of 0..255 pixels and a softmax inside the
graph and the head scaled so the probabilities are neither uniform nor one-hot (as
zoo_coverage.py does). Each architecture is exported by both PyTorch exporters:
  NAME-dynamo.onnx + NAME-dynamo.onnx.data  torch.onnx.export(dynamo=True), default opset, the
                                            weights in the external data file beside it
  NAME-torchscript.onnx                     dynamo=False, opset 17, weights inside
and beside each FIXTURE.onnx: FIXTURE.input.f32 (2 images, raw float32 N x H x W x C, 0..255,
the layout `dltrain export --debug-forward` reads) and FIXTURE.expected.txt (onnxruntime's
class probabilities of those images, one image per line; the segmentation networks' (fcn_seg,
deeplabv3_seg, lraspp_seg: torchvision's FCN, DeepLabV3, LR-ASPP) per pixel, in (H, W, K) order). The transformers are exported with a
batch of one image, as PyTorch users export them (zoo_coverage.one_image: both exporters bake the
batch into the attention's Reshape targets), and onnxruntime runs them image by image. tests/cli/onnx_zoo_fixtures.sh
compares dltrain with them. Needs the virtual environment zoo_coverage.py uses (--venv).
Usage: scripts/onnx/make_zoo_fixtures.py [--venv DIR] [--output tests/data/onnx_zoo] [--only a,b]
"""
import argparse
import inspect
import os
import sys

import zoo_coverage as zc

SIDE = 32
IMAGES = 2
SIDES = {"efficientformer_timm": 56, "visformer_timm": 64, "efficientformerv2_timm": 64, "shvit_timm": 64,
         "efficientvit_timm": 64}  # fixtures whose architecture fixes another input size
MAX_BYTES = 600 * 1024  # per fixture (the .onnx and its .onnx.data together)
SEG_CLASSES = 3  # the segmentation fixtures' classes (their expected files hold 32 x 32 x 3 per image)


def tiny_models():
    """name -> a constructor of the shrunk network (10 classes)."""
    import torch.nn as nn
    from torchvision.models import convnext, densenet, efficientnet, maxvit, mnasnet, mobilenetv2, mobilenetv3, regnet
    from torchvision.models import resnet, shufflenetv2, swin_transformer, vision_transformer
    from torchvision.ops.misc import Conv2dNormActivation

    def mobilenet_v2():
        setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2], [6, 64, 1, 2], [6, 96, 1, 1], [6, 160, 1, 2],
                   [6, 320, 1, 1]]
        m = mobilenetv2.MobileNetV2(num_classes=10, width_mult=0.25, inverted_residual_setting=setting)
        # torchvision fixes the last 1x1 convolution at 1280 channels (660 KB alone): 128 here
        m.features[-1] = Conv2dNormActivation(m.features[-1][0].in_channels, 128, kernel_size=1,
                                              activation_layer=nn.ReLU6)
        m.classifier[-1] = nn.Linear(128, 10)
        return m

    def mobilenet_v3_small():
        setting, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25,
                                                         reduced_tail=True)
        return mobilenetv3.MobileNetV3(setting, last, num_classes=10)

    def efficientnet_b0():
        setting, last = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.2, depth_mult=0.25)
        return efficientnet.EfficientNet(setting, dropout=0.2, last_channel=last, num_classes=10)

    def shufflenet_v2():
        return shufflenetv2.ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10)

    def regnet_y():
        params = regnet.BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
        return regnet.RegNet(params, num_classes=10, stem_width=8)

    def convnext_tiny():
        cfg = convnext.CNBlockConfig
        return convnext.ConvNeXt([cfg(8, 16, 1), cfg(16, 32, 1), cfg(32, None, 1)], num_classes=10)

    def densenet_tiny():
        return densenet.DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8, bn_size=2, num_classes=10)

    def mnasnet_tiny():
        m = mnasnet.MNASNet(0.1, num_classes=10)
        # the last 1x1 convolution is 1280 wide whatever alpha is: 128 here (as for mobilenet_v2)
        m.layers[-3] = nn.Conv2d(m.layers[-3].in_channels, 128, 1, bias=False)
        m.layers[-2] = nn.BatchNorm2d(128)
        m.classifier[-1] = nn.Linear(128, 10)
        return m

    def small_resnet(block, widths, **kw):
        """ResNet's layout (stem, stages of torchvision's blocks, global pooling, fc) at small widths."""
        layers = [nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True),
                  nn.MaxPool2d(3, 2, 1)]
        cin = widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            out = w * block.expansion
            down = None
            if stride != 1 or cin != out:
                down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
            layers.append(block(cin, w, stride, down, **kw))
            cin = out
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10)]
        return nn.Sequential(*layers)

    def resnet_basic():
        return small_resnet(resnet.BasicBlock, [8, 16, 32, 64])

    def resnext_bottleneck():
        return small_resnet(resnet.Bottleneck, [8, 16, 32], groups=4, base_width=16)

    def vit_tiny():
        # torchvision's ViT (class token, position table, pre-norm blocks of nn.MultiheadAttention
        # and a gelu MLP) at 32x32: 8x8 patches, 2 blocks of 2 heads, width 16
        # (torchvision starts the class token, the head and the attention's biases at zero: drawn
        # here so that each takes part in the comparison)
        m = vision_transformer.VisionTransformer(image_size=SIDE, patch_size=8, num_layers=2, num_heads=2,
                                                 hidden_dim=16, mlp_dim=32, num_classes=10)
        zc.draw_zeros(m)
        return m

    def swin_tiny():
        # torchvision's Swin Transformer at 32x32: 8x8 patches of width 16, two stages of two
        # blocks (2 and 4 heads) with 3x3 windows: the first pads 4x4 to 6x6 and shifts by 1 with
        # the mask, patch merging, the second pads 2x2 to 3x3 (no shift: one window)
        m = swin_transformer.SwinTransformer(patch_size=[8, 8], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                                             window_size=[3, 3], num_classes=10)
        zc.draw_zeros(m)
        return m

    def swin_v2_tiny():
        # the same network with Swin V2's blocks (cosine attention with a logit scale, the
        # position bias from its MLP, post-norm) and patch merging (reduction, then norm)
        m = swin_transformer.SwinTransformer(patch_size=[8, 8], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                                             window_size=[3, 3], num_classes=10,
                                             block=swin_transformer.SwinTransformerBlockV2,
                                             downsample_layer=swin_transformer.PatchMergingV2)
        zc.draw_zeros(m)
        return m

    def maxvit_tiny():
        # torchvision's MaxViT at 32x32: a stem of 8 channels (16x16), two blocks (16 and 32
        # channels, heads of 8) of MBConv, window and grid attention with partitions of 4x4
        # (8x8: 2x2 windows, then grid windows of pixels spaced 2 apart; 4x4: one of each)
        m = maxvit.MaxVit(input_size=(SIDE, SIDE), stem_channels=8, partition_size=4, block_channels=[16, 32],
                          block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=10)
        zc.draw_zeros(m)
        return m

    def timm_block():
        # timm's transformer block, written out (timm is not a torchvision model): pre-norm, a
        # joint qkv Linear reshaped to (B, N, 3, H, d), permuted and unbound,
        # F.scaled_dot_product_attention, a gelu MLP
        import torch.nn.functional as F

        class Attention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(dim, dim * 3)
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                b, n, c = x.shape
                q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
                return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))

        class Block(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.norm1, self.attn, self.norm2 = nn.LayerNorm(dim), Attention(dim, heads), nn.LayerNorm(dim)
                self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

            def forward(self, x):
                x = x + self.attn(self.norm1(x))
                return x + self.mlp(self.norm2(x))

        return Block

    def vit_timm():
        # timm's VisionTransformer layout: no class token, the mean over the tokens before the head
        import torch
        Block = timm_block()

        class Vit(nn.Module):
            def __init__(self, dim=16, heads=2):
                super().__init__()
                self.patch_embed = nn.Conv2d(3, dim, 8, 8)
                self.pos_embed = nn.Parameter(torch.randn(1, (SIDE // 8) ** 2, dim) * 0.2)
                self.blocks = nn.Sequential(Block(dim, heads), Block(dim, heads))
                self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, 10)

            def forward(self, x):
                x = self.patch_embed(x).flatten(2).transpose(1, 2) + self.pos_embed
                return self.head(self.norm(self.blocks(x)).mean(1))

        m = Vit()
        zc.draw_zeros(m)
        return m

    def deit_distilled():
        # timm's distilled DeiT layout: a class and a distillation token in front of the
        # patches, one position table over all, and at inference the mean of the class head on
        # token 0 and the distillation head on token 1
        import torch
        Block = timm_block()

        class Deit(nn.Module):
            def __init__(self, dim=16, heads=2):
                super().__init__()
                self.patch_embed = nn.Conv2d(3, dim, 8, 8)
                self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.2)
                self.dist_token = nn.Parameter(torch.randn(1, 1, dim) * 0.2)
                self.pos_embed = nn.Parameter(torch.randn(1, (SIDE // 8) ** 2 + 2, dim) * 0.2)
                self.blocks = nn.Sequential(Block(dim, heads), Block(dim, heads))
                self.norm = nn.LayerNorm(dim)
                self.head, self.head_dist = nn.Linear(dim, 10), nn.Linear(dim, 10)

            def forward(self, x):
                x = self.patch_embed(x).flatten(2).transpose(1, 2)
                b = x.shape[0]
                x = torch.cat((self.cls_token.expand(b, -1, -1), self.dist_token.expand(b, -1, -1), x), dim=1)
                x = self.norm(self.blocks(x + self.pos_embed))
                return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2

        m = Deit()
        zc.draw_zeros(m)
        return m

    def cross_attention():
        # Cross-attention in the two forms PyTorch users write: nn.MultiheadAttention with the
        # queries from 16 tokens of 8x8 patches and the keys and values from 4 tokens of 16x16
        # patches (its joint key/value projection chunked), and PVT v2's spatial-reduction
        # attention written out (a q Linear, a joint kv Linear of the reduced tokens reshaped to
        # (B, M, 2, heads, d), permuted and unbound, F.scaled_dot_product_attention, proj)
        import torch
        import torch.nn.functional as F

        class Reduced(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.q, self.kv, self.proj = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim), nn.Linear(dim, dim)

            def forward(self, x, y):
                b, n, c = x.shape
                d = c // self.heads
                q = self.q(x).reshape(b, n, self.heads, d).permute(0, 2, 1, 3)
                k, v = self.kv(y).reshape(b, -1, 2, self.heads, d).permute(2, 0, 3, 1, 4).unbind(0)
                return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))

        class Cross(nn.Module):
            def __init__(self, dim=16, heads=2):
                super().__init__()
                self.fine, self.coarse = nn.Conv2d(3, dim, 8, 8), nn.Conv2d(3, dim, 16, 16)
                self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)
                self.norm, self.reduced = nn.LayerNorm(dim), Reduced(dim, heads)
                self.head = nn.Linear(dim, 10)

            def forward(self, x):
                t = self.fine(x).flatten(2).transpose(1, 2)
                m = self.coarse(x).flatten(2).transpose(1, 2)
                t = t + self.mha(t, m, m, need_weights=False)[0]
                t = t + self.reduced(self.norm(t), m)
                return self.head(t.mean(1))

        m = Cross()
        zc.draw_zeros(m)
        return m

    def group_norm():
        # GroupNorm (4 and 8 groups) and InstanceNorm2d with affine between convolutions: the
        # normalizations of small-batch training (torchvision has no classifier with them); the
        # scales and offsets drawn around 1 and 0
        import torch

        class GroupNormNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.ReLU(),
                    nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.InstanceNorm2d(32, affine=True), nn.ReLU(),
                    nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.GroupNorm(8, 32), nn.ReLU())
                self.head = nn.Linear(32, 10)

            def forward(self, x):
                return self.head(self.features(x).mean((2, 3)))

        m = GroupNormNet()
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, (nn.GroupNorm, nn.InstanceNorm2d)):
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.uniform_(-0.5, 0.5)
        return m

    def prelu():
        # PReLU with an alpha per channel and with one shared, between convolutions (MATLAB's
        # preluLayer), the alphas drawn on both sides of 0
        import torch

        class PReluNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv2d(3, 16, 3, padding=1), nn.PReLU(16), nn.Conv2d(16, 24, 3, stride=2, padding=1),
                    nn.PReLU(), nn.Conv2d(24, 24, 3, stride=2, padding=1), nn.PReLU(24))
                self.head = nn.Linear(24, 10)

            def forward(self, x):
                return self.head(self.features(x).mean((2, 3)))

        m = PReluNet()
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, nn.PReLU):
                    mod.weight.uniform_(-0.5, 0.8)
        return m

    def flatten_max():
        # MATLAB's flattenLayer and globalMaxPooling1dLayer as PyTorch writes them: a channels-last
        # image flattened (Keras' order: permute to (N, H, W, C), flatten(1)) into a Linear, and
        # patch tokens (a strided Conv, flatten(2).transpose(1, 2)) through a per-token Linear,
        # their maximum over the tokens (amax(1)) and all of them flattened (flatten(1))
        import torch

        class FlattenMax(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 6, 3, stride=4, padding=1)
                self.patch = nn.Conv2d(3, 8, 8, stride=8)
                self.token = nn.Linear(8, 8)
                self.fc_image = nn.Linear(8 * 8 * 6, 10)
                self.fc_max = nn.Linear(8, 10)
                self.fc_tokens = nn.Linear(16 * 8, 10)

            def forward(self, x):
                image = torch.relu(self.conv(x)).permute(0, 2, 3, 1).flatten(1)
                tokens = torch.nn.functional.gelu(self.token(self.patch(x).flatten(2).transpose(1, 2)))
                return self.fc_image(image) + self.fc_max(tokens.amax(1)) + self.fc_tokens(tokens.flatten(1))

        return FlattenMax()

    def timm_net(make):
        # timm's own classes, shrunk (timm is in the zoo venv): LayerScale's gammas (and MetaFormer's
        # layer and residual scales) drawn around 1, where their 1e-5 start would hide how the
        # import treats them
        import torch
        m = make()
        zc.draw_zeros(m)
        with torch.no_grad():
            for name, p in m.named_parameters():
                if name.endswith("gamma") or "layer_scale" in name or "res_scale" in name:
                    p.uniform_(0.5, 1.5)
        return m

    def swin_timm():
        # timm's Swin: the window partition as (windows, wh, ww, C) (TorchScript), Q/K/V unbound by
        # Slices or a Split, the MLP on the image flattened to (1, H*W, C), roll before pad, patch
        # merging as a Reshape and Transpose of 2x2 patches
        from timm.models.swin_transformer import SwinTransformer
        return timm_net(lambda: SwinTransformer(img_size=SIDE, patch_size=2, num_classes=10, embed_dim=16,
                                                depths=(2, 2), num_heads=(1, 2), window_size=4))

    def swin_v2_timm():
        from timm.models.swin_transformer_v2 import SwinTransformerV2
        return timm_net(lambda: SwinTransformerV2(img_size=SIDE, patch_size=2, num_classes=10, embed_dim=8,
                                                  depths=(2, 2), num_heads=(1, 2), window_size=4))

    def deit3():
        # timm's DeiT III: LayerScale (gamma * x) after the attention's and the MLP's projections,
        # the position table added before the class token is prepended
        from timm.models.vision_transformer import VisionTransformer
        return timm_net(lambda: VisionTransformer(img_size=SIDE, patch_size=8, num_classes=10, embed_dim=16, depth=2,
                                                  num_heads=2, init_values=1e-5, no_embed_class=True))

    def mobilevit():
        # timm's MobileViT (ByobNet): a stride-2 stem, an inverted residual block, one MobileViT block
        # (2x2 patches unfolded into 4 sequences of 4x4 tokens of width 16, two transformer layers
        # of 4 heads, the fold back, a 1x1 projection and the fusion with the block's input)
        from timm.models.byobnet import ByobNet, ByoModelCfg
        from timm.models.mobilevit import _inverted_residual_block, _mobilevit_block
        cfg = ByoModelCfg(blocks=(_inverted_residual_block(d=1, c=8, s=2, br=2.0),
                                  _mobilevit_block(d=1, c=16, s=2, transformer_dim=16, transformer_depth=2,
                                                   patch_size=2, br=2.0)),
                          stem_chs=8, stem_type="3x3", stem_pool="", downsample="", act_layer="silu", num_features=32)
        return timm_net(lambda: ByobNet(cfg, num_classes=10))

    def mobilevitv2_timm():
        # timm's MobileViT v2 (ByobNet): a stride-2 stem, an inverted residual block, one MobileViT
        # v2 block (2x2 patches unfolded into (1, 8, 4, 16), two transformer layers of separable
        # self-attention (LinearSelfAttention) with GroupNorm1 and a 1x1-Conv MLP, the fold back)
        from timm.models.byobnet import ByobNet, ByoModelCfg
        from timm.models.mobilevit import _inverted_residual_block, _mobilevitv2_block
        cfg = ByoModelCfg(blocks=(_inverted_residual_block(d=1, c=8, s=2, br=2.0),
                                  *_mobilevitv2_block(d=1, c=16, s=1, transformer_depth=2, patch_size=2)),
                          stem_chs=8, stem_type="3x3", stem_pool="", downsample="", act_layer="silu", num_features=32)
        return timm_net(lambda: ByobNet(cfg, num_classes=10))

    def focalnet_timm():
        # timm's FocalNet: focal modulation instead of attention (a 1x1 projection split into
        # queries, a context and gates; two depthwise levels and a global average, each times its
        # gate (one value per pixel: a product repeated over the channels; the global one an outer
        # product), their sum through a 1x1 convolution times the queries), two stages of 16 and 32
        # channels at 32x32
        from timm.models.focalnet import FocalNet
        return timm_net(lambda: FocalNet(depths=(1, 1), embed_dim=16, focal_levels=(2, 2), focal_windows=(3, 3),
                                         num_classes=10))

    def visformer_timm():
        # timm's Visformer: a convolution stem, a stage of convolutional blocks, then two stages
        # whose attention runs over the whole NCHW image (Q/K/V a 1x1 Conv reshaped to (1, 3,
        # heads, d, H W) and transposed to ViT's layout, the output a 1x1 Conv), BatchNorm as
        # visformer_tiny's norm, grouped 3x3 convolutions in the first stage's MLP
        from timm.models.visformer import Visformer
        return timm_net(lambda: Visformer(img_size=64, init_channels=8, embed_dim=32, depth=(1, 1, 1), num_heads=2, mlp_ratio=2.0,
                                          group=4, attn_stage="011", spatial_conv="100", norm_layer=nn.BatchNorm2d,
                                          embed_norm=nn.BatchNorm2d, num_classes=10))

    def nextvit_timm():
        # timm's NextViT: a stem, a convolution block (grouped 3x3 convolution attention), then two
        # transformer blocks on the 8x8 map: the first's keys and values from its 64 tokens pooled
        # 9 at a time in row order (AvgPool1d across the rows, then BatchNorm1d: 7 tokens), the
        # second's from all of them; separate Q, K and V projections, the attention's output
        # transposed back into the image, joined with a convolution branch along the channels
        from timm.models.nextvit import ConvNormAct, NextConvBlock, NextTransformerBlock

        class NextViTTiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = ConvNormAct(3, 16, kernel_size=3, stride=2)
                self.blocks = nn.Sequential(NextConvBlock(16, 32, stride=2, head_dim=8),
                                            NextTransformerBlock(32, 40, drop_path=0.0, sr_ratio=3, head_dim=8),
                                            NextTransformerBlock(40, 40, drop_path=0.0, sr_ratio=1, head_dim=8))
                self.norm = nn.BatchNorm2d(40)
                self.head = nn.Linear(40, 10)

            def forward(self, x):
                return self.head(self.norm(self.blocks(self.stem(x))).mean((2, 3)))

        return timm_net(NextViTTiny)

    def mobilenetv4_timm():
        # timm's MobileNetV4 hybrid: a fused inverted residual, an extra-depthwise inverted residual,
        # then two multi-query attention blocks on the 4x4 map (one head of keys and values for the
        # two query heads of 6 channels: a multiple of 3, as CoAtNet's Q/K/V by head; the first's
        # keys and values from a stride-2 depthwise convolution: 4 tokens), with layer scale, and
        # the 1x1 convolution head
        from functools import partial
        from timm.models._efficientnet_builder import decode_arch_def
        from timm.models.mobilenetv3 import MobileNetV3
        arch = [["er_r1_k3_s2_e4_c16"], ["uir_r1_a3_k3_s2_e2_c24"],
                ["mqa_r1_k3_h2_s1_v2_d6_c24", "mqa_r1_k3_h2_s1_d6_c24"], ["cn_r1_k1_s1_c48"]]
        return timm_net(lambda: MobileNetV3(block_args=decode_arch_def(arch), num_classes=10, stem_size=8,
                                            fix_stem=True, head_bias=False, head_norm=True, num_features=64,
                                            norm_layer=partial(nn.BatchNorm2d), act_layer=nn.ReLU,
                                            layer_scale_init_value=1e-5))

    def efficientformerv2_timm():
        # timm's EfficientFormer V2 at 64x64: a stem and four stages; attention over the 8x8 map with
        # a stride-2 depthwise convolution before it (4x4 tokens) and bilinear upsampling after, and
        # the last downsampling's attention (queries from a local convolution and a pooling, keys and
        # values from the 4x4 map): Q, K and V 1x1 Convs reshaped into heads (1, heads, d, H*W), a
        # bias gathered per offset, talking heads as 1x1 Convs over the scores, a local depthwise
        # convolution of V added to the output
        # (its attention's heads and widths, fixed by the stages, shrunk to 2 heads of 8 key and 16
        # value channels for the construction)
        import timm.models.efficientformer_v2 as ef2

        def make():
            saved = ef2.Attention2d.__init__, ef2.Attention2dDownsample.__init__
            ef2.Attention2d.__init__ = lambda self, dim, **kw: saved[0](
                self, dim, **dict(kw, key_dim=8, num_heads=2, attn_ratio=2))
            ef2.Attention2dDownsample.__init__ = lambda self, dim, **kw: saved[1](
                self, dim, **dict(kw, key_dim=8, num_heads=2, attn_ratio=2))
            try:
                return ef2.EfficientFormerV2(depths=(1, 1, 1, 1), embed_dims=(8, 16, 24, 32), num_vit=1, mlp_ratios=2,
                                             img_size=64, num_classes=10)
            finally:
                ef2.Attention2d.__init__, ef2.Attention2dDownsample.__init__ = saved

        return timm_net(make)

    def shvit_timm():
        # timm's SHViT at 64x64: a stem to 4x4, three stages whose single-head attention runs on
        # the first channels (a Split): Q, K and V one 1x1 Conv's channels, flattened (1, d, H*W),
        # Q transposed, the output v @ attn^T reshaped into the map and joined with the other
        # channels (a Concat)
        from timm.models.shvit import SHViT
        return timm_net(lambda: SHViT(embed_dim=(16, 24, 32), partial_dim=(8, 8, 8), qk_dim=(4, 4, 4),
                                      depth=(1, 1, 1), types=("s", "s", "s"), num_classes=10))

    def efficientvit_timm():
        # timm's EfficientViT (MIT) at 64x64: a stem, two MBConv stages, two stages of EfficientViT
        # blocks whose context module is ReLU linear attention (LiteMLA: the joint 1x1 projection
        # and its multi-scale aggregation concatenated, 8 heads of 8 channels at 4x4 and 2x2
        # pixels, the queries, keys and values a Reshape, Transpose and Split of the image)
        from timm.models.efficientvit_mit import EfficientVit
        return timm_net(lambda: EfficientVit(widths=(8, 8, 16, 32, 32), depths=(1, 1, 1, 1, 1), head_dim=8,
                                             head_widths=(32, 40), num_classes=10))

    def gcvit_timm():
        # timm's GC ViT at 32x32: a stem to 8x8, two stages of a local window attention block and a
        # global one (4 windows of 4x4, then of 2x2 after a downsampling): the global block's
        # queries are the stage's global query, a window-sized image (its FeatureBlock: an MBConv
        # with squeeze-excitation and a max pooling), copied to every window (Unsqueeze and
        # Expand, or Tile), its keys and values one K/V projection
        from timm.models.gcvit import GlobalContextVit
        return timm_net(lambda: GlobalContextVit(img_size=SIDE, window_size=(4, 2), embed_dim=16, depths=(2, 2),
                                                 num_heads=(2, 4), mlp_ratio=2.0, num_classes=10))

    def nest_timm():
        # timm's NesT at 32x32: 4x4 patches, three levels of blocks (16, 4 and 1 of 2x2 patches),
        # each block's tokens (1, blocks, S, C) with a position table, attention with the heads
        # before the blocks and merged channel by channel, ConvPool between the levels; the dynamo
        # exporter fails on NesT (SKIP_EXPORTERS)
        from timm.models.nest import Nest
        return timm_net(lambda: Nest(img_size=SIDE, patch_size=4, num_levels=3, embed_dims=(16, 32, 64),
                                     num_heads=(2, 2, 4), depths=(1, 1, 1), num_classes=10))

    def maxvit_tf(head_first):
        # timm's MaxViT in TensorFlow's layout (maxvit_*_tf): channels-last window and grid partitions
        # through (windows, wh, ww, C), Q/K/V unbound along axis 2, the relative position bias an
        # Einsum of constant tables; head_first: each head's Q, K and V side by side (as timm's
        # maxvit_*_rw models, whose own bias does not pass the dynamo exporter)
        from timm.models.maxxvit import MaxxVit, MaxxVitCfg, MaxxVitConvCfg, MaxxVitTransformerCfg
        cfg = MaxxVitCfg(embed_dim=(16, 32), depths=(1, 1), block_type=("M", "M"), stem_width=8, stem_bias=True,
                         head_hidden_size=32,
                         conv_cfg=MaxxVitConvCfg(norm_eps=1e-3, act_layer="gelu_tanh", padding="same"),
                         transformer_cfg=MaxxVitTransformerCfg(dim_head=8, norm_eps=1e-5, act_layer="gelu_tanh",
                                                               head_first=head_first, rel_pos_type="bias_tf",
                                                               window_size=(2, 2)))
        return timm_net(lambda: MaxxVit(cfg, img_size=SIDE, num_classes=10))

    def coatnet_timm():
        # timm's CoAtNet (coatnet_*_rw): an MBConv stage, then a transformer stage whose attention
        # runs over the whole NCHW image (Attention2d: Q/K/V and the projection 1x1 Convs, each
        # head's Q, K and V side by side, a relative position bias gathered from its table)
        import dataclasses
        from timm.models.maxxvit import MaxxVit, MaxxVitCfg, _rw_max_cfg
        cfg = MaxxVitCfg(embed_dim=(16, 32), depths=(1, 1), block_type=("C", "T"), stem_width=(8, 16),
                         **_rw_max_cfg(stride_mode="pool", conv_output_bias=True, conv_attn_ratio=0.25))
        cfg = dataclasses.replace(cfg, transformer_cfg=dataclasses.replace(cfg.transformer_cfg, dim_head=8))
        return timm_net(lambda: MaxxVit(cfg, img_size=SIDE, num_classes=10))

    def tinyvit_timm():
        # timm's TinyViT: a convolution stage, then window attention with a LayerNormalization inside
        # it, Q/K/V split head-first before their transposes, the MLP on the pixels of a local
        # convolution as tokens; the last stage's window is the whole image (no partition)
        from timm.models.tiny_vit import TinyVit
        return timm_net(lambda: TinyVit(num_classes=10, embed_dims=(8, 16, 24), depths=(1, 1, 1), num_heads=(1, 2, 2),
                                        window_sizes=(2, 2, 2), drop_path_rate=0.0))

    def swin_v2_cr_timm():
        # timm's Swin V2 "cr" variant: cosine attention with a per-head temperature, its position
        # bias a Gemm-ReLU-Gemm MLP over the log-spaced coordinates (constants, folded), the
        # normalization after the attention and after the MLP
        from timm.models.swin_transformer_v2_cr import SwinTransformerV2Cr
        return timm_net(lambda: SwinTransformerV2Cr(img_size=(SIDE, SIDE), patch_size=4, window_size=2, embed_dim=8,
                                                    depths=(2, 2), num_heads=(1, 2), num_classes=10))

    def fastvit_timm():
        # timm's FastViT: MobileOne stem branches (one a Add of 0), RepMixer (the difference of two
        # depthwise convolutions' outputs), a conditional position encoding, and attention over
        # the image's pixels as tokens, transposed and reshaped back into the image
        from functools import partial
        from timm.models.fastvit import FastVit, RepConditionalPosEnc
        return timm_net(lambda: FastVit(layers=(1, 1), token_mixers=("repmixer", "attention"), embed_dims=(16, 32),
                                        mlp_ratios=(2, 2), downsamples=(False, True), num_classes=10,
                                        pos_embs=(None, partial(RepConditionalPosEnc, spatial_shape=(3, 3)))))

    def efficientformer_timm():
        # timm's EfficientFormer: pooling token mixers (average pooling that leaves the padding out
        # of its divisor, minus its input), then the image flattened to tokens for attention whose
        # keys (32 a head) are narrower than its values (128), each head's Q, K and V side by side,
        # a bias gathered from a table by absolute offsets, the scores scaled after Q K^T; the mean
        # over the tokens into two heads averaged. Its bias is fixed at 7x7: a 56x56 input.
        from timm.models.efficientformer import EfficientFormer
        return timm_net(lambda: EfficientFormer(depths=(1, 2), embed_dims=(8, 16), downsamples=(False, True),
                                                num_vit=1, num_classes=10))

    def pvt_v2_timm():
        # timm's PVT v2: overlapping patch embeddings (strided Convs with padding) into channels-last
        # images flattened to tokens, attention whose keys and values come from the tokens put back
        # into an image and reduced by a strided Conv (spatial reduction 2 in the first stage, none
        # in the second), Q and K/V separate Linears; the MLP's depthwise Conv on the tokens as an
        # image; each stage's tokens reshaped back into an NCHW image
        from timm.models.pvt_v2 import PyramidVisionTransformerV2
        return timm_net(lambda: PyramidVisionTransformerV2(depths=(1, 1), embed_dims=(16, 32), num_heads=(1, 2),
                                                           sr_ratios=(2, 1), mlp_ratios=(2, 2), num_classes=10))

    def pit_timm(distilled):
        # timm's PiT: an overlapping patch Conv (stride below its kernel), a learnable position table
        # of its feature map (an Add of a (1, C, H, W) constant), the class token in front of the
        # map's pixels, and between the stages the tokens after the class token put back into the
        # map (Slice, Transpose, Reshape), pooled by a strided depthwise Conv while the class token
        # goes through a Linear, then the two joined again (a Concat of computed tokens). Distilled:
        # two tokens in front, and the mean of the two heads
        from timm.models.pit import PoolingVisionTransformer
        return timm_net(lambda: PoolingVisionTransformer(img_size=SIDE, patch_size=8, stride=4, base_dims=(8, 8),
                                                         depth=(1, 1), heads=(1, 2), mlp_ratio=2, num_classes=10,
                                                         distilled=distilled))

    def crossvit_timm():
        # timm's CrossViT: two branches (8x8 patches of the 32x32 image, width 8; 7x7 patches of it
        # resized bicubic to 28x28, width 16), each with a class token and a position table, one
        # block each, then the cross-attention fusion: each class token projected to the other
        # branch's width, joined with that branch's patch tokens, attending over them as the only
        # query, projected back and joined with its own patch tokens; the mean of the two heads
        # (torch.stack and mean)
        from timm.models.crossvit import CrossVit
        return timm_net(lambda: CrossVit(img_size=SIDE, img_scale=(1.0, 0.875), patch_size=(8, 7), embed_dim=(8, 16),
                                         depth=((1, 1, 0),), num_heads=(1, 2), mlp_ratio=(2., 2., 2.),
                                         num_classes=10))

    def twins_timm(exporter):
        # timm's Twins-SVT: stages of 8x8 (patch 4) and 4x4 (patch 2) tokens of widths 16 and 32;
        # in each stage a locally-grouped attention (zero padding to whole windows, the tokens'
        # channels-last image split into 2x2 windows, the joint Q/K/V Linear on the 6-D windows)
        # then a global sub-sampled one (keys and values from the image reduced by a strided Conv,
        # as PVT v2's), the PEG (a depthwise 3x3 Conv on the tokens' image plus the tokens) after
        # the first block; the mean over the tokens. The dynamo exporter fails on the locally-grouped
        # attention's 5-D scaled_dot_product_attention: its fixture has it written out (fused_attn off)
        from timm.models.twins import LocallyGroupedAttn, Twins
        m = timm_net(lambda: Twins(img_size=SIDE, patch_size=4, embed_dims=(16, 32), num_heads=(1, 2),
                                   mlp_ratios=(2, 2), depths=(2, 2), sr_ratios=(2, 1), wss=(2, 2),
                                   num_classes=10))
        for mod in m.modules():
            if isinstance(mod, LocallyGroupedAttn):
                mod.fused_attn = exporter != "dynamo"
        return m

    def twins_pcpvt_timm():
        # timm's Twins-PCPVT: global sub-sampled attention only (spatial reduction 2, then none),
        # the PEG after each stage's first block (in the second, the first reader of the patch
        # embedding's tokens as an image)
        from timm.models.twins import Twins
        return timm_net(lambda: Twins(img_size=SIDE, patch_size=4, embed_dims=(16, 32), num_heads=(1, 2),
                                      mlp_ratios=(2, 2), depths=(1, 1), sr_ratios=(2, 1), num_classes=10))

    def davit_timm():
        # timm's DaViT at 32x32: a 7x7 stride-4 stem of 16 channels with a channels-first
        # LayerNorm, two stages of 16 and 32 channels (the second after a LayerNorm and a 2x2
        # stride-2 Conv), each a spatial block (the convolutional position encoding, window
        # attention of 2x2 windows on the flattened image, the MLP) and a channel block (attention
        # across the channels of 2 and 4 heads: softmax(k^T v) applied to q)
        from timm.models.davit import DaVit
        return timm_net(lambda: DaVit(depths=(1, 1), embed_dims=(16, 32), num_heads=(2, 4), window_size=2,
                                      mlp_ratio=2, num_classes=10))

    def xcit_timm():
        # timm's XCiT at 32x32: the convolutional patch embedding (three 3x3 stride-2 Convs with
        # BatchNorm and GELU: 8x8 patches of width 16), the Fourier position encoding (computed
        # from constants: Range, Sin, Cos, Tile, a 1x1 Conv), two blocks of cross-covariance
        # attention (2 heads: Q and K L2-normalized over the tokens, each head's temperature, drawn
        # away from 1), the local patch interaction (depthwise 3x3 Convs on the tokens' image,
        # GELU, BatchNorm) and the MLP, each with its LayerScale; then a class token and one class
        # attention block (CaiT's: the class token's query against every token), the class token
        # read out
        import torch
        from timm.models.xcit import Xcit
        m = timm_net(lambda: Xcit(img_size=SIDE, patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2,
                                  cls_attn_layers=1, num_classes=10))
        with torch.no_grad():
            for name, p in m.named_parameters():
                if name.endswith(("temperature", "gamma1", "gamma2", "gamma3")):
                    p.uniform_(0.5, 1.5)
        return m

    def edgenext_timm():
        # timm's EdgeNeXt at 32x32: a 4x4 stride-4 stem of 16 channels, a convolution encoder
        # stage (a 3x3 depthwise Conv, channels-last LayerNorm, MLP, LayerScale), then a stage of 32
        # channels with a convolution encoder and a split depthwise transpose attention block (its
        # channels split in two, the second half's Res2Net-style depthwise Conv, the Fourier
        # position encoding (CumSum of ones: folded), cross-covariance attention of 2 heads with
        # its temperature, LayerScales), and two downsampling stages without blocks
        import torch
        from timm.models.edgenext import EdgeNeXt
        m = timm_net(lambda: EdgeNeXt(dims=(16, 32, 32, 32), depths=(1, 2, 0, 0), global_block_counts=(0, 1, 0, 0),
                                      kernel_sizes=(3, 3, 3, 3), heads=(2, 2, 2, 2), d2_scales=(2, 2, 2, 2),
                                      use_pos_emb=(False, True, False, False), num_classes=10))
        with torch.no_grad():
            for name, p in m.named_parameters():
                if name.endswith(("temperature", "gamma_xca")):
                    p.uniform_(0.5, 1.5)
        return m

    def levit_timm():
        # timm's LeViT (distilled) at 32x32: the 8x stem (three 3x3 stride-2 Convs with BatchNorm and
        # Hardswish), tokens of 16 channels; each Linear followed by BatchNorm1d over the flattened
        # tokens; attention of 2 heads (keys of 8, values of 16 per head) with its learnable bias
        # per head and pair of tokens (gathered from a table by offset), Hardswish before the output
        # projection; a stage of 32 channels after the attention downsample (queries from every
        # other token of every other row, keys and values from all); the mean over the tokens, two
        # heads (BatchNorm1d and Linear) averaged. BatchNorm's running statistics drawn away from
        # 0 and 1
        import torch
        from timm.models.levit import LevitDistilled
        m = timm_net(lambda: LevitDistilled(img_size=SIDE, num_classes=10, embed_dim=(16, 32), key_dim=8,
                                            depth=(1, 1), num_heads=(2, 2), attn_ratio=2, mlp_ratio=2,
                                            stem_type="s8"))
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                    mod.running_mean.uniform_(-0.2, 0.2)
                    mod.running_var.uniform_(0.5, 1.5)
        return m

    def cait_timm():
        # timm's CaiT at 32x32: 8x8 patches of width 16, two blocks of talking-heads attention (4
        # heads: the scores mixed across the heads by a Linear before the softmax and another after
        # it), each with its LayerScale, then a class token and two class attention blocks (the
        # class token's query against the class token and every patch), the class token read out
        from timm.models.cait import Cait
        return timm_net(lambda: Cait(img_size=SIDE, patch_size=8, embed_dim=16, depth=2, num_heads=4, mlp_ratio=2,
                                     depth_token_only=2, num_classes=10))

    def convit_timm():
        # timm's ConViT at 32x32: 8x8 patches of width 16 (4 heads), two blocks of gated positional
        # self-attention (each head's softmax of Q K^T and the softmax of its positional scores, a
        # Linear of the constant offsets between patches, mixed by the sigmoid of its gate, drawn
        # away from 0, then divided by the rows' sums), then the class token and a block of plain
        # attention; the class token read out
        import torch
        from timm.models.convit import ConVit
        m = timm_net(lambda: ConVit(img_size=SIDE, patch_size=8, embed_dim=4, depth=3, num_heads=4, mlp_ratio=2,
                                    local_up_to_layer=2, num_classes=10))
        with torch.no_grad():
            for name, p in m.named_parameters():
                if name.endswith("gating_param"):
                    p.uniform_(-1.5, 1.5)
        return m

    def eva_timm(half):
        # timm's EVA-02 at 32x32: 8x8 patches of width 16 (2 heads of 8), a class token and a
        # position table, two blocks whose queries and keys get a rotary position embedding (the
        # angles of the 4x4 patch grid; the class token left as it is; pairs of channels
        # interleaved, or with half the halves of each head: rotate_half) and a SwiGLU MLP (one
        # Linear split in two, the swish of one half times the other, a LayerNorm, a Linear); the
        # class token read out
        from timm.models.eva import Eva
        return timm_net(lambda: Eva(img_size=SIDE, patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2,
                                    swiglu_mlp=True, scale_mlp=True, use_rot_pos_emb=True, ref_feat_shape=(4, 4),
                                    rope_rotate_half=half, num_classes=10))

    def eva_mixed_timm():
        # timm's RoPE-Mixed ViT (vit_*_rope_mixed_*: an Eva with attn_type 'rope') at 32x32: 8x8
        # patches of width 16 (2 heads of 8), a class token, no position table, two blocks whose
        # queries and keys get a rotary embedding with a table per head and block (from learnable
        # frequencies of the grid's x and y: the mixed tables), LayerScale, a GELU MLP; the class
        # token read out
        from timm.models.eva import Eva
        return timm_net(lambda: Eva(img_size=SIDE, patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2,
                                    attn_type="rope", qkv_bias=True, init_values=1e-5, class_token=True,
                                    global_pool="token", use_abs_pos_emb=False, use_rot_pos_emb=True,
                                    rope_grid_indexing="xy", rope_temperature=10.0, rope_type="mixed",
                                    num_classes=10))

    def beit_timm():
        # timm's BEiT: a relative position bias per head and pair of tokens (gathered from its
        # table, the class token's rows and columns its own entries) added to the scaled scores,
        # Q and V biases without a K bias, LayerScale, the mean over the patch tokens (the class
        # token left out). Its attention written out (fused_attn off): the dynamo exporter fails on
        # scaled_dot_product_attention with a mask here (a view of the transposed heads)
        from timm.models.beit import Beit

        def make():
            m = Beit(img_size=SIDE, patch_size=8, num_classes=10, embed_dim=16, depth=2, num_heads=2,
                     use_rel_pos_bias=True, use_abs_pos_emb=False, init_values=0.1)
            for b in m.blocks:
                b.attn.fused_attn = False
            return m
        return timm_net(make)

    def metaformer(**kw):
        from timm.models.metaformer import MetaFormer
        return timm_net(lambda: MetaFormer(num_classes=10, **kw))

    def poolformer_timm():
        # timm's PoolFormer (v1): GroupNorm of one group (torch.onnx's InstanceNormalization of the
        # image as one row), pooling that leaves the padding out minus its input, 1x1-conv MLPs
        import torch.nn as nn
        from timm.models.metaformer import GroupNorm1
        return metaformer(depths=(1, 1), dims=(8, 16), downsample_norm=None, mlp_act=nn.GELU, mlp_bias=True,
                          norm_layers=GroupNorm1, layer_scale_init_values=1e-5, res_scale_init_values=None,
                          use_mlp_head=False)

    def caformer_timm():
        # timm's CAFormer: a SepConv stage (channels-last MLPs with StarReLU: scale * relu(x) ** 2 +
        # bias), then attention over the image flattened to tokens, residual scales, an MLP head
        from timm.models.metaformer import Attention, LayerNorm2dNoBias, LayerNormNoBias, SepConv
        return metaformer(depths=(1, 1), dims=(16, 32), token_mixers=(SepConv, Attention),
                          norm_layers=(LayerNorm2dNoBias, LayerNormNoBias), res_scale_init_values=(None, 1.0))

    def mambaout_timm():
        # timm's MambaOut: channels-last blocks whose 1x1 projection splits along the channels into
        # a gate, an identity part and a part through a depthwise convolution (NCHW), the last two
        # concatenated along the channels and gated; a LayerScale on the block's output
        from timm.models.mambaout import MambaOut
        return timm_net(lambda: MambaOut(num_classes=10, depths=(1, 1), dims=(8, 16), kernel_size=3, ls_init_value=1e-5))

    def interpolate():
        # torch.nn.functional.interpolate as segmentation decoders and GhostNet use it: bilinear
        # x2 (half_pixel), nearest to a size (asymmetric, floor), nearest x0.5, nearest up to a
        # size, bilinear down to a size (nearest-exact does not export as Resize)
        import torch.nn.functional as F

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
                self.c2 = nn.Conv2d(8, 8, 3, padding=1)
                self.c3 = nn.Conv2d(8, 8, 1)
                self.fc = nn.Linear(8 * 5 * 4, 10)

            def forward(self, x):
                a = F.relu(self.c1(x))
                b = F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=False)
                c = F.relu(self.c2(b))
                d = F.interpolate(c, size=(13, 11), mode="nearest")
                e = F.interpolate(d, scale_factor=0.5, mode="nearest")
                f = F.interpolate(self.c3(e), size=(9, 9), mode="nearest")
                g = F.interpolate(f, size=(5, 4), mode="bilinear", align_corners=False)
                return self.fc(g.flatten(1))

        return Net()

    def dilated_resnet():
        # ResNet-50's layout at small widths with torchvision's Bottleneck blocks, layer3 and
        # layer4 dilated instead of strided (replace_stride_with_dilation=[False, True, True],
        # what torchvision's FCN and DeepLabV3 backbones use)
        class Backbone(nn.Module):
            def __init__(self, widths=(4, 8, 8, 16)):
                super().__init__()
                self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
                self.bn1 = nn.BatchNorm2d(widths[0])
                self.relu = nn.ReLU(inplace=True)
                self.maxpool = nn.MaxPool2d(3, 2, 1)
                cin, dilation = widths[0], 1
                for i, (w, dilate) in enumerate(zip(widths, (False, False, True, True))):
                    stride = 1 if i == 0 else 2
                    previous = dilation
                    if dilate:
                        dilation, stride = dilation * stride, 1
                    out = w * resnet.Bottleneck.expansion
                    down = None
                    if stride != 1 or cin != out:
                        down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
                    blocks = [resnet.Bottleneck(cin, w, stride, down, dilation=previous),
                              resnet.Bottleneck(out, w, dilation=dilation)]
                    setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
                    cin = out
                self.out_channels = cin

        return Backbone()

    def tiny_mobilenet_v3():
        # MobileNetV3's blocks (squeeze-and-excitation, hardswish) in few stages: strided to an
        # output stride of 16, the last block dilated, as torchvision's segmentation models
        # build MobileNetV3-Large (dilated=True)
        def conf(*a):
            return mobilenetv3.InvertedResidualConfig(*a, width_mult=1.0)

        setting = [conf(8, 3, 8, 8, False, "RE", 1, 1), conf(8, 3, 24, 8, False, "RE", 2, 1),
                   conf(8, 5, 24, 16, True, "RE", 2, 1), conf(16, 3, 48, 16, False, "HS", 1, 1),
                   conf(16, 3, 48, 16, True, "HS", 2, 1), conf(16, 5, 48, 16, True, "HS", 1, 2)]
        return mobilenetv3.MobileNetV3(setting, 64)

    def fcn_seg():
        from torchvision.models._utils import IntermediateLayerGetter
        from torchvision.models.segmentation import fcn
        backbone = dilated_resnet()
        head = fcn.FCNHead(backbone.out_channels, SEG_CLASSES)
        return zc.segmentation_out(fcn.FCN(IntermediateLayerGetter(backbone, {"layer4": "out"}), head))

    def deeplabv3_seg():
        # torchvision's DeepLabV3 on MobileNetV3 with DeepLabHead's layout (ASPP at rates 12, 24,
        # 36 with its image pooling branch, 3x3 convolution, 1x1 classifier) 8 wide instead of 256
        from torchvision.models.segmentation import deeplabv3
        net = deeplabv3._deeplabv3_mobilenetv3(tiny_mobilenet_v3(), SEG_CLASSES, False)
        inplanes = net.classifier[0].convs[0][0].in_channels
        net.classifier = nn.Sequential(deeplabv3.ASPP(inplanes, [12, 24, 36], out_channels=8),
                                       nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                       nn.Conv2d(8, SEG_CLASSES, 1))
        return zc.segmentation_out(net)

    def lraspp_seg():
        from torchvision.models.segmentation import lraspp
        return zc.segmentation_out(lraspp._lraspp_mobilenetv3(tiny_mobilenet_v3(), SEG_CLASSES))

    def segformer_seg():
        # Hugging Face's SegFormer (transformers' SegformerForSemanticSegmentation): PVT v2's
        # encoder in its own layout (the patch Conv flattened to tokens before its LayerNorm, the
        # scores divided by sqrt(d) after Q K^T), then the all-MLP decoder (each stage's tokens
        # projected, resized to the first stage's size, concatenated in reverse, fused by a 1x1
        # Conv with BatchNorm and ReLU, classified by a 1x1 Conv) and the logits resized to the
        # input as its semantic segmentation post-processing does
        import torch
        m = zc.segformer_model(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                               hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                               mlp_ratios=[2, 2], decoder_hidden_size=16, num_labels=SEG_CLASSES)
        zc.draw_zeros(m)
        with torch.no_grad():  # running statistics of the decoder's BatchNorm away from 0 and 1
            bn = m.net.decode_head.batch_norm
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
        return m

    return {"mobilenet_v2": mobilenet_v2, "mobilenet_v3_small": mobilenet_v3_small,
            "efficientnet_b0": efficientnet_b0, "shufflenet_v2": shufflenet_v2, "regnet_y": regnet_y,
            "convnext": convnext_tiny, "densenet": densenet_tiny, "mnasnet": mnasnet_tiny,
            "resnet_basic": resnet_basic, "resnext_bottleneck": resnext_bottleneck, "vit": vit_tiny,
            "vit_timm": vit_timm, "deit_distilled": deit_distilled, "cross_attention": cross_attention,
            "group_norm": group_norm, "prelu": prelu, "flatten_max": flatten_max, "swin": swin_tiny,
            "swin_v2": swin_v2_tiny,
            "maxvit": maxvit_tiny, "swin_timm": swin_timm, "swin_v2_timm": swin_v2_timm, "deit3": deit3,
            "mobilevit": mobilevit, "mobilevitv2_timm": mobilevitv2_timm, "focalnet_timm": focalnet_timm,
            "visformer_timm": visformer_timm, "nextvit_timm": nextvit_timm,
            "mobilenetv4_timm": mobilenetv4_timm, "efficientformerv2_timm": efficientformerv2_timm,
            "shvit_timm": shvit_timm, "efficientvit_timm": efficientvit_timm, "gcvit_timm": gcvit_timm, "nest_timm": nest_timm,
            "maxvit_timm": lambda: maxvit_tf(False), "maxvit_timm_rw": lambda: maxvit_tf(True),
            "coatnet_timm": coatnet_timm, "tinyvit_timm": tinyvit_timm, "pvt_v2_timm": pvt_v2_timm, "beit_timm": beit_timm,
            "pit_timm": lambda: pit_timm(False), "pit_distilled_timm": lambda: pit_timm(True),
            "crossvit_timm": crossvit_timm, "twins_timm": twins_timm, "twins_pcpvt_timm": twins_pcpvt_timm,
            "davit_timm": davit_timm, "xcit_timm": xcit_timm, "edgenext_timm": edgenext_timm,
            "levit_timm": levit_timm, "cait_timm": cait_timm,
            "convit_timm": convit_timm, "eva_timm": lambda: eva_timm(False), "eva_half_timm": lambda: eva_timm(True),
            "eva_mixed_timm": eva_mixed_timm,
            "swin_v2_cr_timm": swin_v2_cr_timm, "fastvit_timm": fastvit_timm,
            "efficientformer_timm": efficientformer_timm, "poolformer_timm": poolformer_timm,
            "caformer_timm": caformer_timm, "mambaout_timm": mambaout_timm,
            "interpolate": interpolate, "fcn_seg": fcn_seg, "deeplabv3_seg": deeplabv3_seg, "lraspp_seg": lraspp_seg,
            "segformer_seg": segformer_seg}


def strip_metadata(path):
    """Drops the dynamo exporter's per-node metadata (source locations and module names, which
    import ignores; most of a small model's bytes), keeping the graph and its external data."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    if not any(n.metadata_props for n in m.graph.node):
        return
    for n in m.graph.node:
        del n.metadata_props[:]
    onnx.save(m, path)


def write_fixture(name, make, exporter, out_dir):
    import numpy as np
    import torch
    torch.manual_seed(0)
    # a constructor taking the exporter writes the form that exporter can export
    net = (make(exporter) if "exporter" in inspect.signature(make).parameters else make()).eval()
    pixels = zc.make_images(IMAGES, SIDES.get(name, SIDE), seed=1)
    x = torch.from_numpy(pixels.astype(np.float32)).permute(0, 3, 1, 2).contiguous()
    mean = torch.tensor(zc.MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(zc.STD).view(1, 3, 1, 1) * 255
    zc.scale_head(net, (x - mean) / std)
    model = zc.wrap(net)
    fixture = f"{name}-{exporter}"
    path = os.path.join(out_dir, fixture + ".onnx")
    for stale in (path, path + ".data"):
        if os.path.exists(stale):
            os.remove(stale)
    probs = zc.export_probs(model, x, path, exporter, 1, zc.one_image(name))
    if exporter == "dynamo":
        strip_metadata(path)
    with torch.no_grad():
        torch_probs = model(x).numpy()
    agree = float(np.abs(probs - torch_probs).max())
    if agree > 1e-5:
        sys.exit(f"make_zoo_fixtures: {fixture}: onnxruntime differs from PyTorch by {agree:.1e}")
    pixels.astype(np.float32).tofile(os.path.join(out_dir, fixture + ".input.f32"))
    if probs.ndim == 4:  # a segmentation network's (N, K, H, W): dltrain's pixels are (N, H, W, K)
        probs = probs.transpose(0, 2, 3, 1).reshape(probs.shape[0], -1)
    with open(os.path.join(out_dir, fixture + ".expected.txt"), "w") as f:
        for row in probs:
            f.write(" ".join(f"{v:.9g}" for v in row) + "\n")
    size = sum(os.path.getsize(p) for p in (path, path + ".data") if os.path.exists(p))
    if size > MAX_BYTES:
        sys.exit(f"make_zoo_fixtures: {fixture} is {size} bytes (over {MAX_BYTES}): shrink it")
    if exporter == "dynamo" and not os.path.exists(path + ".data"):
        sys.exit(f"make_zoo_fixtures: {fixture}: the dynamo exporter wrote no external data file")
    print(f"{fixture}: {size / 1024:.0f} KiB, max probability {probs.max():.3f}, onnxruntime vs PyTorch {agree:.1e}")


# Fixtures an exporter writes wrongly: TorchScript's trace of the RoPE-Mixed model bakes a
# (1, 3, 3) Expand of the class token that onnxruntime refuses (torch 2.15); the dynamo exporter
# fails on NesT (torch 2.15).
SKIP_EXPORTERS = {"eva_mixed_timm": ("torchscript",), "nest_timm": ("dynamo",)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--venv", default=os.path.join(zc.ROOT, "build", "zoo-venv"))
    p.add_argument("--output", default=os.path.join(zc.ROOT, "tests", "data", "onnx_zoo"))
    p.add_argument("--only", default="", help="comma-separated names (default: all)")
    args = p.parse_args()
    zc.ensure_venv(args, __file__)
    import torch
    torch.set_num_threads(2)
    models = tiny_models()
    names = [n for n in args.only.split(",") if n] or list(models)
    os.makedirs(args.output, exist_ok=True)
    for n in names:
        if n not in models:
            sys.exit(f"make_zoo_fixtures: unknown fixture '{n}' ({', '.join(models)})")
        for e in zc.EXPORTERS:
            if e in SKIP_EXPORTERS.get(n, ()):
                continue
            write_fixture(n, models[n], e, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

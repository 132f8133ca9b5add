#!/usr/bin/python3
# Writes torch_vit.txt: a tiny vision transformer (one pre-norm encoder block, MATLAB's layer
# list: patchEmbedding, embeddingConcatenation, positionEmbedding, layerNormalization,
# selfAttention, addition, fullyConnected per token, gelu, indexing1d, fullyConnected,
# softmax) computed by PyTorch with nn.MultiheadAttention: the input, the learnables in
# dltrain's layout and network order, the softmax output, the mean cross-entropy of labels
# and every learnable's gradient. tests/net/test_vit_vs_torch.cpp builds tiny_vit.yaml beside
# this script, loads the learnables and compares. Run with Debian's python3 (torch 1.13):
#   /usr/bin/python3 tests/data/vit/make_torch_vit.py tests/data/vit/torch_vit.txt
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(5)
torch.set_default_dtype(torch.float64)

N, H, W, C = 2, 6, 4, 3          # images (N, H, W, C) channels-last as dltrain reads them
P, K, HEADS, MLP, CLASSES = 2, 8, 2, 12, 3
GH, GW = H // P, W // P
S = GH * GW + 1                  # patches and the class token
MAXPOS = S + 2                   # a table longer than the sequence


# Values rounded to float32 (what dltrain holds); the arithmetic is in double.
def rnd(*shape, scale=0.5):
    return ((torch.rand(*shape) * 2 - 1) * scale).float().double()


# Learnables in dltrain's layout (network order, each layer's params() order).
params = []


def learnable(layer, name, t):
    t = t.clone().requires_grad_(True)
    params.append((layer, name, t))
    return t


patch_w = learnable("patch", "Weights", rnd(K, P, P, C))   # (K, ph, pw, C)
patch_b = learnable("patch", "Bias", rnd(K))
cls = learnable("cls", "Weights", rnd(K))
pos = learnable("pos", "Weights", rnd(MAXPOS, K))
ln1_s = learnable("ln1", "Scale", (1 + rnd(K, scale=0.2)).float().double())
ln1_o = learnable("ln1", "Offset", rnd(K, scale=0.2))
wq = learnable("attn", "QueryWeights", rnd(K, K))
wk = learnable("attn", "KeyWeights", rnd(K, K))
wv = learnable("attn", "ValueWeights", rnd(K, K))
wo = learnable("attn", "OutputWeights", rnd(K, K))
bq = learnable("attn", "QueryBias", rnd(K, scale=0.1))
bk = learnable("attn", "KeyBias", rnd(K, scale=0.1))
bv = learnable("attn", "ValueBias", rnd(K, scale=0.1))
bo = learnable("attn", "OutputBias", rnd(K, scale=0.1))
ln2_s = learnable("ln2", "Scale", (1 + rnd(K, scale=0.2)).float().double())
ln2_o = learnable("ln2", "Offset", rnd(K, scale=0.2))
fc1_w = learnable("fc1", "Weights", rnd(MLP, K))
fc1_b = learnable("fc1", "Bias", rnd(MLP, scale=0.1))
fc2_w = learnable("fc2", "Weights", rnd(K, MLP))
fc2_b = learnable("fc2", "Bias", rnd(K, scale=0.1))
fc_w = learnable("fc", "Weights", rnd(CLASSES, K))
fc_b = learnable("fc", "Bias", rnd(CLASSES, scale=0.1))

x_nhwc = rnd(N, H, W, C, scale=1.0)
labels = torch.tensor([2, 0])

# patchEmbedding: the convolution, then the patches numbered down the columns (MATLAB's
# column-major SpatialFlattenMode: token w * GH + h).
grid = F.conv2d(x_nhwc.permute(0, 3, 1, 2), patch_w.permute(0, 3, 1, 2), patch_b, stride=P)  # (N, K, GH, GW)
tokens = grid.permute(0, 3, 2, 1).reshape(N, GW * GH, K)
seq = torch.cat([cls.expand(N, 1, K), tokens], dim=1)
seq = seq + pos[:S]
h = F.layer_norm(seq, (K,), ln1_s, ln1_o, 1e-5)
mha = torch.nn.MultiheadAttention(K, HEADS, batch_first=True)
with torch.no_grad():
    mha.in_proj_weight.copy_(torch.cat([wq, wk, wv]))
    mha.in_proj_bias.copy_(torch.cat([bq, bk, bv]))
    mha.out_proj.weight.copy_(wo)
    mha.out_proj.bias.copy_(bo)
attn_ref, _ = mha(h, h, h, need_weights=False)
# The same through the learnables themselves (so that their gradients exist), checked
# against nn.MultiheadAttention.
q = (h @ wq.T + bq).view(N, S, HEADS, K // HEADS).transpose(1, 2)
k = (h @ wk.T + bk).view(N, S, HEADS, K // HEADS).transpose(1, 2)
v = (h @ wv.T + bv).view(N, S, HEADS, K // HEADS).transpose(1, 2)
a = torch.softmax(q @ k.transpose(-1, -2) / (K // HEADS) ** 0.5, dim=-1) @ v
attn = a.transpose(1, 2).reshape(N, S, K) @ wo.T + bo
assert torch.allclose(attn, attn_ref, atol=1e-12), "own attention differs from nn.MultiheadAttention"
add1 = attn + seq
m = F.layer_norm(add1, (K,), ln2_s, ln2_o, 1e-5)
m = F.gelu(m @ fc1_w.T + fc1_b) @ fc2_w.T + fc2_b
add2 = m + add1
logits = add2[:, 0] @ fc_w.T + fc_b
probs = torch.softmax(logits, dim=1)
loss = F.cross_entropy(logits, labels)
loss.backward()


def row(name, t):
    return name + " " + " ".join(repr(float(v)) for v in t.detach().reshape(-1)) + "\n"


with open(sys.argv[1], "w") as f:
    f.write(f"# written by make_torch_vit.py (torch {torch.__version__}); do not edit\n")
    f.write(row("x", x_nhwc))
    f.write("labels " + " ".join(str(int(v)) for v in labels) + "\n")
    f.write(row("probs", probs))
    f.write(f"loss {float(loss)!r}\n")
    for layer, name, t in params:
        f.write(row(f"param {layer} {name}", t))
        f.write(row(f"grad {layer} {name}", t.grad))

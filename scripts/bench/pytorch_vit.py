#!/usr/bin/env python3
"""PyTorch twin of a dltrain vision-transformer run (scripts/bench/vit_vs_pytorch.py): trains the
network of a dltrain YAML config (configs/cifar10-vit.yaml) on image folders the way
`dltrain train` does, in PyTorch eager (F.scaled_dot_product_attention), and prints one JSON line
with the test accuracy, the seconds per epoch and the peak memory.

  /work/wt/bench/build/zoo-venv/bin/python scripts/bench/pytorch_vit.py configs/cifar10-vit.yaml \\
      --data data/cifar10 --seed 0 [--epochs N] [--threads 2]

DATA/train/<class>/ and DATA/test/<class>/ (sorted class folders, sorted files, as dltrain's
imageDatastore), decoded once with PIL into uint8. The network is built from the config's
`layers:` (one module per layer, inputs by name), token sequences as (N, S, C) tensors:
  - imageInput: zscore (the training set's per-channel mean and population standard deviation
    over every pixel, accumulated in double, as dltrain's compute_stats; a constant channel is
    only centred), zerocenter (the mean image) or none;
  - patchEmbedding: Conv2d(kernel = stride = PatchSize, no padding), weights glorot =
    uniform(+-sqrt(6 / (fan_in + fan_out))) with fan_in = PatchSize^2 x C_in and fan_out =
    PatchSize^2 x OutputSize (convolution2d's), bias 0; tokens in SpatialFlattenMode order:
    column-major (the default: token w x H' + h, `x.transpose(2, 3).flatten(2)`) or row-major
    (PyTorch's `flatten(2)`);
  - embeddingConcatenation: a learnable token (C) prepended, narrow-normal (N(0, 0.01));
  - positionEmbedding: a learnable (MaxPosition, OutputSize) table, narrow-normal, its first S
    rows (the embedding alone, as MATLAB's layer; an addition adds it to the tokens);
  - layerNormalization: each token over its C channels, biased variance, Epsilon (1e-5), Scale 1,
    Offset 0;
  - selfAttention: Q, K, V projections C_in -> NumKeyChannels (NumValueChannels for V) and the
    output projection -> OutputSize (default C_in), each glorot with fan_in = its input channels
    and fan_out = its output channels (fullyConnected's), biases 0; NumHeads heads as contiguous
    channel blocks, scale 1 / sqrt(key channels per head), F.scaled_dot_product_attention;
  - fullyConnected: on the last dimension (OperationDimension channel: per token; a single
    token is the vector), glorot, bias 0; gelu (erf, or Approximation: tanh), addition,
    dropout, indexing1d (Index first / last: that token); softmax and classification: the model
    returns the logits, the loss is F.cross_entropy (mean over the images).
Training (the config's `training:`): adamw = torch.optim.AdamW(betas = (GradientDecayFactor,
SquaredGradientDecayFactor), eps = Epsilon) with one parameter group per (LearnRateFactor,
L2Factor): weight_decay = WeightDecay x the learnable's L2Factor, as dltrain's optimizer
(weights 1 and biases 0 by default, layer normalization's Scale and Offset 1, the class token
and position table 1; every <Name>L2Factor / <Name>LearnRateFactor option of the layer read).
torch's AdamW decays w by (1 - lr wd) and then takes adam's step with the same bias corrections:
docs/config.md's AdamW. The rate of every iteration is InitialLearnRate x the
LearnRateSchedule's factor at that global iteration, computed as lib/optim/schedule.cpp does
(a list runs in sequence; warmup, cosine, piecewise, polynomial, exponential; FrequencyUnit
iteration or epoch). MiniBatchSize with the last partial mini-batch of each epoch dropped,
Shuffle every-epoch / once / never (a torch.randperm per epoch from the seed), MaxEpochs.
Augmentation (data.Augmentation), as lib/data/transform.cpp: RandXReflection flips each image with
probability 1/2, RandX/YTranslation draw a shift uniformly (not rounded) in [min, max]; the image
is flipped, then shifted by bilinear sampling with a zero (black) fill outside the image, on the
0..255 pixels, rounded to uint8 as dltrain's loader does, before the normalization.

Reported in eval mode after the last epoch: test_accuracy (percent over DATA/test);
seconds_per_epoch: the training loop of each epoch (augmentation, forward, backward and step;
no evaluation, no decoding), their mean; peak_rss_mib: the process's peak resident memory
(getrusage). Runs in pytorch_cpu.py's "best" CPU set-up: torch.set_num_threads(--threads, 2),
tcmalloc preloaded when installed. Progress goes to stderr, the JSON line to stdout.
The venv at /work/wt/bench/build/zoo-venv has PyTorch 2.15 but no PyYAML: the script then reads
the system's (Debian's python3-yaml, same Python 3.11), appended after torch is imported.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_cpu  # noqa: E402  (ensure_environment: tcmalloc and thread variables)
from pytorch_train import list_folder, load_images  # noqa: E402  (imageDatastore order, PIL decoding)

HANDLED = {"Solver", "InitialLearnRate", "LearnRateSchedule", "MaxEpochs", "MiniBatchSize", "GradientDecayFactor",
           "SquaredGradientDecayFactor", "Epsilon", "WeightDecay", "Shuffle", "Seed", "L2Regularization"}
IGNORED = {"ValidationFrequency", "Verbose", "VerboseFrequency", "VerboseLayout", "ExecutionEnvironment", "Plots",
           "Threads", "CheckpointPath", "CheckpointFrequency", "CheckpointFrequencyUnit", "DispatchInBackground",
           "OutputNetwork", "ValidationPatience", "Metrics", "ObjectiveMetricName", "ValidationData",
           "PlotIntervalSeconds", "TensorBoard"}
AUGMENTATION = {"RandXReflection", "RandXTranslation", "RandYTranslation"}

# Each layer type's learnables: their <Name>L2Factor / <Name>LearnRateFactor option name and
# default L2 factor, as the dltrain layers declare them (make_param: Weight 1, Bias 0, Scale and
# Offset 1; selfAttention's Weight and Bias options apply to all four projections).
LEARNABLES = {
    "patchEmbedding": {"weight": ("Weight", 1.0), "bias": ("Bias", 0.0)},
    "fullyConnected": {"weight": ("Weight", 1.0), "bias": ("Bias", 0.0)},
    "layerNormalization": {"weight": ("Scale", 1.0), "bias": ("Offset", 1.0)},
    "embeddingConcatenation": {"token": ("Weight", 1.0)},
    "positionEmbedding": {"table": ("Weight", 1.0)},
    "selfAttention": {f"{p}.{w}": ("Weight", 1.0) if w == "weight" else ("Bias", 0.0)
                      for p in ("q", "k", "v", "o") for w in ("weight", "bias")},
}
# The initializers the twin draws (module doc); another value in the config is refused.
INITIALIZERS = {"WeightsInitializer": {"patchEmbedding": "glorot", "fullyConnected": "glorot", "selfAttention": "glorot",
                                       "embeddingConcatenation": "narrow-normal", "positionEmbedding": "narrow-normal"},
                "BiasInitializer": {"patchEmbedding": "zeros", "fullyConnected": "zeros", "selfAttention": "zeros"}}


def log(msg):
    sys.stderr.write(f"pytorch_vit: {msg}\n")
    sys.stderr.flush()


def read_config(path):
    try:
        import yaml
    except ImportError:  # the zoo venv: Debian's PyYAML, after torch and numpy are imported from the venv
        sys.path.append("/usr/lib/python3/dist-packages")
        import yaml
    with open(path) as f:
        return yaml.safe_load(f)


# ---------------------------------------------------------------- learning-rate schedule
SCHEDULE_DEFAULTS = {
    "piecewise": {"DropFactor": 0.1, "Period": 10, "FrequencyUnit": "epoch"},
    "warmup": {"InitialFactor": 0.1, "FinalFactor": 1.0, "NumSteps": 5, "FrequencyUnit": "iteration"},
    "cosine": {"InitialFactor": 1.0, "FinalFactor": 0.0, "Period": None, "PeriodGrowthFactor": 1.0,
               "FrequencyUnit": "epoch"},
    "polynomial": {"InitialFactor": 1.0, "FinalFactor": 0.0, "Power": 1.0, "NumSteps": None, "FrequencyUnit": "epoch"},
    "exponential": {"DropFactor": 0.1, "Period": 1, "InitialFactor": 1.0, "FrequencyUnit": "epoch"},
}


def schedule_items(topts):
    """training.LearnRateSchedule as a list of {kind, options}: a name, an object or a list."""
    s = topts.get("LearnRateSchedule", "none")
    items = s if isinstance(s, list) else [s]
    out = []
    for it in items:
        if isinstance(it, str):
            name, opts = it.strip().lower(), {}
            if name == "none":
                continue
        else:
            opts = dict(it)
            name = str(opts.pop("type"))
            name = name[:-len("LearnRate")] if name.endswith("LearnRate") else name
            name = name.lower()
        if name not in SCHEDULE_DEFAULTS:
            raise SystemExit(f"pytorch_vit: LearnRateSchedule '{name}' not supported here")
        o = dict(SCHEDULE_DEFAULTS[name])
        if name == "piecewise" and isinstance(it, str):  # the name reads trainingOptions' LearnRateDrop*
            o["DropFactor"] = float(topts.get("LearnRateDropFactor", 0.1))
            o["Period"] = int(topts.get("LearnRateDropPeriod", 10))
        o.update(opts)
        o["FrequencyUnit"] = str(o["FrequencyUnit"]).lower()
        out.append((name, o))
    return out


def step_factor(name, o, k, training):
    """One schedule's factor after k of its steps (lib/optim/schedules/*.cpp)."""
    if name == "piecewise":
        return float(o["DropFactor"]) ** (k // int(o["Period"]))
    if name == "warmup":
        n = int(o["NumSteps"] or training)
        g0, gn = float(o["InitialFactor"]), float(o["FinalFactor"])
        return gn if k >= n else g0 + (gn - g0) * k / n
    if name == "cosine":
        p, g = int(o["Period"] or training), float(o["PeriodGrowthFactor"])
        g0, gn = float(o["InitialFactor"]), float(o["FinalFactor"])
        if g == 1:
            t, cycle = k % p, p
        elif math.isinf(g):
            if k >= p:
                return gn
            t, cycle = k, p
        else:
            def start(n):
                return p * (g ** n - 1) / (g - 1)
            n = math.floor(math.log(k / p * (g - 1) + 1) / math.log(g))
            while n > 0 and start(n) > k:
                n -= 1
            while start(n + 1) <= k:
                n += 1
            t, cycle = k - start(n), p * g ** n
        return gn + (g0 - gn) * (1 + math.cos(math.pi * t / cycle)) / 2
    if name == "polynomial":
        n = int(o["NumSteps"] or training)
        g0, gn = float(o["InitialFactor"]), float(o["FinalFactor"])
        return gn + (g0 - gn) * (1 - min(k, n) / n) ** float(o["Power"])
    return float(o["InitialFactor"]) * float(o["DropFactor"]) ** (k / int(o["Period"]))  # exponential


def num_steps(name, o, training):
    if name in ("warmup", "polynomial"):
        return int(o["NumSteps"] or training)
    return -1  # does not end


def rate_factor(items, iteration, ipe, max_epochs):
    """lib/optim/schedule.cpp's Sequence::factor at a global 0-based iteration."""
    if not items:
        return 1.0
    ipe = max(ipe, 1)
    start = 0
    for i, (name, o) in enumerate(items):
        per_epoch = o["FrequencyUnit"] == "epoch"
        training = max_epochs if per_epoch else max_epochs * ipe
        k = iteration // ipe - start // ipe if per_epoch else iteration - start
        n = num_steps(name, o, training)
        if n < 0 or k < n or i + 1 == len(items):
            return step_factor(name, o, k, training)
        start = (start // ipe + n) * ipe if per_epoch else start + n


# ---------------------------------------------------------------- network
def build(cfg, torch, config_path):
    import torch.nn as nn
    import torch.nn.functional as F

    def glorot(t, fan_in, fan_out):
        a = math.sqrt(6.0 / (fan_in + fan_out))
        with torch.no_grad():
            t.uniform_(-a, a)

    def linear(c_in, c_out):
        m = nn.Linear(c_in, c_out)
        glorot(m.weight, c_in, c_out)
        with torch.no_grad():
            m.bias.zero_()
        return m

    class Input(nn.Module):
        def __init__(self, c, h, w, norm):
            super().__init__()
            self.norm = norm
            self.register_buffer("mean", torch.zeros(1, c, h, w))
            self.register_buffer("std", torch.ones(1, c, 1, 1))

        def forward(self, x):
            if self.norm == "zerocenter":
                return x - self.mean
            if self.norm == "zscore":
                return (x - self.mean) / self.std
            return x

    class PatchEmbedding(nn.Module):
        def __init__(self, c_in, p, d, column_major):
            super().__init__()
            self.proj = nn.Conv2d(c_in, d, p, stride=p)
            glorot(self.proj.weight, p * p * c_in, p * p * d)
            with torch.no_grad():
                self.proj.bias.zero_()
            self.column_major = column_major

        def forward(self, x):  # (N, C, H, W) -> (N, S, D)
            y = self.proj(x)
            if self.column_major:
                y = y.transpose(2, 3)
            return y.flatten(2).transpose(1, 2)

    class ClassToken(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.token = nn.Parameter(torch.empty(c).normal_(0.0, 0.01))

        def forward(self, x):
            return torch.cat([self.token.expand(x.shape[0], 1, -1), x], dim=1)

    class PositionEmbedding(nn.Module):
        def __init__(self, max_pos, c):
            super().__init__()
            self.table = nn.Parameter(torch.empty(max_pos, c).normal_(0.0, 0.01))

        def forward(self, x):  # the table alone (MATLAB's positionEmbeddingLayer); an addition adds it
            return self.table[:x.shape[1]].unsqueeze(0).expand(x.shape[0], -1, -1)

    class SelfAttention(nn.Module):
        def __init__(self, c_in, heads, key_ch, value_ch, out_ch):
            super().__init__()
            self.heads = heads
            self.q, self.k = linear(c_in, key_ch), linear(c_in, key_ch)
            self.v, self.o = linear(c_in, value_ch), linear(value_ch, out_ch)
            self.scale = 1.0 / math.sqrt(key_ch // heads)

        def forward(self, x):
            n, s, _ = x.shape

            def split(t):
                return t.view(n, s, self.heads, -1).transpose(1, 2)
            a = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), scale=self.scale)
            return self.o(a.transpose(1, 2).reshape(n, s, -1))

    class Index1d(nn.Module):
        def __init__(self, first):
            super().__init__()
            self.first = first

        def forward(self, x):
            return x[:, :1] if self.first else x[:, -1:]

    class Gelu(nn.Module):
        def __init__(self, approximate):
            super().__init__()
            self.approximate = approximate

        def forward(self, x):
            return F.gelu(x, approximate=self.approximate)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.mods = nn.ModuleDict()
            self.order = []  # (name, type, input names)

        def forward(self, x):
            values = {}
            last = None
            for name, kind, inputs in self.order:
                if kind == "imageInput":
                    out = self.mods[name](x)
                elif kind == "addition":
                    out = values[inputs[0]]
                    for i in inputs[1:]:
                        out = out + values[i]
                else:
                    out = self.mods[name](values[inputs[0]])
                values[name] = out
                last = out
            return last.reshape(last.shape[0], -1)

    net = Net()
    shapes = {}  # name -> per-image shape: (C, H, W) for images, (S, C) for tokens, (C,) for vectors
    prev = None
    specs = {}
    num_classes = None
    for i, spec in enumerate(cfg["layers"]):
        spec = dict(spec)
        kind = spec.pop("type")
        name = spec.pop("Name", f"{kind}_{i + 1}")
        inputs = spec.pop("Inputs", [prev] if prev is not None else [])
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        specs[name] = (kind, spec)
        if kind in ("softmax", "classification"):
            if kind == "classification":
                num_classes = shapes[prev][-1]
            continue
        shape = shapes[inputs[0]] if inputs else None
        mod = None
        where = f"{config_path}: layer '{name}' ({kind})"
        for key, by_kind in INITIALIZERS.items():
            if key in spec and str(spec[key]).lower() != by_kind.get(kind):
                raise SystemExit(f"pytorch_vit: {where}: {key} {spec[key]} is not supported here")
        if kind == "imageInput":
            h, w, c = [int(v) for v in spec["InputSize"]]
            mod = Input(c, h, w, str(spec.get("Normalization", "zerocenter")).lower())
            out = (c, h, w)
        elif kind == "patchEmbedding":
            c, h, w = shape
            p = int(spec["PatchSize"][0] if isinstance(spec["PatchSize"], list) else spec["PatchSize"])
            d = int(spec["OutputSize"])
            mode = str(spec.get("SpatialFlattenMode", "column-major")).lower()
            if mode not in ("column-major", "row-major"):
                raise SystemExit(f"pytorch_vit: {where}: SpatialFlattenMode '{mode}' not supported")
            mod = PatchEmbedding(c, p, d, mode == "column-major")
            out = ((h // p) * (w // p), d)
        elif kind == "embeddingConcatenation":
            mod = ClassToken(shape[-1])
            out = (shape[0] + 1, shape[1])
        elif kind == "positionEmbedding":
            mp, k = int(spec["MaxPosition"]), int(spec["OutputSize"])
            if shape[0] > mp:
                raise SystemExit(f"pytorch_vit: {where}: MaxPosition {mp} is below the input's {shape[0]} tokens")
            mod = PositionEmbedding(mp, k)
            out = (shape[0], k)
        elif kind == "layerNormalization":
            mod = nn.LayerNorm(shape[-1], eps=float(spec.get("Epsilon", 1e-5)))
            out = shape
        elif kind == "selfAttention":
            heads, kc = int(spec["NumHeads"]), int(spec["NumKeyChannels"])
            vc = int(spec.get("NumValueChannels", kc))
            oc = int(spec.get("OutputSize", shape[-1]))
            if kc % heads or vc % heads:
                raise SystemExit(f"pytorch_vit: {where}: NumKeyChannels / NumValueChannels must divide by NumHeads")
            if float(spec.get("DropoutProbability", 0)) != 0 or str(spec.get("AttentionMask", "none")) != "none":
                raise SystemExit(f"pytorch_vit: {where}: DropoutProbability and AttentionMask are not supported here")
            mod = SelfAttention(shape[-1], heads, kc, vc, oc)
            out = (shape[0], oc)
        elif kind == "fullyConnected":
            k = int(spec["OutputSize"])
            if len(shape) == 2 and shape[0] > 1 and str(spec.get("OperationDimension", "")).lower() != "channel":
                raise SystemExit(f"pytorch_vit: {where}: on {shape[0]} tokens give OperationDimension: channel")
            mod = linear(shape[-1], k)
            out = shape[:-1] + (k,)
        elif kind == "gelu":
            approx = str(spec.get("Approximation", "none")).lower()
            mod = Gelu(approx)
            out = shape
        elif kind == "dropout":
            mod = nn.Dropout(float(spec.get("Probability", 0.5)))
            out = shape
        elif kind == "indexing1d":
            first = str(spec.get("Index", "first")).lower() == "first"
            mod = Index1d(first)
            out = (1, shape[-1])
        elif kind == "addition":
            if any(shapes[n] != shape for n in inputs):
                raise SystemExit(f"pytorch_vit: {where}: inputs of different shapes "
                                 f"{[shapes[n] for n in inputs]}")
            out = shape
        else:
            raise SystemExit(f"pytorch_vit: {where}: type not supported here")
        if mod is not None:
            net.mods[name] = mod
        net.order.append((name, kind, inputs))
        shapes[name] = out
        prev = name
    if num_classes is None:
        raise SystemExit(f"pytorch_vit: {config_path}: no classification layer")
    return net, shapes[net.order[0][0]], int(num_classes), specs


def param_groups(net, specs, lr0, wd):
    """One AdamW group per (LearnRateFactor, L2Factor), weight_decay = WeightDecay x L2Factor."""
    groups = {}
    for name, mod in net.mods.items():
        kind, spec = specs[name]
        table = LEARNABLES.get(kind, {})
        for pname, param in mod.named_parameters():
            key = pname[len("proj."):] if pname.startswith("proj.") else pname
            if key not in table:
                raise SystemExit(f"pytorch_vit: layer '{name}' ({kind}): learnable '{pname}' has no L2Factor rule")
            opt, l2_default = table[key]
            l2f = float(spec.get(opt + "L2Factor", l2_default))
            lrf = float(spec.get(opt + "LearnRateFactor", 1.0))
            groups.setdefault((lrf, l2f), []).append(param)
    return [{"params": ps, "lr": lr0 * lrf, "lr_factor": lrf, "weight_decay": wd * l2f}
            for (lrf, l2f), ps in groups.items()]


def augmenter(aug, torch):
    """data.Augmentation as dltrain's loader applies it (module doc). Returns fn(uint8 NHWC,
    generator) -> uint8 NHWC, or None when there is nothing to do."""
    import torch.nn.functional as F
    for key in aug:
        if key not in AUGMENTATION:
            raise SystemExit(f"pytorch_vit: data.Augmentation.{key} is not supported here")
    flip = bool(aug.get("RandXReflection", False))
    tx = [float(v) for v in aug.get("RandXTranslation", [0, 0])]
    ty = [float(v) for v in aug.get("RandYTranslation", [0, 0])]
    if not flip and tx == [0, 0] and ty == [0, 0]:
        return None

    def apply(x, gen):
        n, h, w, _ = x.shape
        u = torch.rand(n, 3, generator=gen, dtype=torch.float64)
        flips = (u[:, 0] < 0.5) if flip else torch.zeros(n, dtype=torch.bool)
        dx = tx[0] + (tx[1] - tx[0]) * u[:, 1] if tx[0] != tx[1] else torch.full((n,), tx[0], dtype=torch.float64)
        dy = ty[0] + (ty[1] - ty[0]) * u[:, 2] if ty[0] != ty[1] else torch.full((n,), ty[0], dtype=torch.float64)
        # Output pixel (xo, yo) reads the source at x = cx + sx (xo - cx - dx), y = yo - dy
        # (transform.cpp's for_each_source without rotation and scale), bilinear, zero outside.
        cx = (w - 1) / 2.0
        xo = torch.arange(w, dtype=torch.float64)
        yo = torch.arange(h, dtype=torch.float64)
        sx = torch.where(flips, -1.0, 1.0).to(torch.float64)
        xs = cx + sx[:, None] * (xo[None, :] - cx - dx[:, None])  # (n, w)
        ys = yo[None, :] - dy[:, None]  # (n, h)
        gx = (2 * xs / (w - 1) - 1)[:, None, :].expand(n, h, w)  # align_corners=True pixel centres
        gy = (2 * ys / (h - 1) - 1)[:, :, None].expand(n, h, w)
        grid = torch.stack([gx, gy], dim=3).float()
        img = x.permute(0, 3, 1, 2).float()
        out = F.grid_sample(img, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
        return torch.floor(out + 0.5).clamp_(0, 255).to(torch.uint8).permute(0, 2, 3, 1)
    return apply


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="dltrain YAML config (configs/cifar10-vit.yaml)")
    ap.add_argument("--data", required=True, help="folder with train/<class>/ and test/<class>/")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=0, help="0: the config's MaxEpochs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-batch", type=int, default=0, help="test mini-batch (0: MiniBatchSize, as dltrain validates)")
    ap.add_argument("--iterations-csv", help="write each iteration's learning rate and mini-batch loss here "
                                             "(CSV: iteration,base_learning_rate,minibatch_loss; iteration from 1)")
    ap.add_argument("--max-iterations", type=int, default=0,
                    help="stop each epoch after this many iterations (timing only; the accuracy is then meaningless)")
    args = ap.parse_args()

    pytorch_cpu.ensure_environment("best", args.threads)  # re-executes with tcmalloc etc.

    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t_start = time.perf_counter()
    cfg = read_config(args.config)
    topts = cfg.get("training", {}) or {}
    for key in topts:
        if key not in HANDLED and key not in IGNORED:
            log(f"warning: training.{key} is not implemented here; the comparison ignores it")
    solver = str(topts.get("Solver", "sgdm")).lower()
    if solver != "adamw":
        raise SystemExit(f"pytorch_vit: Solver '{solver}' not supported (adamw only)")
    if float(topts.get("L2Regularization", 0)) != 0:
        raise SystemExit("pytorch_vit: L2Regularization with adamw is not supported here (0: the decay is WeightDecay)")
    shuffle = str(topts.get("Shuffle", "once")).lower()
    epochs = args.epochs or int(topts.get("MaxEpochs", 30))
    lr0 = float(topts.get("InitialLearnRate", 0.001))
    wd = float(topts.get("WeightDecay", 0.01))
    batch = int(topts.get("MiniBatchSize", 128))
    args.eval_batch = args.eval_batch or batch
    betas = (float(topts.get("GradientDecayFactor", 0.9)), float(topts.get("SquaredGradientDecayFactor", 0.999)))
    eps = float(topts.get("Epsilon", 1e-8))
    sched = schedule_items(topts)
    aug = augmenter((cfg.get("data") or {}).get("Augmentation") or {}, torch)

    net, (c, h, w), num_classes, specs = build(cfg, torch, args.config)

    t0 = time.perf_counter()
    train_paths, train_labels, classes = list_folder(os.path.join(args.data, "train"))
    test_paths, test_labels, _ = list_folder(os.path.join(args.data, "test"), classes)
    if len(classes) != num_classes:
        raise SystemExit(f"pytorch_vit: the network has {num_classes} outputs, the data {len(classes)} classes")
    train_x = torch.from_numpy(load_images(train_paths, (h, w, c), np))  # N H W C uint8
    test_x = torch.from_numpy(load_images(test_paths, (h, w, c), np))
    train_y = torch.tensor(train_labels, dtype=torch.long)
    test_y = torch.tensor(test_labels, dtype=torch.long)
    load_seconds = time.perf_counter() - t0
    log(f"loaded {len(train_paths)} training and {len(test_paths)} test images in {load_seconds:.1f} s")

    inp = net.mods[net.order[0][0]]
    with torch.no_grad():  # dltrain's compute_stats: double accumulation, no augmentation
        if inp.norm == "zerocenter":
            inp.mean.copy_(train_x.to(torch.float64).mean(dim=0).permute(2, 0, 1).unsqueeze(0).float())
        elif inp.norm == "zscore":
            ch = train_x.to(torch.float64).reshape(-1, c)
            m = ch.mean(0)
            sd = (ch.pow(2).mean(0) - m * m).clamp_min(0).sqrt()
            sd = torch.where(sd > 0, sd, torch.ones_like(sd))
            inp.mean.copy_(m.reshape(1, c, 1, 1).expand_as(inp.mean).float())
            inp.std.copy_(sd.reshape(1, c, 1, 1).float())
        elif inp.norm != "none":
            raise SystemExit(f"pytorch_vit: Normalization '{inp.norm}' not supported here")

    groups = param_groups(net, specs, lr0, wd)
    opt = torch.optim.AdamW(groups, lr=lr0, betas=betas, eps=eps, weight_decay=wd)
    learnables = sum(p.numel() for p in net.parameters())

    n = train_x.shape[0]
    bsz = min(batch, n)
    per_epoch = n // bsz  # the last partial mini-batch dropped, as dltrain's training loader
    gen = torch.Generator().manual_seed(args.seed)
    aug_gen = torch.Generator().manual_seed(args.seed + 1000003)
    log(f"{learnables} learnables; {epochs} epochs x {per_epoch} iterations of {bsz}; adamw lr {lr0}, weight decay "
        f"{wd} (groups: {[(g['lr_factor'], g['weight_decay'], sum(p.numel() for p in g['params'])) for g in groups]}), "
        f"schedule {sched}, shuffle {shuffle}, augmentation {'on' if aug else 'off'}, seed {args.seed}")

    def as_input(x_nhwc_uint8):
        return x_nhwc_uint8.permute(0, 3, 1, 2).float().contiguous()

    epoch_seconds, per_iteration = [], []
    last_loss = float("nan")
    once = None
    iteration = 0
    for epoch in range(epochs):
        if shuffle == "never":
            order = torch.arange(n)
        elif shuffle == "once":
            once = torch.randperm(n, generator=gen) if once is None else once
            order = once
        else:
            order = torch.randperm(n, generator=gen)
        net.train()
        te = time.perf_counter()
        loss_sum, correct, done = 0.0, 0, 0
        first_lr = None
        for b in range(per_epoch):
            if args.max_iterations and b >= args.max_iterations:
                break
            lr = lr0 * rate_factor(sched, iteration, per_epoch, epochs)
            first_lr = lr if first_lr is None else first_lr
            for g in opt.param_groups:
                g["lr"] = lr * g["lr_factor"]
            idx = order[b * bsz:(b + 1) * bsz]
            xb = train_x[idx]
            if aug:
                xb = aug(xb, aug_gen)
            y = train_y[idx]
            opt.zero_grad(set_to_none=True)
            logits = net(as_input(xb))
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            correct += (logits.argmax(1) == y).sum().item()
            done += 1
            iteration += 1
            per_iteration.append((iteration, lr, loss.item()))
        dt = time.perf_counter() - te
        epoch_seconds.append(dt)
        last_loss = loss_sum / max(done, 1)
        if not math.isfinite(last_loss):
            raise SystemExit(f"pytorch_vit: training diverged in epoch {epoch + 1} (loss {last_loss})")
        log(f"epoch {epoch + 1}/{epochs}: lr {first_lr:.3g}..{lr:.3g}, mean loss {last_loss:.4f}, train accuracy "
            f"{100.0 * correct / max(done * bsz, 1):.2f}%, {dt:.1f} s ({done * bsz / dt:.0f} img/s)")

    if args.iterations_csv:
        with open(args.iterations_csv, "w") as f:
            f.write("iteration,base_learning_rate,minibatch_loss\n")
            f.write("".join(f"{i},{r:.9g},{v:.6g}\n" for i, r, v in per_iteration))
    net.eval()
    right = 0
    te = time.perf_counter()
    with torch.no_grad():
        for s in range(0, test_x.shape[0], args.eval_batch):
            logits = net(as_input(test_x[s:s + args.eval_batch]))
            right += (logits.argmax(1) == test_y[s:s + args.eval_batch]).sum().item()
    test_seconds = time.perf_counter() - te
    acc = 100.0 * right / test_x.shape[0]
    wall = time.perf_counter() - t_start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    log(f"test accuracy {acc:.2f}% ({test_x.shape[0]} images, {test_seconds:.1f} s), "
        f"{statistics.mean(epoch_seconds):.1f} s per epoch, peak RSS {rss:.0f} MiB, wall {wall:.1f} s")
    print(json.dumps({
        "side": "pytorch", "seed": args.seed, "epochs": epochs, "test_accuracy": round(acc, 4),
        "seconds_per_epoch": round(statistics.mean(epoch_seconds), 3),
        "epoch_seconds": [round(v, 3) for v in epoch_seconds],
        "train_images_per_second": round(per_epoch * bsz / statistics.mean(epoch_seconds), 2)
        if not args.max_iterations else round(min(per_epoch, args.max_iterations) * bsz / statistics.mean(epoch_seconds), 2),
        "test_seconds": round(test_seconds, 3), "load_seconds": round(load_seconds, 3), "wall_seconds": round(wall, 3),
        "peak_rss_mib": round(rss, 1), "final_epoch_mean_loss": round(last_loss, 5), "learnables": learnables,
        "iterations_per_epoch": per_epoch, "mini_batch_size": bsz, "train_images": int(n),
        "test_images": int(test_x.shape[0]), "max_iterations": args.max_iterations, "threads": torch.get_num_threads(),
        "torch": torch.__version__, "tcmalloc": os.environ.get("LD_PRELOAD", ""),
    }), flush=True)


if __name__ == "__main__":
    main()

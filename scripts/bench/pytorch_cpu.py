#!/usr/bin/python3
"""PyTorch CPU reference for dltrain's benchmarks: builds the network of a dltrain YAML config
(the `layers:` list, MATLAB names) as torch modules and times training and inference on
synthetic data. Prints one JSON line per (network, preset, mode). Not a trainer: no data
loading, no validation, no learn-rate schedule.

  /usr/bin/python3 scripts/bench/pytorch_cpu.py configs/cifar10.yaml --preset best --batch 100

Presets: "best" = channels_last model and inputs, torch.set_num_threads(2), tcmalloc preloaded,
OPENBLAS_NUM_THREADS=1 (the script re-executes itself with that environment); "default" =
NCHW, no preload, PyTorch's default thread count; "compile" (PyTorch >= 2) = "best" plus
torch.compile(net) (inductor, default mode) for training and inference. The warm-up includes
the compilation; its first iteration's time is reported as compile_seconds. When compiling
fails the script prints one line to stderr and emits no row for that mode.

FLOPs convention: useful FLOPs per image = 2 x multiply-adds of every convolution and
fullyConnected layer, forward pass only (biases, batch norm, pooling, activations not counted).
A training step counts as 3x the forward FLOPs (forward + backward-data + backward-weights).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

TCMALLOC_CANDIDATES = [
    "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
    "/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4",
    "/usr/lib/libtcmalloc_minimal.so.4",
]
REEXEC_MARK = "DLT_BENCH_REEXEC"


def find_tcmalloc():
    for path in TCMALLOC_CANDIDATES:
        if os.path.exists(path):
            return path
    return None


def ensure_environment(preset, requested_threads):
    """Re-executes this script once with the environment the preset needs (LD_PRELOAD and the
    OpenMP / OpenBLAS variables must be set before the libraries load)."""
    if os.environ.get(REEXEC_MARK) == "1":
        return
    env = dict(os.environ)
    env[REEXEC_MARK] = "1"
    if preset in ("best", "compile"):
        tc = find_tcmalloc()
        if tc is None:
            sys.stderr.write("pytorch_cpu.py: libtcmalloc_minimal.so.4 not found "
                             "(apt-get install libtcmalloc-minimal4); running '" + preset + "' without it\n")
        else:
            env["LD_PRELOAD"] = tc
        env["OPENBLAS_NUM_THREADS"] = "1"
        env["OMP_NUM_THREADS"] = str(requested_threads)
    else:
        env.pop("LD_PRELOAD", None)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.pop(var, None)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


# ---------------------------------------------------------------- network construction
def pairs(value, n=2):
    """MATLAB scalar-or-list option -> list of n ints."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return [int(value[0])] * n
        if len(value) != n:
            raise ValueError(f"expected {n} values, got {value}")
        return [int(v) for v in value]
    return [int(value)] * n


def resolve_padding(padding, in_hw, kernel, stride, dilation):
    """MATLAB Padding (number | [v h] | [t b l r] | 'same') -> (top, bottom, left, right)."""
    if isinstance(padding, str):
        if padding.lower() != "same":
            raise ValueError(f"unknown Padding '{padding}'")
        out = []
        for d in range(2):
            eff_k = (kernel[d] - 1) * dilation[d] + 1
            out_size = math.ceil(in_hw[d] / stride[d])
            total = max((out_size - 1) * stride[d] + eff_k - in_hw[d], 0)
            out += [total // 2, total - total // 2]  # MATLAB puts the extra row/column last
        return tuple(out)
    if isinstance(padding, (list, tuple)):
        p = [int(v) for v in padding]
        if len(p) == 1:
            return (p[0],) * 4
        if len(p) == 2:
            return (p[0], p[0], p[1], p[1])
        if len(p) == 4:
            return tuple(p)
        raise ValueError(f"Padding needs 1, 2 or 4 values, got {padding}")
    return (int(padding),) * 4


def init_weight(tensor, kind, fan_in, fan_out, torch):
    kind = (kind or "glorot").lower()
    with torch.no_grad():
        if kind == "narrow-normal":
            tensor.normal_(0.0, 0.01)
        elif kind == "he":
            tensor.normal_(0.0, math.sqrt(2.0 / fan_in))
        elif kind == "glorot":
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            tensor.uniform_(-bound, bound)
        elif kind == "zeros":
            tensor.zero_()
        elif kind == "ones":
            tensor.fill_(1.0)
        else:
            raise ValueError(f"unknown WeightsInitializer '{kind}'")


def build(config_path, torch):
    import yaml
    import torch.nn as nn
    import torch.nn.functional as F

    with open(config_path) as f:
        cfg = yaml.safe_load(f)
    specs = cfg["layers"]

    class Pad(nn.Module):
        def __init__(self, pad, value):
            super().__init__()
            self.pad = (pad[2], pad[3], pad[0], pad[1])  # F.pad order: left right top bottom
            self.value = value

        def forward(self, x):
            return F.pad(x, self.pad, value=self.value)

    class Input(nn.Module):
        def __init__(self, hwc, norm):
            super().__init__()
            h, w, c = hwc
            self.norm = norm
            g = torch.Generator().manual_seed(1)
            # A fixed "dataset mean" image (what zerocenter subtracts) and per-channel std.
            self.register_buffer("mean", 100 + 50 * torch.rand(1, c, h, w, generator=g))
            self.register_buffer("std", 60 + 10 * torch.rand(1, c, 1, 1, generator=g))

        def forward(self, x):
            if self.norm == "zerocenter":
                return x - self.mean
            if self.norm == "zscore":
                return (x - self.mean) / self.std
            return x

    class Flatten(nn.Module):
        # NHWC order, as dltrain's fullyConnected: a view for channels_last tensors.
        def forward(self, x):
            if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
                return x.permute(0, 2, 3, 1).flatten(1)
            return x.flatten(1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.mods = nn.ModuleDict()
            self.order = []  # (name, type, input names)
            self.keeps_indices = set()  # pooling layers whose indices an unpooling layer reuses
            self.unpool_of = {}         # maxUnpooling2d name -> its PoolingLayer

        def forward(self, x):
            values = {}
            indices = {}  # maxPooling2d with HasUnpoolingOutputs: name -> (indices, input size)
            last = None
            for name, kind, inputs in self.order:
                if kind == "imageInput":
                    out = self.mods[name](x)
                else:
                    args = [values[i] for i in inputs]
                    if kind == "addition":
                        out = args[0]
                        for a in args[1:]:
                            out = out + a
                    elif kind == "depthConcatenation":
                        out = torch.cat(args, dim=1)
                    elif name in self.keeps_indices:
                        out, idx = self.mods[name](args[0])
                        indices[name] = (idx, args[0].shape[2:])
                    elif name in self.unpool_of:
                        idx, size = indices[self.unpool_of[name]]
                        out = self.mods[name](args[0], idx, output_size=size)
                    elif kind == "crop2d":
                        out = self.mods[name](args[0], args[1])
                    else:
                        out = self.mods[name](args[0])
                values[name] = out
                last = out
            return last

    net = Net()
    shapes = {}  # name -> per-image shape (C, H, W) or (F,)
    values = {}  # name -> dummy activation (batch 1) for shape inference
    flops = 0
    num_classes = None
    prev = None
    hw_in = None
    for i, spec in enumerate(specs):
        spec = dict(spec)
        kind = spec.pop("type")
        name = spec.pop("Name", f"{kind}_{i + 1}")
        inputs = spec.pop("Inputs", [prev] if prev is not None else [])
        if isinstance(inputs, str):
            inputs = [inputs]
        if kind in ("softmax", "sigmoid", "classification", "pixelClassification", "regression",
                    "multilabelClassification", "dicePixelClassification", "focalLoss",
                    "tverskyPixelClassification"):
            # The model returns logits; training uses the fused softmax + cross-entropy loss,
            # inference applies softmax (see run_inference; pytorch_segment.py trains the Dice,
            # focal and Tversky losses on the logits' softmax). A regression output layer (MATLAB's
            # regressionLayer) adds nothing either: the model returns the responses, and
            # num_classes is their count (pytorch_regression.py). A multi-label network's sigmoid
            # likewise: the model returns the K scores before it, pytorch_multilabel.py's loss
            # takes them (binary cross-entropy with logits) and its inference applies the sigmoid.
            if kind not in ("softmax", "sigmoid") and num_classes is None:
                num_classes = shapes[prev][0]
            continue
        x = values[inputs[0]] if inputs else None
        mod = None
        if kind == "imageInput":
            h, w, c = [int(v) for v in spec["InputSize"]]
            mod = Input((h, w, c), str(spec.get("Normalization", "zerocenter")).lower())
            x = torch.zeros(1, c, h, w)
        elif kind == "convolution2d":
            c_in, h, w = x.shape[1], x.shape[2], x.shape[3]
            k = pairs(spec["FilterSize"])
            stride = pairs(spec.get("Stride", 1))
            dil = pairs(spec.get("DilationFactor", 1))
            pad = resolve_padding(spec.get("Padding", 0), (h, w), k, stride, dil)
            nf = int(spec["NumFilters"])
            sym = pad[0] == pad[1] and pad[2] == pad[3]
            conv = nn.Conv2d(c_in, nf, k, stride=stride, dilation=dil,
                             padding=(pad[0], pad[2]) if sym else 0, bias=True)
            init_weight(conv.weight, spec.get("WeightsInitializer"), c_in * k[0] * k[1],
                        nf * k[0] * k[1], torch)
            with torch.no_grad():
                conv.bias.zero_()
            mod = conv if sym else nn.Sequential(Pad(pad, 0.0), conv)
        elif kind == "batchNormalization":
            mod = nn.BatchNorm2d(x.shape[1], eps=float(spec.get("Epsilon", 1e-5)))
        elif kind in ("groupNormalization", "instanceNormalization"):
            c = x.shape[1]
            g = str(spec.get("NumGroups", "channel-wise"))
            groups = c if kind == "instanceNormalization" or g == "channel-wise" else 1 if g == "all-channels" else int(g)
            mod = nn.GroupNorm(groups, c, eps=float(spec.get("Epsilon", 1e-5)))
        elif kind == "relu":
            mod = nn.ReLU()
        elif kind == "leakyRelu":
            mod = nn.LeakyReLU(float(spec.get("Scale", 0.01)))
        elif kind == "elu":
            mod = nn.ELU(float(spec.get("Alpha", 1.0)))
        elif kind in ("maxPooling2d", "averagePooling2d"):
            k = pairs(spec["PoolSize"])
            stride = pairs(spec.get("Stride", 1))
            pad = resolve_padding(spec.get("Padding", 0), tuple(x.shape[2:]), k, stride, [1, 1])
            is_max = kind == "maxPooling2d"
            sym = pad[0] == pad[1] and pad[2] == pad[3] and pad[0] <= k[0] // 2 and pad[2] <= k[1] // 2
            p = (pad[0], pad[2]) if sym else 0
            keep = is_max and str(spec.get("HasUnpoolingOutputs", False)).lower() in ("true", "1")
            pool = nn.MaxPool2d(k, stride, padding=p, return_indices=keep) if is_max else \
                nn.AvgPool2d(k, stride, padding=p, count_include_pad=True)
            if keep:
                if not sym:
                    raise ValueError(f"{config_path}: layer '{name}': asymmetric padding with unpooling")
                net.keeps_indices.add(name)
            mod = pool if sym else nn.Sequential(Pad(pad, -math.inf if is_max else 0.0), pool)
        elif kind == "maxUnpooling2d":
            pool_name = spec["PoolingLayer"]
            pool_spec = next(s for s in specs if s.get("Name") == pool_name)
            mod = nn.MaxUnpool2d(pairs(pool_spec["PoolSize"]), pairs(pool_spec.get("Stride", 1)))
            net.unpool_of[name] = pool_name
        elif kind == "transposedConv2d":
            c_in = x.shape[1]
            k = pairs(spec["FilterSize"])
            stride = pairs(spec.get("Stride", 1))
            crop = spec.get("Cropping", 0)
            if isinstance(crop, list) and len(set(crop)) > 1:
                raise ValueError(f"{config_path}: layer '{name}': only symmetric Cropping here")
            crop = int(crop[0] if isinstance(crop, list) else crop)
            nf = int(spec["NumFilters"])
            mod = nn.ConvTranspose2d(c_in, nf, k, stride=stride, padding=crop, bias=True)
            # dltrain's fan-in of a transposed convolution: FilterSize * NumChannels (its input)
            init_weight(mod.weight, spec.get("WeightsInitializer"), c_in * k[0] * k[1], nf * k[0] * k[1], torch)
            with torch.no_grad():
                mod.bias.zero_()
        elif kind == "globalAveragePooling2d":
            mod = nn.AdaptiveAvgPool2d(1)
        elif kind == "crossChannelNormalization":
            mod = nn.LocalResponseNorm(int(spec["WindowChannelSize"]), alpha=float(spec.get("Alpha", 1e-4)),
                                       beta=float(spec.get("Beta", 0.75)), k=float(spec.get("K", 2)))
        elif kind == "dropout":
            mod = nn.Dropout(float(spec.get("Probability", 0.5)))
        elif kind == "fullyConnected":
            n_in = x[0].numel()
            n_out = int(spec["OutputSize"])
            lin = nn.Linear(n_in, n_out)
            init_weight(lin.weight, spec.get("WeightsInitializer"), n_in, n_out, torch)
            with torch.no_grad():
                lin.bias.zero_()
            mod = nn.Sequential(Flatten(), lin) if x.dim() > 2 else lin
        elif kind in ("addition", "depthConcatenation"):
            mod = None
        else:
            raise ValueError(f"{config_path}: layer '{name}': type '{kind}' not supported here")

        if mod is not None:
            net.mods[name] = mod
        net.order.append((name, kind, list(inputs)))
        with torch.no_grad():
            if kind == "imageInput":
                out = mod(x)
            elif kind == "addition":
                out = sum(values[n] for n in inputs)
            elif kind == "depthConcatenation":
                out = torch.cat([values[n] for n in inputs], dim=1)
            elif name in net.keeps_indices:
                out, idx = mod.eval()(x)
                values[name + "#indices"] = (idx, x.shape[2:])
            elif name in net.unpool_of:
                idx, size = values[net.unpool_of[name] + "#indices"]
                out = mod(x, idx, output_size=size)
            else:
                out = mod.eval()(x)
        if kind == "convolution2d":
            kk = pairs(spec["FilterSize"])
            flops += 2 * out.shape[1] * out.shape[2] * out.shape[3] * x.shape[1] * kk[0] * kk[1]
        elif kind == "fullyConnected":
            flops += 2 * x[0].numel() * out.shape[1]
        values[name] = out
        shapes[name] = tuple(out.shape[1:])
        prev = name
    if num_classes is None:
        num_classes = shapes[prev][0]
    net.train()
    in_shape = shapes[net.order[0][0]]
    train_opts = cfg.get("training", {}) or {}
    return net, in_shape, int(num_classes), flops, train_opts


# ---------------------------------------------------------------- timing
_U64 = (1 << 64) - 1
_SHUFFLE_STREAM = 0x5348554646  # lib/data/batch_loader.cpp's kShuffleStream


def _splitmix64(x):
    """lib/util/rng.h's splitmix64: returns (the advanced state, the output)."""
    x = (x + 0x9E3779B97F4A7C15) & _U64
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _U64
    return x, z ^ (z >> 31)


def _derive(seed, ids):
    """lib/util/rng.h's Rng::derive(seed, ids): the seed of a stream."""
    x = seed & _U64
    for i in ids:
        _, x = _splitmix64(x ^ ((i * 0xD1342543DE82EF95 + 0x632BE59BD9B4E019) & _U64))
    return x


def order_seed(seed):
    """The seed of a twin's mini-batch order generator for training.Seed SEED: dltrain's shuffle
    stream (Rng::derive(seed, {kShuffleStream})), apart from torch.manual_seed(SEED)'s, which
    draws the initial weights. A torch.Generator seeded with SEED itself would take the first
    epoch's permutation from the very numbers (the same mt19937 sequence) that drew the initial
    weights; dltrain draws the two from separate streams."""
    return _derive(seed, [_SHUFFLE_STREAM])


def dltrain_permutation(seed, stream, n):
    """The permutation of 0..n-1 dltrain's BatchLoader::make_order draws for training.Seed SEED
    and STREAM (the 0-based epoch for Shuffle every-epoch, 0 for once): Rng::derive(seed,
    {kShuffleStream, stream}) (splitmix64 stream derivation, xoshiro256**) and a Fisher-Yates
    shuffle swapping p[k - 1] with p[next_u64() % k] for k = n..2 (lib/util/rng.h). A twin
    given it trains on dltrain's mini-batches in dltrain's order."""
    x = _derive(seed, [_SHUFFLE_STREAM, stream])
    s = []
    for _ in range(4):
        x, v = _splitmix64(x)
        s.append(v)

    def rotl(v, k):
        return ((v << k) | (v >> (64 - k))) & _U64
    p = list(range(n))
    for k in range(n, 1, -1):
        r = (rotl((s[1] * 5) & _U64, 7) * 9) & _U64
        t = (s[1] << 17) & _U64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        j = r % k
        p[k - 1], p[j] = p[j], p[k - 1]
    return p


def training_epochs(torch, opt, gen, n, epochs, shuffle, lr0, sched, drop_factor, drop_period, dltrain_seed=None):
    """The twins' epochs as dltrain runs them: at the top of each, sets every parameter group's
    rate (InitialLearnRate, x LearnRateDropFactor every LearnRateDropPeriod epochs when piecewise,
    x the group's "lr_factor") and yields (epoch, lr, order), the mini-batch order: a new
    permutation from GEN per epoch (every-epoch), one drawn at the first epoch (once), or 0..n-1
    (never). With DLTRAIN_SEED the permutations are dltrain's own for that training.Seed
    (dltrain_permutation) instead of GEN's."""
    once = None

    def draw(stream):
        if dltrain_seed is not None:
            return torch.tensor(dltrain_permutation(dltrain_seed, stream, n), dtype=torch.long)
        return torch.randperm(n, generator=gen)
    for epoch in range(epochs):
        lr = lr0 * drop_factor ** (epoch // drop_period) if sched == "piecewise" else lr0
        for g in opt.param_groups:
            g["lr"] = lr * g["lr_factor"]
        if shuffle == "never":
            order = torch.arange(n)
        elif shuffle == "once":
            if once is None:
                once = draw(0)
            order = once
        else:
            order = draw(epoch)
        yield epoch, lr, order


def cpu_busy_seconds():
    """Busy CPU time of the whole machine (all cores, all processes) from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def time_loop(fn, iterations, warmup, repeats):
    """Returns (seconds per repeat, foreign load): the foreign load is how many cores other
    processes kept busy on average while we timed — anything well above 0 means the numbers
    are disturbed (2-thread OpenMP runs suffer badly when a core is taken)."""
    for _ in range(warmup):
        fn()
    times = []
    busy0, self0, wall0 = cpu_busy_seconds(), os.times(), time.perf_counter()
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        times.append(time.perf_counter() - t0)
    busy1, self1, wall1 = cpu_busy_seconds(), os.times(), time.perf_counter()
    foreign = None
    if busy0 is not None:
        own = (self1.user + self1.system) - (self0.user + self0.system)
        foreign = max(0.0, (busy1 - busy0 - own) / (wall1 - wall0))
    return times, foreign


def profile_convs(torch, fn, iterations):
    """Milliseconds per iteration spent in convolutions (the self time of every profiled op
    whose name contains "convolution": aten::mkldnn_convolution, convolution_backward and
    their dispatch frames; eager and torch.compile call the same ops) and in all, over
    `iterations` calls of fn under torch.profiler. The split bounds what faster code around
    the convolutions could gain (scripts/bench/conv_bound.py)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        wall = time.perf_counter() - t0
    conv_us = sum(e.self_cpu_time_total for e in prof.key_averages() if "convolution" in e.key.lower())
    return {"conv_ms_per_iteration": round(conv_us / 1000 / iterations, 3),
            "profiled_ms_per_iteration": round(1000 * wall / iterations, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="+", help="dltrain YAML config files")
    ap.add_argument("--preset", choices=["best", "default", "compile"], default="best")
    ap.add_argument("--batch", type=int, default=0, help="0: the config's MiniBatchSize")
    ap.add_argument("--iterations", type=int, default=5, help="iterations per timed repeat")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    ap.add_argument("--warmup", type=int, default=3,
                    help="untimed iterations first (compile: at least 1, the compiling one)")
    ap.add_argument("--threads", type=int, default=2, help="threads for the 'best' preset")
    ap.add_argument("--modes", default="train,inference")
    ap.add_argument("--precision", choices=["single", "mixed"], default="single",
                    help="mixed: torch.autocast('cpu', bfloat16) around forward and loss, "
                         "as dltrain's Precision: mixed (bfloat16 conv/linear, float32 weights)")
    ap.add_argument("--profile-convs", action="store_true",
                    help="after timing, run --iterations more under torch.profiler and add "
                         "conv_ms_per_iteration (self time of every op named *convolution*, "
                         "forward and backward) and profiled_ms_per_iteration to each row")
    args = ap.parse_args()

    ensure_environment(args.preset, args.threads)

    import torch
    torch.manual_seed(0)
    compiled = args.preset == "compile"
    if compiled and not hasattr(torch, "compile"):
        sys.stderr.write(f"pytorch_cpu.py: preset 'compile' needs PyTorch >= 2 (this is {torch.__version__}); "
                         "no rows\n")
        return
    if args.preset in ("best", "compile"):
        torch.set_num_threads(args.threads)
    channels_last = args.preset in ("best", "compile")
    cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    cpu_capability = cap() if cap else None
    fmt = torch.channels_last if channels_last else torch.contiguous_format

    for path in args.configs:
        net, (c, h, w), num_classes, flops, topts = build(path, torch)
        batch = args.batch or int(topts.get("MiniBatchSize", 128))
        net = net.to(memory_format=fmt)
        gen = torch.Generator().manual_seed(123)
        images = torch.randint(0, 256, (batch, c, h, w), generator=gen).float()
        images = images.contiguous(memory_format=fmt)
        labels = torch.randint(0, num_classes, (batch,), generator=gen)
        opt = torch.optim.SGD(net.parameters(), lr=float(topts.get("InitialLearnRate", 0.01)),
                              momentum=float(topts.get("Momentum", 0.9)),
                              weight_decay=float(topts.get("L2Regularization", 1e-4)))
        last_loss = [float("nan")]
        model = net
        if compiled:
            try:
                model = torch.compile(net)  # inductor, default mode; compiles on first call
            except Exception as e:  # noqa: BLE001 - any failure means "no compile row"
                sys.stderr.write(f"pytorch_cpu.py: torch.compile failed for {path}: {type(e).__name__}: "
                                 f"{str(e).splitlines()[0] if str(e) else ''}; no compile rows\n")
                continue

        mixed = args.precision == "mixed"

        def autocast():
            return torch.autocast("cpu", dtype=torch.bfloat16, enabled=mixed)

        def train_step():
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()
            last_loss[0] = loss.item()

        def infer_step():
            with torch.no_grad(), autocast():
                torch.softmax(model(images).float(), dim=1)

        name = os.path.splitext(os.path.basename(path))[0]
        for mode in args.modes.split(","):
            if mode == "train":
                net.train()
                fn = train_step
                mode_flops = 3 * flops
            elif mode == "inference":
                net.eval()
                fn = infer_step
                mode_flops = flops
            else:
                raise SystemExit(f"unknown mode '{mode}' (train | inference)")
            # The first warm-up iteration runs alone so its time (with torch.compile: the
            # compilation of this mode's graph) can be reported.
            t0 = time.perf_counter()
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                if not compiled:
                    raise
                msg = str(e).strip().splitlines()
                sys.stderr.write(f"pytorch_cpu.py: torch.compile failed for {name} {mode}: "
                                 f"{type(e).__name__}: {msg[0] if msg else ''}; no row\n")
                continue
            first_s = time.perf_counter() - t0
            times, foreign = time_loop(fn, args.iterations, max(args.warmup - 1, 0), args.repeats)
            med = statistics.median(times)
            ips = batch * args.iterations / med
            rec = {
                "network": name, "config_file": path, "preset": args.preset, "mode": mode,
                "precision": args.precision,
                "batch": batch, "images_per_second": round(ips, 2),
                "ms_per_iteration": round(1000 * med / args.iterations, 3),
                "repeat_ms_per_iteration": [round(1000 * t / args.iterations, 3) for t in times],
                "iterations": args.iterations, "repeats": args.repeats, "warmup": args.warmup,
                "flops_per_image_forward": flops, "flops_per_image": mode_flops,
                "flops_convention": "2*MACs of conv+fc, forward; train = 3x forward",
                "gflops_per_second": round(ips * mode_flops / 1e9, 2),
                "threads": torch.get_num_threads(), "channels_last": channels_last,
                "ld_preload": os.environ.get("LD_PRELOAD", ""),
                "images_per_second_fastest_repeat": round(batch * args.iterations / min(times), 2),
                "torch": torch.__version__, "cpu_capability": cpu_capability,
                "first_iteration_seconds": round(first_s, 3),
                "foreign_load_cores": None if foreign is None else round(foreign, 2),
            }
            if compiled:
                rec["compile_seconds"] = round(first_s, 3)
                rec["compile_backend"] = "inductor"
            if mode == "train":
                rec["final_loss"] = round(last_loss[0], 4)
            if args.profile_convs:
                rec.update(profile_convs(torch, fn, args.iterations))
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch CUDA reference for dltrain's GPU benchmark (scripts/bench/gpu_vs_pytorch): builds the
network of a dltrain YAML config with pytorch_cpu.py's builder (pytorch_vit.py's for a network
with token layers: configs/cifar10-vit.yaml, F.scaled_dot_product_attention), moves it to the
GPU and times training and inference on synthetic data with CUDA events. Prints one JSON line per
(network, preset, mode); `--peak` instead measures the float32, TF32 and bfloat16
matrix-multiply rates that serve as the peaks for model FLOP utilisation.

  python3 scripts/bench/pytorch_cuda.py configs/resnet18-cifar.yaml --batch 512 --preset strict
  python3 scripts/bench/pytorch_cuda.py --peak

Presets (all float32 weights and activations, channels_last, cudnn.benchmark=True):
  strict   TF32 off for convolutions and matmuls: the arithmetic dltrain's tests hold it to
  default  PyTorch's defaults: TF32 on for cuDNN convolutions, off for matmuls
  compile  strict + torch.compile (inductor); reported separately, may fail offline
  mixed    strict + torch.autocast(bfloat16) around forward and loss (dltrain's Precision: mixed)
Timing as `dltrain time`: images and labels uploaded once before timing (no data loading on
either side), warm-up, then repeats of N iterations each timed as a whole (CUDA events; dltrain
synchronizes and reads a host clock), the median repeat reported. One difference, against
dltrain: this loop never reads the loss back, while dltrain's step waits for its loss (not for
backward or the update) once per step.
Exit code 77 when no CUDA GPU is visible. `--dry-run-cpu` runs everything on the CPU with host
timers (a check of this script on machines without a GPU; its numbers mean nothing). FLOPs as pytorch_cpu.py: 2 x MACs of conv + fc,
forward (a token network's also count the attention's two products, by torch.utils.flop_counter);
a training step counts 3x forward. The optimizer follows the config's Solver (sgdm: SGD with
momentum and L2Regularization as weight decay; adam; adamw with WeightDecay), its learning rate
InitialLearnRate x 1e-3 (the timing, not the training, is the point).
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Layer types only pytorch_vit.py's builder knows: a config with any of them is built there.
TOKEN_LAYERS = {"patchEmbedding", "embeddingConcatenation", "positionEmbedding", "selfAttention", "indexing1d",
                "layerNormalization", "gelu"}


def build_network(path, torch):
    """(net, (c, h, w), classes, forward FLOPs per image, training options) of a dltrain config."""
    import yaml
    with open(path) as f:
        cfg = yaml.safe_load(f)
    if not any(layer.get("type") in TOKEN_LAYERS for layer in cfg.get("layers", [])):
        return load_module("pytorch_cpu").build(path, torch)
    net, (c, h, w), num_classes, _ = load_module("pytorch_vit").build(cfg, torch, path)
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        net(torch.zeros(1, c, h, w))
    return net, (c, h, w), num_classes, counter.get_total_flops(), cfg.get("training", {}) or {}


def optimizer(torch, params, topts):
    """The config's Solver, as dltrain's step would run it (module doc)."""
    solver = str(topts.get("Solver", "sgdm")).lower()
    lr = float(topts.get("InitialLearnRate", 0.01)) * 1e-3
    if solver == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=float(topts.get("WeightDecay", 0.01)))
    if solver == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=float(topts.get("L2Regularization", 1e-4)))
    return torch.optim.SGD(params, lr=lr, momentum=float(topts.get("Momentum", 0.9)),
                           weight_decay=float(topts.get("L2Regularization", 1e-4)))


DEV = "cuda"


def need_gpu(torch):
    if DEV == "cpu":
        return
    if not torch.cuda.is_available():
        print(f"no GPU: skipped (torch {torch.__version__} sees no CUDA device; "
              f"torch.version.cuda = {torch.version.cuda})", file=sys.stderr)
        sys.exit(77)


def sync(torch):
    if DEV == "cuda":
        torch.cuda.synchronize()


def set_preset(torch, preset):
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = preset == "default"  # PyTorch's default is True
    torch.backends.cuda.matmul.allow_tf32 = False           # PyTorch's default


def event_time(torch, fn, iterations, warmup, repeats):
    """Milliseconds per iteration of each timed repeat (CUDA events around the loop)."""
    for _ in range(warmup):
        fn()
    sync(torch)
    out = []
    for _ in range(repeats):
        if DEV == "cpu":
            t0 = time.perf_counter()
            for _ in range(iterations):
                fn()
            out.append((time.perf_counter() - t0) * 1e3 / iterations)
            continue
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop) / iterations)
    return out


def profile(torch, fn, iterations, what):
    """Per-iteration CUDA milliseconds of the top operators and kernels over `iterations` steps."""
    from torch.profiler import ProfilerActivity, profile as torch_profile
    sync(torch)
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(iterations):
            fn()
        sync(torch)
    print(f"== torch.profiler, {what}: CUDA ms per iteration (sums over {iterations} iterations / {iterations})",
          file=sys.stderr)
    rows = []
    for e in prof.key_averages():
        cuda_us = getattr(e, "device_time_total", None)
        if cuda_us is None:
            cuda_us = getattr(e, "cuda_time_total", 0)
        self_us = getattr(e, "self_device_time_total", None)
        if self_us is None:
            self_us = getattr(e, "self_cuda_time_total", 0)
        if cuda_us > 0:
            rows.append((cuda_us, self_us, e.count, e.key))
    rows.sort(reverse=True)
    for cuda_us, self_us, count, key in rows[:40]:
        print(f"{cuda_us / 1e3 / iterations:9.3f} total {self_us / 1e3 / iterations:9.3f} self "
              f"{count // iterations:5d}x  {key[:110]}", file=sys.stderr)


def measure_peak(torch, n, repeats):
    """matmul TFLOP/s on random data (never zeros): float32 with TF32 off and on, and bfloat16
    (the peak for Precision: mixed / autocast rows)."""
    recs = []
    g = torch.Generator(device=DEV).manual_seed(0)
    a = torch.randn(n, n, device=DEV, generator=g)
    b = torch.randn(n, n, device=DEV, generator=g)
    ref = (a[:64].double() @ b.double()[:, :64])
    for name, tf32, dtype in (("torch_matmul_fp32", False, torch.float32),
                              ("torch_matmul_fp32_tf32", True, torch.float32),
                              ("torch_matmul_bf16", False, torch.bfloat16)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        x, y = a.to(dtype), b.to(dtype)
        c = x @ y
        err = ((c[:64, :64].double() - ref).norm() / ref.norm()).item()
        ms = event_time(torch, lambda: torch.matmul(x, y, out=c), 5, 3, repeats)
        med = statistics.median(ms)
        recs.append({"benchmark": name, "n": n, "dtype": str(dtype).replace("torch.", ""),
                     "tf32": tf32, "tflops_median": round(2 * n ** 3 / (med * 1e-3) / 1e12, 2),
                     "tflops_best": round(2 * n ** 3 / (min(ms) * 1e-3) / 1e12, 2),
                     "ms_median": round(med, 3), "relative_error_vs_fp64": err})
    torch.backends.cuda.matmul.allow_tf32 = False
    for r in recs:
        r.update(device_info(torch))
        print(json.dumps(r), flush=True)
    bw_n = 1 << 28  # 1 GiB of float32 copied: bytes read + written
    bw_n = bw_n if DEV == "cuda" else 1 << 20
    x = torch.rand(bw_n, device=DEV)
    y = torch.empty_like(x)
    ms = statistics.median(event_time(torch, lambda: y.copy_(x), 5, 2, repeats))
    print(json.dumps({"benchmark": "device_copy", "bytes": 8 * bw_n,
                      "tb_per_second": round(8 * bw_n / (ms * 1e-3) / 1e12, 3)} | device_info(torch)), flush=True)


def device_info(torch):
    if DEV == "cpu":
        return {"gpu": "none (dry run on the CPU)", "sms": 0, "torch": torch.__version__, "cuda": None, "cudnn": None}
    p = torch.cuda.get_device_properties(0)
    return {"gpu": p.name, "sms": p.multi_processor_count, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*", help="dltrain YAML config files")
    ap.add_argument("--preset", choices=["strict", "default", "compile", "mixed"], default="strict",
                    help="mixed: torch.autocast('cuda', bfloat16) around forward and loss (dltrain's "
                         "Precision: mixed), TF32 off")
    ap.add_argument("--batch", type=int, default=0, help="0: the config's MiniBatchSize")
    ap.add_argument("--iterations", type=int, default=20, help="iterations per timed repeat")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed iterations first")
    ap.add_argument("--modes", default="train,inference")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after timing, N more iterations under torch.profiler: the CUDA time of "
                         "each operator and kernel to stderr (where the time goes, beside `dltrain time`'s layers)")
    ap.add_argument("--peak", action="store_true", help="measure the matmul peak instead")
    ap.add_argument("--peak-n", type=int, default=8192)
    ap.add_argument("--dry-run-cpu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global DEV
    if args.dry_run_cpu:
        DEV = "cpu"

    import torch
    need_gpu(torch)
    if args.peak:
        measure_peak(torch, args.peak_n, args.repeats)
        return
    if not args.configs:
        ap.error("give config files, or --peak")
    set_preset(torch, args.preset)
    torch.manual_seed(0)
    fmt = torch.channels_last
    for path in args.configs:
        net, (c, h, w), num_classes, flops, topts = build_network(path, torch)
        batch = args.batch or int(topts.get("MiniBatchSize", 128))
        net = net.to(DEV).to(memory_format=fmt)
        gen = torch.Generator(device=DEV).manual_seed(123)
        images = torch.randint(0, 256, (batch, c, h, w), generator=gen, device=DEV).float()
        images = images.contiguous(memory_format=fmt)
        labels = torch.randint(0, num_classes, (batch,), generator=gen, device=DEV)
        opt = optimizer(torch, net.parameters(), topts)
        model = net
        compile_s = None
        if args.preset == "compile":
            t0 = time.perf_counter()
            model = torch.compile(net)
        last_loss = [None]

        mixed = args.preset == "mixed"

        def autocast():
            return torch.autocast(DEV, dtype=torch.bfloat16, enabled=mixed)

        def train_step():
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()
            last_loss[0] = loss

        def infer_step():
            with torch.no_grad(), autocast():
                torch.softmax(model(images).float(), dim=1)

        name = os.path.splitext(os.path.basename(path))[0]
        for mode in args.modes.split(","):
            if mode == "train":
                net.train()
                fn, mode_flops = train_step, 3 * flops
            elif mode == "inference":
                net.eval()
                fn, mode_flops = infer_step, flops
            else:
                raise SystemExit(f"unknown mode '{mode}' (train | inference)")
            if args.preset == "compile":
                t0 = time.perf_counter()
                fn()
                sync(torch)
                compile_s = round(time.perf_counter() - t0, 1)
            if DEV == "cuda":
                torch.cuda.reset_peak_memory_stats()
            ms = event_time(torch, fn, args.iterations, args.warmup, args.repeats)
            med = statistics.median(ms)
            ips = batch / (med * 1e-3)
            rec = {
                "network": name, "config_file": path, "preset": args.preset, "mode": mode,
                "precision": "mixed" if mixed else "single",
                "batch": batch, "images_per_second": round(ips, 1), "ms_per_iteration": round(med, 3),
                "repeat_ms_per_iteration": [round(t, 3) for t in ms],
                "iterations": args.iterations, "repeats": args.repeats, "warmup": args.warmup,
                "flops_per_image_forward": flops, "flops_per_image": mode_flops,
                "flops_convention": "2*MACs of conv+fc (and a token network's attention products), forward; train = 3x forward",
                "tflops_per_second": round(ips * mode_flops / 1e12, 3),
                "channels_last": True, "cudnn_benchmark": True,
                "cudnn_tf32": torch.backends.cudnn.allow_tf32,
                "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
                "peak_memory_bytes": torch.cuda.max_memory_allocated() if DEV == "cuda" else None,
                "compile_seconds": compile_s,
            } | device_info(torch)
            if mode == "train" and last_loss[0] is not None:
                rec["final_loss"] = round(float(last_loss[0].detach()), 4)
            print(json.dumps(rec), flush=True)
            if args.profile > 0 and DEV == "cuda":
                profile(torch, fn, args.profile, f"{name} {args.preset} {mode}, batch {batch}")


if __name__ == "__main__":
    main()

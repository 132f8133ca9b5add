#!/usr/bin/env python3
"""Inference speed of imported ONNX networks on one GPU: dltrain against PyTorch eager.

For each torchvision network (default mobilenet_v2, resnet50; random weights, seed 0, 1000
classes, 224x224) it exports the model with torch.onnx.export (dynamo=True, the default
exporter; where that fails, dynamo=False at opset 17, and the row says which; the transformers,
vit / swin / maxvit, with one image, as zoo_coverage.py exports them: dltrain reads such a graph
at any batch), then times inference at one batch (default 256) in each of --precisions: single
(float32, TF32 off on both sides) and mixed (dltrain's Precision: mixed against PyTorch under
torch.autocast(bfloat16)):
  - dltrain: `dltrain time --gpu 0 --json --set training.Precision=P` on a config whose base:
    is the ONNX file (imported on the fly, the last two layers replaced by softmax +
    classification as a user's would be): its inference_ms, the median of --repeats loops of
    --iterations forward passes;
  - PyTorch eager: the same model object on cuda:0, channels_last, cudnn.benchmark,
    torch.inference_mode, timed with CUDA events over the same loops.
Per network and precision PyTorch is timed first, then dltrain, then dltrain under each --variants switch, so
that a run cut by its caller's time limit (SIGTERM) still has the peer's number: the table is
written after every measurement and on SIGTERM, with what was measured so far.
Agreement of the imported networks with the exporter's model is checked elsewhere
(scripts/onnx/zoo_coverage.py, tests/onnx); this script measures speed only. Prints one JSON
line per network and precision to stdout at the end (also when stopped by SIGTERM), a markdown table to stderr,
and writes OUTPUT-DIR/table.md.
Runs with the python3 that has torch, torchvision, onnx and onnxscript (the GPU machine's).

  DLTRAIN=path/to/dltrain python3 scripts/bench/onnx_inference_gpu.py --output-dir DIR
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts", "onnx"))
import zoo_coverage as zc  # noqa: E402  (the exporters as the zoo coverage uses them)


def log(msg):
    print(f"onnx_inference_gpu: {msg}", file=sys.stderr, flush=True)


class Stopped(BaseException):
    """SIGTERM (the caller's time limit): not an Exception, so no handler of a failed step takes it."""


def export(model, x, path):
    """dynamo first (what torch.onnx.export does by default), TorchScript's exporter if it fails."""
    try:
        zc.export(model, x, path, "dynamo")
        return "dynamo"
    except Exception as e:  # noqa: BLE001  (any exporter failure: fall back, and say so)
        log(f"dynamo export failed ({str(e).splitlines()[0][:160]}); using dynamo=False")
        for f in (path, path + ".data"):
            if os.path.exists(f):
                os.remove(f)
        zc.export(model, x, path, "torchscript")
        return "torchscript"


def dltrain_time(args, onnx_path, work, batch, precision, variant=("", {})):
    """`dltrain time` of the imported network; variant: (name, extra environment) of a switch run."""
    cfg = os.path.join(work, "time.yaml")
    zc.write_time_config(cfg, onnx_path, batch)
    where = ["--gpu", "0"] if args.device == "cuda" else ["--threads", "2"]
    cmd = [args.dltrain, "time", cfg, *where, "--batch", str(batch), "--json",
           "--iterations", str(args.iterations), "--repeats", str(args.repeats), "--warmup", str(args.warmup),
           "--set", f"training.Precision={precision}"]
    env = {k: v for k, v in os.environ.items() if k != "DLT_ALLOW_TF32"}
    env.update(variant[1])
    if args.profile:
        env["DLT_LOG"] = "debug"  # each convolution's cuDNN choice, for print_layers
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout, env=env)
    seconds = time.perf_counter() - t0
    if p.returncode != 0:
        tail = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
        raise RuntimeError(tail)
    stem = os.path.join(work, os.path.basename(onnx_path)[:-5] + f"_{precision}" + (f"_{variant[0]}" if variant[0] else ""))
    with open(stem + "_dltrain.json", "w") as f:
        f.write(p.stdout)
    with open(stem + "_dltrain.log", "w") as f:
        f.write(p.stderr)
    d = json.loads(p.stdout)
    d["stderr"] = p.stderr
    return d, seconds


def print_layers(d, top=10):
    """dltrain's forward time per layer type and its slowest layers (from `dltrain time --json`)."""
    by_type = {}
    for layer in d.get("layers", []):
        by_type[layer["type"]] = by_type.get(layer["type"], 0.0) + layer["forward_ms"]
    total = sum(by_type.values())
    log("dltrain forward per layer type (ms, each layer timed alone): " + ", ".join(
        f"{t} {ms:.2f}" for t, ms in sorted(by_type.items(), key=lambda kv: -kv[1])) + f"; sum {total:.2f}")
    slow = sorted(d.get("layers", []), key=lambda layer: -layer["forward_ms"])[:top]
    log("slowest: " + ", ".join(f"{layer['name']} ({layer['type']}) {layer['forward_ms']:.2f}" for layer in slow))
    # What cuDNN runs for the slowest forward convolutions: the DLT_LOG=debug lines of the choice
    # (they name the convolution by its shapes, "conv (input NxHxWxC, K filters ...)"), by time.
    choices = {}
    for line in d.get("stderr", "").splitlines():
        m = re.search(r"(conv \(input .*\)) forward: (.*?)\((\d+\.\d+) ms", line)
        if m:
            choices[m.group(1)] = (float(m.group(3)), m.group(2).strip(), line.strip())
    for shape, (ms, _, line) in sorted(choices.items(), key=lambda kv: -kv[1][0])[:8]:
        log(f"  {ms:.3f} ms: " + line[line.find(shape):][:330])


def print_torch_profile(model, x, torch, top=12):
    """torch.profiler's CUDA kernels over two forward passes, the costliest first."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            model(x)
        torch.cuda.synchronize()
    averages = prof.key_averages()
    for key in ("self_device_time_total", "self_cuda_time_total"):
        try:
            table = averages.table(sort_by=key, row_limit=top, max_name_column_width=70)
            break
        except (AttributeError, KeyError, ValueError):
            table = ""
    log("PyTorch, two forward passes under torch.profiler:\n" + table)


def torch_ms(model, x, args, torch):
    for _ in range(args.warmup):
        model(x)
    if args.device == "cpu":  # the self-check without a GPU
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            for _ in range(args.iterations):
                model(x)
            times.append((time.perf_counter() - t) * 1e3 / args.iterations)
        return sorted(times)[len(times) // 2]
    torch.cuda.synchronize()
    times = []
    for _ in range(args.repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(args.iterations):
            model(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / args.iterations)
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dltrain", default=os.environ.get("DLTRAIN", os.path.join(ROOT, "build", "dltrain")))
    p.add_argument("--networks", default="mobilenet_v2,resnet50")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--precisions", default="single",
                   help="comma-separated: single (float32, TF32 off) and/or mixed (dltrain's Precision: mixed "
                        "against torch.autocast bfloat16)")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--run-timeout", type=float, default=150)
    p.add_argument("--output-dir", default="")
    p.add_argument("--variants", default="",
                   help="dltrain timed again under switches: 'NAME[@NET,NET]:VAR=VALUE[ VAR=VALUE];NAME2:...' "
                        "(e.g. 'rtc:DLT_CUDNN_RUNTIME_COMPILED=1'; with @NET,NET only for those networks), "
                        "one more row each")
    p.add_argument("--profile", action="store_true",
                   help="also print dltrain's per-layer-type times and torch.profiler's costliest CUDA kernels")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: a self-check of this script where no GPU is (small --batch)")
    args = p.parse_args()
    precisions = [q for q in args.precisions.split(",") if q]
    if not precisions or any(q not in ("single", "mixed") for q in precisions):
        p.error(f"--precisions takes single and/or mixed, got '{args.precisions}'")
    variants = []  # (name, environment, networks or None for all)
    for spec in [v for v in args.variants.split(";") if v.strip()]:
        name, _, assignments = spec.partition(":")
        name, _, nets = name.strip().partition("@")
        variants.append((name, dict(a.split("=", 1) for a in assignments.split()),
                         [n for n in nets.split(",") if n] or None))
    import torch
    import torchvision
    if args.device == "cuda" and not torch.cuda.is_available():
        log("no GPU visible to PyTorch")
        return 77
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    work = args.output_dir or os.path.join("/tmp", "onnx_inference_gpu")
    os.makedirs(work, exist_ok=True)
    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else "the CPU (self-check)"
    rows, failed = [], 0

    def table():
        """The markdown table of the rows so far (the last one may be partial), to stderr and table.md."""
        lines = [f"Imported ONNX inference on {gpu}, batch {args.batch}, {args.size}x{args.size}; single: float32 "
                 f"(TF32 off both sides), mixed: dltrain's Precision: mixed against torch.autocast(bfloat16); "
                 f"PyTorch {torch.__version__} eager (channels_last, cudnn.benchmark), cuDNN "
                 f"{torch.backends.cudnn.version()}; median of {args.repeats} loops of {args.iterations} batches.",
                 "", "| network | precision | exporter | dltrain ms (img/s) | PyTorch eager ms (img/s) | PyTorch / dltrain |",
                 "|---|---|---|---|---|---|"]

        def cell(ms):
            return f"{ms:.2f} ({args.batch / ms * 1e3:,.0f})"
        for r in rows:
            d = cell(r["dltrain_ms"]) if "dltrain_ms" in r else r.get("dltrain_error", r.get("error", "not run"))
            t = cell(r["pytorch_ms"]) if "pytorch_ms" in r else "not run"
            lines.append(f"| {r['network']} | {r['precision']} | {r.get('exporter', '—')} | {d} | {t} | "
                         f"{str(r['ratio']) + 'x' if 'ratio' in r else '—'} |")
            for name, env, nets in variants:
                if nets and r["network"] not in nets:
                    continue
                ms = r.get(f"dltrain_ms_{name}")
                d = cell(ms) if ms else r.get(f"dltrain_error_{name}", "not run")
                lines.append(f"| {r['network']}, dltrain with {' '.join(f'{k}={v}' for k, v in env.items())} | "
                             f"{r['precision']} | {r.get('exporter', '—')} | {d} | {t} | "
                             f"{str(r['ratio_' + name]) + 'x' if 'ratio_' + name in r else '—'} |")
        with open(os.path.join(work, "table.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        return "\n".join(lines)

    def ratios(row):
        for suffix in [""] + [f"_{v[0]}" for v in variants]:
            if "dltrain_ms" + suffix in row and "pytorch_ms" in row:
                row["ratio" + suffix] = round(row["pytorch_ms"] / row["dltrain_ms" + suffix], 3)

    def on_term(signum, frame):  # the caller's time limit: keep what was measured
        raise Stopped(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    try:
        for net in [n for n in args.networks.split(",") if n]:
            base = {"network": net, "batch": args.batch, "size": args.size, "gpu": gpu,
                    "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}
            torch.manual_seed(0)
            model = torchvision.models.get_model(net, weights=None).eval()
            # Transformers with one image (zoo_coverage.one_image: both exporters bake the batch in).
            x_cpu = torch.rand(1 if zc.one_image(net) else 2, 3, args.size, args.size)
            path = os.path.join(work, net + ".onnx")
            t0 = time.perf_counter()
            try:
                base["exporter"] = export(model, x_cpu, path)
            except Exception as e:  # noqa: BLE001
                rows.append(base | {"precision": precisions[0], "error": f"export: {str(e).splitlines()[0][:160]}"})
                failed += 1
                continue
            base["export_s"] = round(time.perf_counter() - t0, 1)
            model = model.to(args.device, memory_format=torch.channels_last)
            x = torch.rand(args.batch, 3, args.size, args.size, device=args.device).contiguous(
                memory_format=torch.channels_last)
            for precision in precisions:
                row = base | {"precision": precision}
                rows.append(row)
                # The peer first: its number is the one a cut run must not lose.
                with torch.inference_mode(), torch.autocast(args.device, dtype=torch.bfloat16,
                                                            enabled=precision == "mixed"):
                    row["pytorch_ms"] = torch_ms(model, x, args, torch)
                if args.device == "cuda":
                    torch.cuda.empty_cache()  # the device's memory to dltrain's process
                table()
                runs = [("", {})] + [(name, env) for name, env, nets in variants if not nets or net in nets]
                for variant in runs:
                    suffix = f"_{variant[0]}" if variant[0] else ""
                    try:
                        if variant[0]:
                            log(f"{net} {precision}, dltrain with {variant[0]} "
                                f"({' '.join(f'{k}={v}' for k, v in variant[1].items())}):")
                        d, seconds = dltrain_time(args, path, work, args.batch, precision, variant)
                        row["dltrain_ms" + suffix] = d["inference_ms"]
                        row["dltrain_call_s" + suffix] = round(seconds, 1)
                        if args.profile:
                            print_layers(d)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        row["dltrain_error" + suffix] = str(e)[:200]
                        failed += 1
                    ratios(row)
                    table()
                if args.profile and args.device == "cuda":
                    with torch.inference_mode(), torch.autocast(args.device, dtype=torch.bfloat16,
                                                                enabled=precision == "mixed"):
                        print_torch_profile(model, x, torch)
            del model, x
            if args.device == "cuda":
                torch.cuda.empty_cache()
    except Stopped as e:
        log(f"stopped by {e}: the table has what was measured")
        failed += 1
    for row in rows:  # one JSON line per network and precision, measured or not
        print(json.dumps(row), flush=True)
    print(table(), file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

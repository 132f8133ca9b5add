#!/usr/bin/env python3
"""The tables of docs/performance.md, generated from the result files in docs/results/.

Each table of the page sits between marker comments:

    <!-- table: NAME -->
    ...generated: the table and a line naming its result files...
    <!-- end -->

and NAME is one of the functions in TABLES below, which reads its result files (JSON lines,
one file per benchmark run, named DATE-MACHINE-BENCH.jsonl; a line {"run": {...}} records the
machine, versions, date and command) and returns the table's lines. The prose around the
markers is written by hand.

  python3 scripts/bench/perf_page.py            rewrite the tables in docs/performance.md
  python3 scripts/bench/perf_page.py --check    exit 1 (and print a diff) when a table differs
  python3 scripts/bench/perf_page.py --list     the table names and their result files

--page FILE and --results DIR choose other files (the test uses them). Standard library only.
"""
import argparse
import difflib
import json
import os
import re
import sys
import time
from decimal import ROUND_HALF_UP, Decimal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = re.compile(r"^<!-- table: ([a-z0-9_]+) -->$")
END = "<!-- end -->"


class Results:
    def __init__(self, directory):
        self.dir = directory
        self.used = []

    def rows(self, name, **where):
        """The records of one result file (its "run" line left out), those matching `where`."""
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            raise SystemExit(f"perf_page: {path} is missing (a table of the page reads it)")
        if name not in self.used:
            self.used.append(name)
        out = []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    raise SystemExit(f"perf_page: {path}:{n}: not JSON ({e})")
                if set(r) == {"run"}:
                    continue
                if all(r.get(k) == v for k, v in where.items()):
                    out.append(r)
        return out

    def one(self, name, **where):
        found = self.rows(name, **where)
        if len(found) != 1:
            raise SystemExit(f"perf_page: {name}: {len(found)} records match {where}, expected one")
        return found[0]

    def latest(self, suffix):
        """The newest result file whose name ends with suffix (names start with their date)."""
        names = sorted(f for f in os.listdir(self.dir) if f.endswith(suffix))
        if not names:
            raise SystemExit(f"perf_page: no result file *{suffix} in {self.dir}")
        return names[-1]

    def latest_per_machine(self, suffix):
        """The newest result file of each machine (DATE-MACHINE-...suffix), oldest first."""
        newest = {}
        for f in sorted(f for f in os.listdir(self.dir) if f.endswith(suffix)):
            newest[f[len("YYYY-MM-DD-"):-len(suffix)]] = f
        if not newest:
            raise SystemExit(f"perf_page: no result file *{suffix} in {self.dir}")
        return sorted(newest.values())

    def run(self, name):
        """The file's {"run": {...}} line."""
        with open(os.path.join(self.dir, name), encoding="utf-8") as f:
            for line in f:
                if line.strip() and set(r := json.loads(line)) == {"run"}:
                    return r["run"]
        raise SystemExit(f"perf_page: {name} has no {{\"run\": ...}} line")

    def text(self, name):
        if name not in self.used:
            self.used.append(name)
        with open(os.path.join(self.dir, name), encoding="utf-8") as f:
            return f.read()


def mean(values, digits=2):
    """The mean of figures as stated, rounded half up (as a person rounds; no binary float error)."""
    m = sum(Decimal(str(v)) for v in values) / len(values)
    return str(m.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def n(x, digits=0):
    """A number with thousands separators and `digits` decimals."""
    return f"{x:,.{digits}f}"


def table(header, align, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


# ---- CPU ----

def cpu_training(res):
    first = res.rows("2026-11-27-cpuvm-conv_bound.jsonl")
    second = {(r["isa"], r["network"], r["mode"]): r["ratio"] for r in res.rows("2026-11-27-cpuvm-conv_bound-second.jsonl")}
    rows = []
    for r in first:
        digits = 1 if r["dltrain_ms"] < 100 else 0
        s = second.get((r["isa"], r["network"], r["mode"]))
        rows.append([r["isa"], r["network"], r["mode"], f"{n(r['dltrain_ms'], digits)} ({n(r['dltrain_conv_ms'], digits)})",
                     r["peer"].replace("/", " / "), n(r["peer_ms"], digits),
                     f"{r['ratio']:.2f} ({r['ratio_min']:.2f}–{r['ratio_max']:.2f})", f"{r['bound']:.2f}",
                     "–" if s is None else f"{s:.2f}"])
    return table(["ISA", "network", "mode", "dltrain ms (of it convs)", "fastest peer", "peer ms", "ratio (lowest–highest)",
                  "bound", "second run"], ["---", "---", "---", "---:", "---", "---:", "---:", "---:", "---:"], rows)


def winograd_avx2(res):
    f = "2026-11-26-cpuvm-winograd_avx2.jsonl"
    rows = []
    for r in res.rows(f, algorithm="onednn_blocked"):
        w = res.one(f, algorithm="winograd", layer=r["layer"])
        if "forward_ms" in r:
            rows.append([f"{r['layer']} ({r['shape']})", f"{r['forward_ms']:.1f} / {r['backward_ms']:.1f}",
                         f"{w['forward_ms']:.1f} / {w['backward_ms']:.1f}"])
        else:
            key = "train_step_ms" if "train_step_ms" in r else "inference_ms"
            rows.append([r["layer"], n(r[key]), n(w[key])])
    lines = table(["layer", "oneDNN 2.6.3 jit:avx2 (blocked)", "dltrain Winograd"], ["---", "---:", "---:"], rows)
    return lines  # the file's "whole network" rows (DLT_WINOGRAD_BLOCK 16-128) stay in the results only


def cpu_mixed(res):
    rows = [[r["network"], r["mode"], r["batch"], n(r["dltrain_images_per_second"]), n(r["peer_images_per_second"]),
             f"{r['ratio']:.2f}", f"{r['mixed_over_single']:.2f}"]
            for r in res.rows("2026-11-21-cpuvm-cpu_vs_pytorch-mixed.jsonl")]
    return table(["network", "mode", "batch", "dltrain mixed img/s", "PyTorch autocast img/s", "ratio",
                  "dltrain mixed / single"], ["---", "---", "---:", "---:", "---:", "---:", "---:"], rows)


def data_vs_pil(res):
    rows = [[r["workload"], n(r["pil_images_per_second"]), n(r["dltrain_1_thread_images_per_second"]),
             n(r["dltrain_2_threads_images_per_second"])] for r in res.rows("2026-11-21-cpuvm-data_vs_pil.jsonl")]
    return table(["workload", "PIL (1 core)", "dltrain 1 thread", "dltrain 2 threads"], ["---", "---:", "---:", "---:"], rows)


def cifar10_accuracy(res):
    rs = res.rows("2026-11-21-cpuvm-cifar10_accuracy.jsonl")
    rows = [["dltrain" if r["side"] == "dltrain" else "PyTorch", r["seed"], f"{r['test_accuracy']:.2f}",
             "(shared cores)" if r["wall_seconds"] is None else f"{r['wall_seconds']:.1f}"] for r in rs]
    lines = table(["side", "seed", "test accuracy %", "wall s"], ["---", "---:", "---:", "---:"], rows)
    m = {s: mean([r["test_accuracy"] for r in rs if r["side"] == s]) for s in ("dltrain", "pytorch")}
    return lines + ["", f"Mean test accuracy: dltrain {m['dltrain']} %, PyTorch {m['pytorch']} %."]


def camvid_cpu(res):
    f = "2026-11-24-cpuvm-camvid_segmentation.jsonl"
    rows = []
    for epochs in (10, 40):
        d = res.rows(f, side="dltrain", epochs=epochs)
        p = res.rows(f, side="pytorch", epochs=epochs)
        t = [r for r in res.rows(f, epochs=epochs) if "epoch_time_ratio" in r]

        def ious(rs):
            s = ", ".join(f"{r['mean_iou']:.2f}" for r in rs)
            return s + (f" (mean {mean([r['mean_iou'] for r in rs])})" if len(rs) > 2 else "")
        times = ", ".join(f"{r['epoch_time_ratio']:.2f}" for r in t)
        if any("note" in r for r in t):
            times += f" (seed {', '.join(str(r['seed']) for r in t)}; the others ran on shared cores)"
        rows.append([", ".join(str(r["seed"]) for r in d), epochs, ious(d), ious(p), times])
    return table(["seeds", "epochs", "dltrain mean IoU %", "PyTorch mean IoU %", "time per epoch dltrain / PyTorch"],
                 ["---", "---:", "---", "---", "---:"], rows)


def camvid_losses(res):
    """camvid_segmentation.sh --config configs/camvid-segnet-basic-{dice,tversky}.yaml: each config's loss on both
    sides, a row per loss and epoch count from the newest file of each."""
    rows, runs = [], []
    for suffix in ("-camvid_dice.jsonl", "-camvid_tversky.jsonl"):
        f = res.latest(suffix)
        run = res.run(f)
        runs.append(run)
        for epochs in sorted({r["epochs"] for r in res.rows(f) if "side" in r}):
            d, p = (res.rows(f, side=s, epochs=epochs) for s in ("dltrain", "pytorch"))
            t = [r for r in res.rows(f, epochs=epochs) if "epoch_time_ratio" in r]

            def ious(rs):
                s = ", ".join(f"{r['mean_iou']:.2f}" for r in rs)
                return s + (f" (mean {mean([r['mean_iou'] for r in rs])})" if len(rs) > 1 else "")
            diff = Decimal(mean([r["mean_iou"] for r in d])) - Decimal(mean([r["mean_iou"] for r in p]))
            verdict = "within 1 point" if abs(diff) <= 1 else "more than 1 point apart"
            rows.append([f"`{run['loss']}` ({run['config']})", ", ".join(str(r["seed"]) for r in d), epochs, ious(d),
                         ious(p), f"{diff:+} ({verdict})", ", ".join(f"{r['epoch_time_ratio']:.2f}" for r in t)])
    caption = "The config's `Loss` on both sides, 2 threads each: " + "; ".join(
        f"`{r['loss']}` {r['date']}, {r['machine']}, {r['peer']}, {r['times']}" for r in runs) + "."
    return [caption, ""] + table(["loss", "seeds", "epochs", "dltrain mean IoU %", "PyTorch mean IoU %",
                                  "dltrain − PyTorch", "time per epoch dltrain / PyTorch"],
                                 ["---", "---", "---:", "---", "---", "---:", "---:"], rows)


def dp_overlap(res):
    rows = [[r["network"], r["buckets"], f"{r['compute_ms_per_iteration']:.1f}", f"{r['exposed_allreduce_ms']:.2f}",
             n(r["train_images_per_second"])] for r in res.rows("2026-11-21-cpuvm-dp_overlap.jsonl")]
    return table(["network", "buckets", "compute ms / iteration", "exposed all-reduce ms", "train img/s"],
                 ["---", "---", "---:", "---:", "---:"], rows)


def mobilenet_blocks(res):
    rows = [[r["block"], f"{r['one_by_one_ms']} ms", f"{r['one_op_ms']} ms"]
            for r in res.rows("2026-11-28-cpuvm-mobilenet_v2-blocks.jsonl")]
    return table(["block (batch 32; dltrain against itself, no peer)", "one by one", "one op"], ["---", "---:", "---:"], rows)


def onnx_inference_cpu(res):
    """scripts/bench/onnx_inference_vs_peers' table from its newest result file."""
    f = res.latest("-onnx_inference_vs_peers.jsonl")
    run = res.run(f)

    def cell(r, side):
        ms = r[side]
        ips = r.get(side + "_images_per_second", run["batch"] / ms * 1e3)
        load = r.get(side + "_load")
        return f"{ms:.0f} ms ({ips:.1f} img/s)" + (f", foreign load {load:.1f}" if load is not None and load >= 0.3 else "")
    rows = []
    for r in res.rows(f):
        if "dltrain" not in r:
            rows.append([r["network"], f"import failed: {r.get('dltrain_error', '?')}", cell(r, "pytorch"),
                         cell(r, "onnxruntime"), "—"])
            continue
        ratio = r.get("ratio", min(r["pytorch"], r["onnxruntime"]) / r["dltrain"])
        spread = f" ({r['ratio_min']:.2f}-{r['ratio_max']:.2f})" if "ratio_min" in r and run.get("rounds", 1) > 1 else ""
        rows.append([r["network"], cell(r, "dltrain"), cell(r, "pytorch"), cell(r, "onnxruntime"), f"{ratio:.2f}x{spread}"])
    out = run["header"] + [""] + table(["network", "dltrain", "PyTorch eager", "onnxruntime", "dltrain vs the faster peer"],
                                       ["---"] * 5, rows)
    if any(name.endswith("-onnx_inference_vit.jsonl") for name in os.listdir(res.dir)):
        out += ["", " ".join(onnx_inference_vit(res, f) for f in res.latest_per_machine("-onnx_inference_vit.jsonl"))]
    return out


def onnx_inference_vit(res, f):
    """The transformers' run of onnx_inference_vs_peers (--result onnx_inference_vit) in file F as one sentence."""
    run = res.run(f)
    parts = []
    for r in res.rows(f):
        if "dltrain" not in r:
            parts.append(f"{r['network']} import failed: {r.get('dltrain_error', '?')}")
            continue
        load = max(r.get(s + "_load", 0) for s in ("dltrain", "pytorch", "onnxruntime"))
        # measured in rounds (--rounds): the per-round ratios' range
        spread = (f" ({r['ratio_min']:.2f}-{r['ratio_max']:.2f} over its rounds)"
                  if r.get("ratio_max", 0) - r.get("ratio_min", 0) > 1e-9 else "")
        parts.append(f"{r['network']} dltrain {r['dltrain']:.0f} ms, PyTorch {r['pytorch']:.0f} ms, onnxruntime "
                     f"{r['onnxruntime']:.0f} ms: {min(r['pytorch'], r['onnxruntime']) / r['dltrain']:.2f}x{spread}"
                     + (f" (foreign load up to {load:.1f} cores)" if load >= 0.3 else "")
                     # a row measured by another run of the bench, added to this file
                     + (f" (`{bench_command(r['run_command'])}`, {r['run_date']}, {r['run_machine']}, "
                        f"{r['run_peers']})" if "run_command" in r else ""))
    torch = re.search(r"PyTorch (\S+) eager", run["header"][0])
    ort = re.search(r"onnxruntime (\S+?)[;,]", run["header"][0])
    return (f"Imported transformers (`{bench_command(run['command'])}`, {run['date']}, {run['machine']}, batch {run['batch']}, "
            f"PyTorch {torch.group(1) if torch else '?'} eager, onnxruntime {ort.group(1) if ort else '?'}; dltrain "
            f"reads the one-image export, onnxruntime one with a symbolic batch): " + "; ".join(parts) + ".")


def finetune_twin(res):
    """scripts/bench/finetune_vs_pytorch's table from its newest result file."""
    f = res.latest("-finetune_vs_pytorch.jsonl")
    run = res.run(f)
    rows = []
    for r in res.rows(f):
        if "dltrain_error" in r:
            rows.append([r["network"], f"failed: {r['dltrain_error']}", "", "", "", "", ""])
            continue
        name = r["network"] + (f" ({r['pretrained']:.1f}%)" if r.get("pretrained") is not None else "")
        diff = r.get("difference", r["dltrain_accuracy_mean"] - r["pytorch_accuracy_mean"])
        speedup = r.get("speedup", r["pytorch_epoch_s"] / r["dltrain_epoch_s"])
        rows.append([name, f"{r['dltrain_accuracy_mean']:.1f}% ± {r['dltrain_accuracy_sd']:.1f}",
                     f"{r['pytorch_accuracy_mean']:.1f}% ± {r['pytorch_accuracy_sd']:.1f}", f"{diff:+.1f}",
                     f"{r['dltrain_epoch_s']:.1f}", f"{r['pytorch_epoch_s']:.1f}", f"{speedup:.2f}x"])
    out = run["header"] + [""] + table(["network", "dltrain accuracy", "PyTorch accuracy", "difference", "dltrain s / epoch",
                                        "PyTorch s / epoch", "dltrain speed-up"], ["---"] * 7, rows)
    if any(name.endswith("-finetune_vit_vs_pytorch.jsonl") for name in os.listdir(res.dir)):
        out += ["", finetune_vit(res)]
    return out


def finetune_vit(res):
    """The imported ViT's fine-tuning (finetune_vs_pytorch --networks vit_small --result
    finetune_vit_vs_pytorch) as one sentence under the CNNs' table."""
    f = res.latest("-finetune_vit_vs_pytorch.jsonl")
    run = res.run(f)
    r = res.rows(f)[0]
    if "dltrain_error" in r:
        return f"An imported ViT ({r['network']}, `{run['command']}`): dltrain failed: {r['dltrain_error']}."
    torch = re.search(r"PyTorch (\d[^\s,;]*?)\.?(?:\s|$)", run["header"][0])
    return (f"An imported ViT (`{bench_command(run['command'])}`; {run['machine']}, {run['threads']} threads; PyTorch "
            f"{torch.group(1) if torch else '?'}): torchvision's "
            f"VisionTransformer at 32x32 (4x4 patches, 4 blocks of 3 heads, width 96) pretrained by PyTorch on "
            f"CIFAR-10 ({r['pretrained']:.1f}%), exported with one image, fine-tuned at 32x32 with the options above: "
            f"dltrain {r['dltrain_accuracy_mean']:.1f}% ± {r['dltrain_accuracy_sd']:.1f}, PyTorch "
            f"{r['pytorch_accuracy_mean']:.1f}% ± {r['pytorch_accuracy_sd']:.1f}; {r['dltrain_epoch_s']:.1f} s against "
            f"{r['pytorch_epoch_s']:.1f} s per epoch." + (f" {run['note']}" if run.get("note") else ""))


def bench_command(command):
    """A result's command without the options that name this machine's paths or the result file."""
    return re.sub(r" --(venv|data|machine|result|dltrain) \S+| --write-docs", "", command)


def regression_twin(res):
    """scripts/bench/regression_vs_pytorch.py's table from its newest result file."""
    f = res.latest("-regression_vs_pytorch.jsonl")
    run = res.run(f)
    runs = res.rows(f, kind="run")
    summary = res.one(f, kind="summary")

    def cell(seed, side, key, fmt):
        r = next((r for r in runs if r["seed"] == seed and r["side"] == side), None)
        if r is None:
            return "—"
        if "error" in r:
            return f"failed: {r['error']}"
        load = r.get("foreign_load_cores", 0)
        return format(r[key], fmt) + (f" (load {load:.1f})" if key == "seconds_per_epoch" and load >= 0.3 else "")
    rows = [[seed, cell(seed, "dltrain", "validation_rmse", ".3f"), cell(seed, "pytorch", "validation_rmse", ".3f"),
             cell(seed, "dltrain", "seconds_per_epoch", ".2f"), cell(seed, "pytorch", "seconds_per_epoch", ".2f")]
            for seed in summary["seeds"]]
    d = [r for r in runs if r["side"] == "dltrain" and "error" not in r]
    p = [r for r in runs if r["side"] == "pytorch" and "error" not in r]
    if d and p:
        dm, pm = (sum(r["validation_rmse"] for r in rs) / len(rs) for rs in (d, p))
        dt, pt = (sum(r["seconds_per_epoch"] for r in rs) / len(rs) for rs in (d, p))
        rows.append(["mean", f"{dm:.3f}", f"{pm:.3f} (dltrain / PyTorch {dm / pm:.3f})", f"{dt:.2f}",
                     f"{pt:.2f} (dltrain / PyTorch {dt / pt:.2f})"])
    caption = (f"{run['date']}, {run['cpu_model']} ({run['isa']}), {run['threads']} threads; {run['dltrain']} against "
               f"PyTorch {run['torch']}; {run['epochs']} epochs, {run['train_images']:,} / {run['test_images']:,} "
               f"digits; RMSE in degrees on the test digits.")
    return [caption, ""] + table(["seed", "dltrain RMSE", "PyTorch RMSE", "dltrain s / epoch", "PyTorch s / epoch"],
                                        ["---:", "---:", "---:", "---:", "---:"], rows)


def seed_list(seeds):
    """'0-15' for consecutive seeds, else '0, 2, 5'."""
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def multilabel_twin(res):
    """scripts/bench/multilabel_vs_pytorch.py's table from its newest result file: one row per side;
    the caption gives the twin's F1 from dltrain's start and order (its same_start rows) when the
    file has them."""
    f = res.latest("-multilabel_vs_pytorch.jsonl")
    run = res.run(f)
    runs = res.rows(f, kind="run")
    summary = res.one(f, kind="summary")
    pairs = [r for r in res.rows(f, kind="same_start") if "error" not in r]
    rows = []

    def row(label, rs):
        per_seed = ", ".join(f"failed: {r['error']}" if "error" in r else f"{100 * r['f1']:.1f}" for r in rs)
        ok = [r for r in rs if "error" not in r]
        if not ok:
            return [label, per_seed, "—", "—", "—"]
        load = max(r.get("foreign_load_cores", 0) for r in ok)
        return [label, per_seed, f"{100 * sum(r['f1'] for r in ok) / len(ok):.2f}",
                f"{100 * sum(r['jaccard'] for r in ok) / len(ok):.1f}",
                f"{sum(r['seconds_per_epoch'] for r in ok) / len(ok):.2f}" + (f" (load {load:.1f})" if load >= 0.3 else "")]
    for side, label in (("dltrain", run["dltrain"]), ("pytorch", f"PyTorch {run['torch']}")):
        rows.append(row(label, [next((r for r in runs if r["seed"] == seed and r["side"] == side), {"error": "missing"})
                                for seed in summary["seeds"]]))
    same = ""
    if pairs:
        diffs = [r["f1_difference_points"] for r in pairs]
        twin = ", ".join(f"{100 * r['pytorch_f1']:.1f}" for r in pairs)
        ours = ", ".join(f"{100 * r['dltrain_f1']:.1f}" for r in pairs)
        same = (f". From dltrain's start and order for the whole run (its initial network and mini-batches for the "
                f"seed) the twin's F1 is {twin} (seeds {seed_list(r['seed'] for r in pairs)}; dltrain's {ours}): "
                f"dltrain {sum(diffs) / len(diffs):+.2f} points from it on average, at most "
                f"{max(abs(d) for d in diffs):.2f} in one seed, the mini-batch losses within "
                f"{max(r['max_loss_difference'] for r in pairs):.0e}")
    caption = (f"Multi-label, `scripts/bench/multilabel_vs_pytorch.py`: {run['config']} against `pytorch_multilabel.py`, "
               f"{run['date']}, {run['cpu_model']} ({run['isa']}), {run['threads']} threads; {run['epochs']} epochs, "
               f"{run['train_images']:,} / {run['test_images']:,} `make-dataset shapes-multi` images; F1 and Jaccard in "
               f"% on the test images (threshold 0.5); {summary['verdict'].split(' (')[0]} over "
               f"{len(summary['seeds'])} seeds{same}.")
    return [caption, ""] + table(["side", f"F1, seeds {seed_list(summary['seeds'])}", "mean F1",
                                  "mean Jaccard", "s / epoch"], ["---", "---:", "---:", "---:", "---:"], rows)


def vit_twin(res):
    """scripts/bench/vit_vs_pytorch.py's table from its newest result file: one row per side."""
    f = res.latest("-vit_vs_pytorch.jsonl")
    run = res.run(f)
    runs = res.rows(f, kind="run")
    summary = res.one(f, kind="summary")
    rows = []
    for side, label in (("dltrain", run["dltrain"] or "dltrain"), ("pytorch", f"PyTorch {run['torch']}")):
        rs = [r for r in runs if r["side"] == side]
        ok = [r for r in rs if "error" not in r]
        if not rs:
            rows.append([label, "not run", "—", "—", "—"])
            continue
        per_seed = ", ".join(f"failed: {r['error']}" if "error" in r else f"{r['test_accuracy']:.2f}" for r in rs)
        if not ok:
            rows.append([label, per_seed, "—", "—", "—"])
            continue
        load = max(r.get("foreign_load_cores", 0) for r in ok)
        rows.append([label, per_seed, mean([r["test_accuracy"] for r in ok]),
                     mean([r["seconds_per_epoch"] for r in ok], 1) + (f" (load {load:.1f})" if load >= 0.3 else ""),
                     n(max(r["peak_rss_mib"] for r in ok))])
    caption = (f"ViT, `scripts/bench/vit_vs_pytorch.py`: {run['config']} against `pytorch_vit.py`, {run['date']}, "
               f"{run['cpu_model']} ({run['isa']}), {run['threads']} threads; {run['epochs']} epochs on "
               f"{run['train_images']:,} CIFAR-10 training images, test accuracy on {run['test_images']:,}; "
               f"{summary['verdict'].split(' (')[0]}." + (f" {run['note']}" if run.get("note") else ""))
    return [caption, ""] + table(["side", f"test accuracy %, seeds {', '.join(str(s) for s in summary['seeds'])}",
                                  "mean", "s / epoch", "peak MiB"], ["---", "---:", "---:", "---:", "---:"], rows) + \
        ["", attention_memory(res)]


def attention_memory(res):
    """scripts/bench/attention_memory.py's newest result as one sentence: MiB per image per side."""
    f = res.latest("-attention_memory.jsonl")
    run = res.run(f)
    rows = res.rows(f)
    per = ", ".join(f"{r['tokens']} tokens {r['dltrain_mib_per_image']:.1f} MiB ({r['pytorch_mib_per_image']:.1f})"
                    for r in rows)
    return (f"Attention memory (`scripts/bench/attention_memory.py`, {run['date']}, {run['cpu']}, {run['isa']}): one "
            f"selfAttention of {rows[0]['channels']} channels and {rows[0]['heads']} heads in a training step, peak "
            f"resident memory per image from batches {rows[0]['batches'][0]} and {rows[0]['batches'][1]}, dltrain "
            f"({run['peer']} eager `nn.MultiheadAttention`): {per}.")


# ---- GPU ----

GPU = "2026-11-27-h200-gpu_vs_pytorch.jsonl"


def gpu_training(res):
    rows = []
    for d in res.rows(GPU, source="dltrain"):
        for mode, key in (("train", "train_images_per_second"), ("inference", "inference_images_per_second")):
            strict = res.one(GPU, network=d["network"], preset="strict", mode=mode)["images_per_second"]
            tf32 = res.one(GPU, network=d["network"], preset="default", mode=mode)["images_per_second"]
            rows.append([d["network"], mode, d["batch"], n(d[key]), n(strict), f"{d[key] / strict:.2f}", n(tf32),
                         f"{d[key] / tf32:.2f}"])
    return table(["network", "mode", "batch", "dltrain", "PyTorch fp32", "ratio", "PyTorch TF32 convs (its default)", "ratio"],
                 ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"], rows)


def gpu_mixed(res):
    rows = []
    for d in res.rows(GPU, source="dltrain-mixed"):
        for mode, key in (("train", "train_images_per_second"), ("inference", "inference_images_per_second")):
            p = res.one(GPU, network=d["network"], preset="mixed", mode=mode)["images_per_second"]
            rows.append([d["network"], mode, d["batch"], n(d[key]), n(p), f"{d[key] / p:.2f}"])
    return table(["network", "mode", "batch", "dltrain mixed", "PyTorch autocast bf16", "ratio"],
                 ["---", "---", "---:", "---:", "---:", "---:"], rows)


def gpu_switches(res):
    rows = []
    for r in sorted(res.rows("2026-11-27-h200-resnet18-switches.jsonl"),
                    key=lambda r: (r["precision"] != "single", r["batch_norm_kernels"] != "cudnn",
                                   r["allow_reduced_precision_reduction"])):
        sw = f"`BatchNormKernels: {r['batch_norm_kernels']}`" + (" (default)" if r["batch_norm_kernels"] == "cudnn" else "")
        if r["allow_reduced_precision_reduction"]:
            sw += ", `AllowReducedPrecisionReduction`"
        rows.append(["float32" if r["precision"] == "single" else r["precision"], sw, f"{r['train_step_ms']:.2f} ms",
                     f"{r['inference_ms']:.2f} ms"])
    return table(["precision", "switch", "training step", "inference"], ["---", "---", "---:", "---:"], rows)


def gpu_profile(res):
    sums, section = {}, None
    for line in res.text("2026-11-27-h200-resnet18-profile-dltrain.txt").splitlines():
        if line.startswith("=="):
            section = "mixed" if "Precision=mixed" in line else "single"
            sums[section] = {}
            continue
        p = line.split()
        if section and len(p) >= 4 and re.fullmatch(r"[\d.]+", p[2]) and re.fullmatch(r"[\d.]+", p[3]):
            s = sums[section].setdefault(p[1], [0.0, 0.0])
            s[0] += float(p[2])
            s[1] += float(p[3])
    torch = {(r["precision"], r["kind"]): r["cuda_ms"] for r in res.rows("2026-11-27-h200-resnet18-profile-pytorch-ops.jsonl")}
    kinds = [("convolutions forward", "convolution2d", (0,)), ("convolutions backward", "convolution2d", (1,)),
             ("batch norm forward + backward", "batchNormalization", (0, 1)), ("relu forward + backward", "relu", (0, 1))]
    rows = []
    for kind, layer, parts in kinds:
        row = [kind]
        for prec in ("single", "mixed"):
            row += [f"{sum(sums[prec][layer][i] for i in parts):.2f}", f"{torch[(prec, kind)]:.2f}"]
        rows.append(row)
    return table(["", "dltrain float32", "PyTorch float32", "dltrain mixed", "PyTorch autocast bf16"],
                 ["---", "---:", "---:", "---:", "---:"], rows)


def gpu_engines(res):
    rows = []
    f = "2026-11-26-h200-cudnn_engines.jsonl"
    for a in res.rows(f, cudnn_engines="legacy"):
        b = res.one(f, cudnn_engines="auto", network=a["network"], precision=a["precision"])
        cells = []
        for key, speedup in (("train_step_ms", "train_speedup"), ("inference_ms", "inference_speedup")):
            cells.append(f"{a[key]:.2f} → {b[key]:.2f} ms" + (f" ({b[speedup]:.2f}×)" if speedup in b else ""))
        rows.append([f"{a['network']}, {a['batch']}", a["precision"]] + cells)
    return table(["network, batch", "precision", "training step legacy → auto", "inference legacy → auto"],
                 ["---", "---", "---:", "---:"], rows)


def onnx_gpu(res):
    runs = res.rows("2026-11-27-h200-onnx_inference.jsonl")
    rtc = [r for r in runs if "dltrain_ms_rtc" in r]
    off = [r["dltrain_ms"] for r in runs]
    peer = [r["pytorch_ms"] for r in runs]
    r = rtc[-1]
    return table(["mobilenet_v2, batch 256", "dltrain", "PyTorch eager", "PyTorch / dltrain"], ["---", "---:", "---:", "---:"], [
        ["`CudnnRuntimeCompiled: true` (the default)",
         f"{r['dltrain_ms_rtc']:.2f} ms ({n(r['batch'] * 1000 / r['dltrain_ms_rtc'])} img/s)",
         f"{r['pytorch_ms']:.2f} ms", f"**{r['pytorch_ms'] / r['dltrain_ms_rtc']:.2f}×**"],
        [f"`CudnnRuntimeCompiled: false` ({len(runs)} runs)", f"{min(off):.1f}–{max(off):.1f} ms",
         f"{min(peer):.1f}–{max(peer):.1f} ms", f"{min(p / o for p, o in zip(peer, off)):.2f}×"]])


def camvid_gpu(res):
    f, s = "2026-11-27-h200-camvid-segnet.jsonl", "2026-11-27-h200-camvid-segnet-steps.jsonl"
    d, p = res.one(f, side="dltrain"), res.one(f, side="pytorch")
    ds, ps = res.one(s, side="dltrain"), res.one(s, side="pytorch")
    mem = lambda r: "—" if r["peak_gpu_memory_gb"] is None else f"{r['peak_gpu_memory_gb']:.1f} GB"  # noqa: E731
    return table(["", "dltrain", "PyTorch"], ["---", "---:", "---:"], [
        [f"training step, {d['mini_batch_size']} images (steady)", f"{ds['steady_step_ms']:.1f} ms", f"{ps['steady_step_ms']:.1f} ms"],
        [f"first iteration (dltrain: {ds['first_iteration']}) / {ps['first_iteration']} (PyTorch)",
         f"{ds['first_iteration_s']:.1f} s", f"{ps['first_iteration_s']:.1f} s"],
        [f"training images/s over the {d['epochs']} epochs", f"{d['train_images_per_second']:.1f}", f"{p['train_images_per_second']:.1f}"],
        [f"val mean IoU after {d['epochs']} epochs", f"{100 * d['MeanIoU']:.2f} %", f"{100 * p['MeanIoU']:.2f} %"],
        [f"val global accuracy after {d['epochs']} epochs", f"{100 * d['GlobalAccuracy']:.2f} %", f"{100 * p['GlobalAccuracy']:.2f} %"],
        ["peak GPU memory", mem(ds), mem(ps)]])


def scaling_model(res):
    rows = [[r["setup"], n(r["cifar10_images_per_second"]), f"{r['cifar10_efficiency']:g} %", n(r["resnet18_images_per_second"]),
             f"{r['resnet18_efficiency']:g} %"] for r in res.rows("2026-11-26-model-scaling_model.jsonl")]
    return table(["setup", "cifar10 img/s", "efficiency", "resnet18-cifar img/s", "efficiency"],
                 ["---", "---:", "---:", "---:", "---:"], rows)


TABLES = {f.__name__: f for f in (cpu_training, winograd_avx2, cpu_mixed, data_vs_pil, cifar10_accuracy, camvid_cpu,
                                   camvid_losses, dp_overlap, finetune_twin, regression_twin, multilabel_twin, vit_twin,
                                   onnx_inference_cpu, mobilenet_blocks,
                                   gpu_training, gpu_mixed, gpu_switches, gpu_profile, gpu_engines, onnx_gpu, camvid_gpu,
                                   scaling_model)}


def generate(name, results_dir):
    """The table's lines; its first header cell links the result files it was made from."""
    res = Results(results_dir)
    lines = TABLES[name](res)
    links = ", ".join(f"[{i}](results/{u})" for i, u in enumerate(res.used, 1)) if len(res.used) > 1 else \
        f"[results](results/{res.used[0]})"
    at = next(i for i, line in enumerate(lines) if line.startswith("|"))
    first = lines[at].split(" | ", 1)
    lines[at] = f"| {links} | {first[1]}" if first[0].strip() == "|" else f"{first[0]} ({links}) | {first[1]}"
    return lines, res.used


def render(page_lines, results_dir):
    """The page with every marked table regenerated; unknown or unclosed markers are errors."""
    out, i, seen = [], 0, []
    while i < len(page_lines):
        line = page_lines[i]
        out.append(line)
        m = MARK.match(line)
        i += 1
        if not m:
            continue
        name = m.group(1)
        if name not in TABLES:
            raise SystemExit(f"perf_page: line {i}: unknown table '{name}' (known: {', '.join(TABLES)})")
        j = i
        while j < len(page_lines) and page_lines[j] != END and not MARK.match(page_lines[j]):
            j += 1
        if j == len(page_lines) or page_lines[j] != END:
            raise SystemExit(f"perf_page: line {i}: table '{name}' has no '{END}' after it")
        out += generate(name, results_dir)[0] + [END]
        seen.append(name)
        i = j + 1
    missing = [t for t in TABLES if t not in seen]
    if missing:
        raise SystemExit(f"perf_page: the page has no marker for: {', '.join(missing)}")
    return out


def save_result(bench, machine, run, rows, results_dir=os.path.join(ROOT, "docs/results"),
                page=os.path.join(ROOT, "docs/performance.md")):
    """What a benchmark's --write-docs calls: its JSON lines as results/DATE-MACHINE-BENCH.jsonl
    (date: today, UTC), the first line {"run": run}; then the page's tables are regenerated."""
    day = time.strftime("%Y-%m-%d", time.gmtime())
    path = os.path.join(results_dir, f"{day}-{machine}-{bench}.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"run": dict(run, bench=bench, date=day)}, ensure_ascii=False) + "\n")
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"perf_page: wrote {path}")
    main(["--results", results_dir, "--page", page])
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", default=os.path.join(ROOT, "docs/performance.md"))
    ap.add_argument("--results", default=os.path.join(ROOT, "docs/results"))
    ap.add_argument("--check", action="store_true", help="exit 1 when the page's tables differ from the result files")
    ap.add_argument("--list", action="store_true", help="list the tables and the result files each reads")
    args = ap.parse_args(argv)
    if args.list:
        for name in TABLES:
            print(f"{name}: {', '.join(generate(name, args.results)[1])}")
        return 0
    with open(args.page, encoding="utf-8") as f:
        page = f.read().split("\n")
    new = render(page, args.results)
    if new == page:
        print(f"perf_page: {os.path.relpath(args.page)}: {len(TABLES)} tables match docs/results")
        return 0
    if args.check:
        sys.stdout.writelines(difflib.unified_diff([l + "\n" for l in page], [l + "\n" for l in new],
                                                   args.page, "generated from " + args.results))
        print(f"perf_page: {args.page}'s tables differ from the result files; run "
              "`python3 scripts/bench/perf_page.py` to regenerate them (or fix the result file)", file=sys.stderr)
        return 1
    with open(args.page, "w", encoding="utf-8") as f:
        f.write("\n".join(new))
    print(f"perf_page: rewrote the tables of {os.path.relpath(args.page)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Peak memory of self-attention per image, dltrain against PyTorch, at 64, 197 and 1024 tokens.

One selfAttention layer of ViT-B's size (768 channels, 12 heads) trained for a step on each
side: dltrain `dltrain time` on a config of imageInput [S 1 768] -> patchEmbedding 1x1 (the
tokens' projection) -> selfAttention -> globalAveragePooling1d -> fullyConnected 10 -> softmax
-> classification; PyTorch the same in eager mode (Linear, nn.MultiheadAttention with
batch_first, its scaled_dot_product_attention path, mean over the tokens, Linear,
cross-entropy, backward). Each side runs in its own process at two batch sizes; the peak
resident memory (getrusage's ru_maxrss of the child) at the larger minus at the smaller, over
the difference in images, is the memory per image (the fixed costs, libraries and weights,
cancel). Both on 2 threads.

  scripts/bench/attention_memory.py [--tokens "64 197 1024"] [--batches "2 6"]
      [--repeats 3] [--dltrain build/dltrain] [--python build/zoo-venv/bin/python] [--out FILE.jsonl]

Each peak is the median of --repeats runs (PyTorch's moves by MiBs from run to run, dltrain's
by KiBs). About 12 minutes on 2 cores.

Prints a table; with --out appends a {"run": ...} line (date, CPU, oneDNN's ISA, PyTorch's
version) and one JSON line per token count to FILE.jsonl (perf_page.py's attention_memory(), the
sentence under docs/performance.md's vit_twin table, reads docs/results/*-attention_memory.jsonl).
"""
import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile

CHANNELS, HEADS, CLASSES = 768, 12, 10

TORCH_STEP = r"""
import resource, sys, torch
torch.set_num_threads(2)
torch.manual_seed(0)
s, c, h, n, k = (int(a) for a in sys.argv[1:6])
proj = torch.nn.Linear(c, c)
mha = torch.nn.MultiheadAttention(c, h, batch_first=True)
head = torch.nn.Linear(c, k)
x = torch.rand(n, s, c)
y = torch.randint(0, k, (n,))
for _ in range(2):
    t = proj(x)
    a, _ = mha(t, t, t, need_weights=False)
    loss = torch.nn.functional.cross_entropy(head(a.mean(dim=1)), y)
    loss.backward()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, torch.__version__)
"""


def dltrain_config(tokens):
    return f"""layers:
  - {{type: imageInput, Name: input, InputSize: [{tokens}, 1, {CHANNELS}], Normalization: none}}
  - {{type: patchEmbedding, Name: tokens, PatchSize: 1, OutputSize: {CHANNELS}}}
  - {{type: selfAttention, Name: attention, NumHeads: {HEADS}, NumKeyChannels: {CHANNELS}}}
  - {{type: globalAveragePooling1d, Name: pool}}
  - {{type: fullyConnected, Name: fc, OutputSize: {CLASSES}}}
  - {{type: softmax, Name: softmax}}
  - {{type: classification, Name: output}}
training:
  MiniBatchSize: 2
"""


def cfg_for_isa(tmp):
    """A small config to ask dltrain which ISA it runs at."""
    path = os.path.join(tmp, "isa.yaml")
    with open(path, "w") as f:
        f.write(dltrain_config(4))
    return path


def measure(cmd, env=None):
    """Peak KiB of one run of cmd, in a fresh intermediate process (so RUSAGE_CHILDREN is its own)."""
    probe = ("import resource, subprocess, sys\n"
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.PIPE)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", probe] + cmd, env=env, check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", default="64 197 1024")
    ap.add_argument("--batches", default="4 16")
    ap.add_argument("--repeats", type=int, default=3, help="runs per side and batch; the median counts")
    ap.add_argument("--dltrain", default="build/dltrain")
    ap.add_argument("--python", default="build/zoo-venv/bin/python")
    ap.add_argument("--out")
    a = ap.parse_args()
    b1, b2 = (int(b) for b in a.batches.split())
    if not 0 < b1 < b2:
        sys.exit("--batches: two batch sizes, the first smaller")
    env = dict(os.environ, OMP_NUM_THREADS="2")
    torch_version = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], check=True,
                                   capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in (int(t) for t in a.tokens.split()):
            cfg = os.path.join(tmp, f"attention-{s}.yaml")
            with open(cfg, "w") as f:
                f.write(dltrain_config(s))
            peaks = {}
            for side in ("dltrain", "pytorch"):
                for b in (b1, b2):
                    if side == "dltrain":
                        cmd = [a.dltrain, "time", cfg, "--batch", str(b), "--iterations", "1", "--repeats", "1",
                               "--warmup", "1", "--threads", "2"]
                    else:
                        cmd = [a.python, "-c", TORCH_STEP, str(s), str(CHANNELS), str(HEADS), str(b), str(CLASSES)]
                    # The median of --repeats runs: PyTorch's peak moves by MiBs between runs (when
                    # its allocator returns freed blocks), dltrain's by a few KiB.
                    runs = sorted(measure(cmd, env) for _ in range(a.repeats))
                    peaks[(side, b)] = runs[len(runs) // 2]
            row = {"tokens": s, "channels": CHANNELS, "heads": HEADS, "batches": [b1, b2], "repeats": a.repeats}
            for side in ("dltrain", "pytorch"):
                row[f"{side}_peak_mib"] = [round(peaks[(side, b)] / 1024, 1) for b in (b1, b2)]
                row[f"{side}_mib_per_image"] = round((peaks[(side, b2)] - peaks[(side, b1)]) / 1024 / (b2 - b1), 2)
            rows.append(row)
            print(f"{s:5d} tokens: dltrain {row['dltrain_mib_per_image']:8.2f} MiB/image, "
                  f"PyTorch {row['pytorch_mib_per_image']:8.2f} MiB/image", flush=True)
    if a.out:
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        # The ISA oneDNN runs at, from its verbose line ("...,cpu,isa:Intel AVX-512 with ...").
        info = subprocess.run([a.dltrain, "time", cfg_for_isa(tempfile.mkdtemp()), "--batch", "1", "--iterations", "1",
                               "--repeats", "1", "--warmup", "0"], env=dict(env, DNNL_VERBOSE="1"),
                              capture_output=True, text=True)
        isa = next((l.split("isa:", 1)[1].strip() for l in (info.stdout + info.stderr).splitlines() if "isa:" in l),
                   "?")
        with open(a.out, "a") as f:
            f.write(json.dumps({"run": {"bench": "attention_memory.py", "date": str(datetime.date.today()),
                                        "cpu": cpu, "isa": isa, "machine": platform.machine(),
                                        "peer": f"PyTorch {torch_version}", "threads": 2}}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
    print("| tokens | dltrain MiB/image | PyTorch MiB/image |")
    print("|---:|---:|---:|")
    for r in rows:
        print(f"| {r['tokens']} | {r['dltrain_mib_per_image']} | {r['pytorch_mib_per_image']} |")


if __name__ == "__main__":
    main()

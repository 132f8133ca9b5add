#!/usr/bin/python3
"""How far dltrain can get ahead of PyTorch when both run oneDNN's convolutions (issue 20).

For each network and ISA cap: dltrain's step and the time its convolution layers take
(`dltrain time --json`: per-layer forward and backward milliseconds), and the fastest PyTorch
row's step and convolution time (scripts/bench/pytorch_cpu.py --profile-convs: eager
channels_last and torch.compile of the current PyTorch in --venv, plus Debian's 1.13).

  bound = fastest peer's ms per step / dltrain's convolution ms per step

is the ratio dltrain would reach if everything around its convolutions took no time at all;
when it is below a target, only faster convolutions (another algorithm, newer kernels) can meet
it. conv ratio = the peer's convolution ms / dltrain's: below 1, the peer's convolution kernels
are faster than dltrain's on that ISA. Prints a markdown table, then the CPU model and the ISA
dltrain's oneDNN dispatches to under each cap (its verbose 'isa:' line); raw JSON lines, which
carry both, with --jsonl.

  /usr/bin/python3 scripts/bench/conv_bound.py [--networks "cifar10 cifar10-bn"]
      [--isa "native avx2"] [--venv build/bench-venv] [--jsonl FILE] [--batch N] [--rounds N]

--rounds N measures dltrain and the peers N times in turn (dltrain, then each peer, per round)
and reports the medians, with the lowest and highest per-round ratio: on a shared VM the memory
bandwidth a run gets drifts over minutes, and one round's ratio can be off by 10-15%.

Environment: DLTRAIN (default build/dltrain). Run on idle cores: nothing here waits for them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONV_TYPES = {"convolution2d", "groupedConvolution2d", "transposedConv2d"}
AVX2_CAP = {"DNNL_MAX_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
BATCH = {"resnet18-cifar": 128}
ITERATIONS = {"resnet18-cifar": 2}


def run_json(cmd, env, required=True):
    """The JSON lines cmd prints. A peer that fails (torch.compile can) leaves a warning and
    whatever rows it printed before; dltrain must not fail."""
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip().startswith("{")]
    if proc.returncode != 0:
        last = [line for line in proc.stderr.splitlines() if line.strip()][-1:] or ["(no message)"]
        msg = f"conv_bound: {' '.join(cmd)} exited {proc.returncode}: {last[0]}"
        if required:
            raise SystemExit(msg)
        sys.stderr.write(msg + "\n")
    if required and not rows:
        raise SystemExit(f"conv_bound: no JSON from {' '.join(cmd)}")
    return rows


def dltrain_rows(dltrain, config, batch, iterations, env):
    r = run_json([dltrain, "time", config, "--batch", str(batch), "--iterations", str(iterations * 5),
                  "--repeats", "3", "--json"], env)[0]
    convs = [layer for layer in r["layers"] if layer["type"] in CONV_TYPES]
    fwd = sum(layer["forward_ms"] for layer in convs)
    bwd = sum(layer["backward_ms"] for layer in convs)
    return {"train": (r["train_step_ms"], fwd + bwd), "inference": (r["inference_ms"], fwd)}


def cpu_model():
    """The CPU's model name (/proc/cpuinfo), or "?"."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def dltrain_isa(dltrain, config, env):
    """The ISA dltrain's oneDNN dispatches to under env: its verbose 'info,cpu,isa:' line."""
    proc = subprocess.run([dltrain, "time", config, "--batch", "2", "--iterations", "1", "--warmup", "0",
                           "--repeats", "1", "--json"], env=dict(env, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout.splitlines():
        if "info,cpu,isa:" in line:
            return line.split("isa:", 1)[1].strip()
    return "?"


def peer_rows(python, config, preset, batch, iterations, env):
    rows = run_json([python, os.path.join(ROOT, "scripts/bench/pytorch_cpu.py"), config, "--preset", preset,
                     "--batch", str(batch), "--iterations", str(iterations), "--repeats", "5",
                     "--profile-convs"], env, required=False)
    return {r["mode"]: (r["ms_per_iteration"], r["conv_ms_per_iteration"], f"{r['torch']} {preset}") for r in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default="cifar10 cifar10-bn resnet18-cifar")
    ap.add_argument("--isa", default="native avx2")
    ap.add_argument("--venv", default=os.path.join(ROOT, "build/bench-venv"))
    ap.add_argument("--jsonl", default="")
    ap.add_argument("--batch", type=int, default=0, help="override every network's batch (a smoke run)")
    ap.add_argument("--rounds", type=int, default=1, help="measure everything N times in turn; report medians")
    args = ap.parse_args()
    dltrain = os.environ.get("DLTRAIN", os.path.join(ROOT, "build/dltrain"))
    peers = [("/usr/bin/python3", "best")]
    current = os.path.join(args.venv, "bin/python")
    if os.path.exists(current):
        peers += [(current, "best"), (current, "compile")]
    else:
        sys.stderr.write(f"conv_bound: no {current}; Debian's PyTorch is the only peer\n")

    records = []
    model, isas = cpu_model(), {}
    for isa in args.isa.split():
        env = dict(os.environ, OMP_NUM_THREADS="2")
        if isa == "avx2":
            env.update(AVX2_CAP)
        isas[isa] = dltrain_isa(dltrain, os.path.join(ROOT, "configs", args.networks.split()[0] + ".yaml"), env)
        for net in args.networks.split():
            config = os.path.join(ROOT, "configs", net + ".yaml")
            batch, iters = args.batch or BATCH.get(net, 100), ITERATIONS.get(net, 10)
            rounds = []  # per round: {mode: (dltrain step, conv, best peer row)}
            for _ in range(args.rounds):
                ours = dltrain_rows(dltrain, config, batch, iters, env)
                theirs = [peer_rows(py, config, preset, batch, iters, env) for py, preset in peers]
                rounds.append({mode: (*ours[mode], min((t[mode] for t in theirs if mode in t), key=lambda r: r[0]))
                               for mode in ("train", "inference")})
            for mode in ("train", "inference"):
                med = lambda f: statistics.median(f(r[mode]) for r in rounds)  # noqa: E731
                ratios = [r[mode][2][0] / r[mode][0] for r in rounds]
                step, conv = med(lambda m: m[0]), med(lambda m: m[1])
                peer_ms, peer_conv = med(lambda m: m[2][0]), med(lambda m: m[2][1])
                names = sorted({r[mode][2][2] for r in rounds})
                records.append({"isa": isa, "cpu_model": model, "onednn_isa": isas[isa], "network": net, "mode": mode, "batch": batch, "rounds": args.rounds,
                                "dltrain_ms": round(step, 2), "dltrain_conv_ms": round(conv, 2),
                                "peer": "/".join(names), "peer_ms": round(peer_ms, 3),
                                "peer_conv_ms": round(peer_conv, 3), "ratio": round(statistics.median(ratios), 2),
                                "ratio_min": round(min(ratios), 2), "ratio_max": round(max(ratios), 2),
                                "bound": round(peer_ms / conv, 2), "conv_ratio": round(peer_conv / conv, 2)})
                print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    if args.jsonl:
        with open(args.jsonl, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print("| ISA | network | mode | dltrain ms | of it convolutions | fastest peer | peer ms | of it convolutions "
          "| ratio | bound | conv ratio |")
    print("|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in records:
        share = 100 * r["dltrain_conv_ms"] / r["dltrain_ms"]
        pshare = 100 * r["peer_conv_ms"] / r["peer_ms"]
        spread = f" ({r['ratio_min']:.2f}-{r['ratio_max']:.2f})" if r["rounds"] > 1 else ""
        print(f"| {r['isa']} | {r['network']} | {r['mode']} | {r['dltrain_ms']:.1f} | {r['dltrain_conv_ms']:.1f} "
              f"({share:.0f}%) | {r['peer']} | {r['peer_ms']:.1f} | {r['peer_conv_ms']:.1f} ({pshare:.0f}%) "
              f"| {r['ratio']:.2f}{spread} | {r['bound']:.2f} | {r['conv_ratio']:.2f} |")
    print(f"\nCPU: {model}; dltrain's oneDNN ISA: " + ", ".join(f"{k}: {v}" for k, v in isas.items()) + ".")
    if args.rounds > 1:
        print(f"Medians of {args.rounds} rounds; ratio in brackets: the lowest and highest round.")


if __name__ == "__main__":
    main()

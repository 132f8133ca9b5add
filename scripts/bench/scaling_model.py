#!/usr/bin/env python3
"""Data-parallel scaling model: predicted images/s for 1, 2, 4, 8 GPUs and 2 nodes x 8.

Weak scaling (seed 000's rule: the per-GPU mini-batch stays fixed, the global one grows with
the GPU count). One iteration on p GPUs takes
    T(p) = T_compute + exposed_allreduce(p)
where T_compute is the measured single-GPU step (forward + backward + update) and the gradient
all-reduce runs in buckets that start while backward still runs: bucket i becomes ready when
backward has produced its bytes (backward is assumed to produce gradient bytes at a uniform
rate, last layers first), buckets go over the wire one after another, and only the part that
ends after backward is exposed. All-reduce time of S bytes over p ranks (ring, as NCCL uses):
    t(S, p) = latency(p) + 2 (p - 1) / p * S / busbw            (one node, NVLink)
    t(S, nodes x g) = t(S, g) + 2 (n - 1) / n * S / nic_bandwidth   (hierarchical: in-node
      reduce-scatter / all-gather over NVLink, the node's share crossing its NIC)
A worker's input pipeline caps the step at batch / loader images/s (--loader-ips). Inputs are
measured where they can be (T_compute, backward fraction: `dltrain time --gpu 0
--json`; gradient bytes: `dltrain info --json`) and named assumptions otherwise (bus and NIC
bandwidth, latency: public nccl-tests figures until several GPUs are lent).

Usage:
  scaling_model.py --name cifar10 --time-json time.json --info-json info.json
  scaling_model.py --name resnet18 --step-ms 49 --backward-fraction 0.66 --learnables 11178762 --batch 512
Prints a markdown table (add --json for machine-readable output).
"""
import argparse
import json
import math
import sys

# Named assumptions (public nccl-tests figures for H100 SXM systems; replace with
# measurements when a multi-GPU machine is lent).
NVLINK_BUSBW = 450e9  # bytes/s, all-reduce bus bandwidth on 8 H100 SXM (NVLink 4 / NVSwitch)
NVLINK_LATENCY = 8e-6  # seconds per log2(p) step of a small all-reduce inside a node
NIC = {"100 Gb/s": 100e9 / 8 * 0.9, "400 Gb/s": 400e9 / 8 * 0.9}  # bytes/s, 90% of line rate
NIC_LATENCY = 20e-6  # seconds added per inter-node all-reduce
BUCKET_BYTES = 25 * 2**20


def allreduce_seconds(nbytes, gpus_per_node, nodes, nic_bytes_per_s):
    p = gpus_per_node
    t = 0.0
    if p > 1:
        t += NVLINK_LATENCY * math.log2(p) + 2 * (p - 1) / p * nbytes / NVLINK_BUSBW
    if nodes > 1:
        t += NIC_LATENCY + 2 * (nodes - 1) / nodes * nbytes / nic_bytes_per_s
    return t


def exposed_seconds(grad_bytes, backward_s, gpus_per_node, nodes, nic, bucket_bytes):
    if gpus_per_node * nodes == 1:
        return 0.0
    buckets = []
    left = grad_bytes
    while left > 0:
        buckets.append(min(bucket_bytes, left))
        left -= bucket_bytes
    done_bytes, wire_free = 0, 0.0
    for b in buckets:
        done_bytes += b
        ready = backward_s * done_bytes / grad_bytes
        start = max(ready, wire_free)
        wire_free = start + allreduce_seconds(b, gpus_per_node, nodes, nic)
    return max(0.0, wire_free - backward_s)


def predict(step_s, backward_fraction, grad_bytes, batch, bucket_bytes, loader_ips=None):
    rows = []
    setups = [(1, 1, None), (2, 1, None), (4, 1, None), (8, 1, None)]
    setups += [(8, 2, name) for name in NIC]
    for g, n, nic_name in setups:
        nic = NIC[nic_name] if nic_name else NIC["400 Gb/s"]
        exposed = exposed_seconds(grad_bytes, step_s * backward_fraction, g, n, nic, bucket_bytes)
        total = step_s + exposed
        if loader_ips:  # each worker's input pipeline must deliver batch images per step
            total = max(total, batch / loader_ips)
        gpus = g * n
        rows.append({
            "gpus": gpus,
            "setup": f"{n} node x {g}" + (f", {nic_name}" if nic_name else " (NVLink)"),
            "allreduce_ms": 1e3 * allreduce_seconds(grad_bytes, g, n, nic) if gpus > 1 else 0.0,
            "exposed_ms": 1e3 * exposed,
            "step_ms": 1e3 * total,
            "images_per_second": gpus * batch / total,
        })
    for r in rows:  # scaling efficiency: images/s over gpus x the one-GPU images/s
        r["efficiency"] = r["images_per_second"] / (r["gpus"] * rows[0]["images_per_second"])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--time-json", help="dltrain time --json output (measured on one GPU)")
    ap.add_argument("--info-json", help="dltrain info --json output (learnables)")
    ap.add_argument("--step-ms", type=float, help="single-GPU training step (ms) instead of --time-json")
    ap.add_argument("--backward-fraction", type=float, default=None,
                    help="share of the step spent in backward (default: from --time-json layers, else 2/3)")
    ap.add_argument("--learnables", type=int, help="instead of --info-json")
    ap.add_argument("--batch", type=int, help="per-GPU mini-batch (default: from --time-json)")
    ap.add_argument("--bucket-mb", type=float, default=BUCKET_BYTES / 2**20)
    ap.add_argument("--loader-ips", type=float,
                    help="images/s one worker's input pipeline delivers (caps every row)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    step_ms, batch, bwd = a.step_ms, a.batch, a.backward_fraction
    if a.time_json:
        t = json.load(open(a.time_json))
        step_ms = step_ms or t["train_step_ms"]
        batch = batch or t["batch"]
        if bwd is None:
            f = sum(l["forward_ms"] for l in t["layers"])
            b = sum(l["backward_ms"] for l in t["layers"])
            bwd = b / (f + b) if f + b > 0 else None
    learnables = a.learnables
    if a.info_json:
        learnables = learnables or json.load(open(a.info_json))["total_learnables"]
    if bwd is None:
        bwd = 2.0 / 3.0
    if not (step_ms and batch and learnables):
        sys.exit("scaling_model: need the step time, the batch and the learnables "
                 "(--time-json/--info-json or --step-ms/--batch/--learnables)")
    rows = predict(step_ms / 1e3, bwd, 4 * learnables, batch, int(a.bucket_mb * 2**20), a.loader_ips)
    if a.json:
        print(json.dumps({"name": a.name, "step_ms": step_ms, "batch_per_gpu": batch,
                          "backward_fraction": bwd, "gradient_bytes": 4 * learnables, "rows": rows}))
        return
    print(f"{a.name}: 1-GPU step {step_ms:.2f} ms at batch {batch}/GPU, backward {bwd:.0%}, "
          f"gradients {4 * learnables / 2**20:.2f} MiB")
    print("| setup | GPUs | all-reduce ms | exposed ms | step ms | images/s | efficiency |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['setup']} | {r['gpus']} | {r['allreduce_ms']:.3f} | {r['exposed_ms']:.3f} | "
              f"{r['step_ms']:.2f} | {r['images_per_second']:,.0f} | {r['efficiency']:.1%} |")


if __name__ == "__main__":
    main()

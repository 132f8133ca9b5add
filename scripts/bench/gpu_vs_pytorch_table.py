#!/usr/bin/env python3
"""Table for scripts/bench/gpu_vs_pytorch: reads the JSON lines it collected (pytorch_cuda.py's
peak and network records, `dltrain time --json` records, failure records) and prints markdown
tables of images/s and ratios, the issue's targets (cifar10 >= 2x PyTorch eager float32, training
and inference; resnet18-cifar >= 1.0x), and ResNet-18's model FLOP utilisation against the
measured matmul peaks. Writes the combined results as one JSON file. Any subset of records
makes a table (a run cut off, PyTorch or dltrain missing).

  gpu_vs_pytorch_table.py RESULTS.jsonl "cifar10 cifar10-bn resnet18-cifar" "GPU 0: ..." OUT.json
"""
import json
import sys
import time


def main():
    path, nets, gpu_line, json_out = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4]
    rows = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(r, dict) and ("benchmark" in r or "network" in r):
                rows.append(r)
    peak = {r["benchmark"]: r for r in rows if "benchmark" in r}
    fp32 = peak.get("torch_matmul_fp32", {}).get("tflops_median")
    tf32 = peak.get("torch_matmul_fp32_tf32", {}).get("tflops_median")
    bf16 = peak.get("torch_matmul_bf16", {}).get("tflops_median")
    copy = peak.get("device_copy", {}).get("tb_per_second")
    torch = {(r["network"], r["preset"], r.get("mode")): r for r in rows
             if "preset" in r and "network" in r and "failed" not in r}
    torch_failed = {(r["network"], r["preset"]): r["failed"] for r in rows
                    if "preset" in r and "network" in r and "failed" in r}
    dlt = {r["network"]: r for r in rows if r.get("source") == "dltrain" and "network" in r}
    dlt_graph = {r["network"]: r for r in rows if r.get("source") == "dltrain-graph" and "network" in r}
    dlt_mixed = {r["network"]: r for r in rows if r.get("source") == "dltrain-mixed" and "network" in r}
    dlt_sw = {r["network"]: r for r in rows if r.get("source") == "dltrain-switches" and "network" in r}
    dlt_mixed_sw = {r["network"]: r for r in rows if r.get("source") == "dltrain-mixed-switches" and "network" in r}
    info = next((r for r in rows if "gpu" in r), {})

    def ips(r, mode):
        if not r or "failed" in r:
            return None
        return r.get(f"{mode}_images_per_second") if "source" in r else r.get("images_per_second")

    def fmt(v, nd=0):
        return "—" if v is None else f"{v:,.{nd}f}"

    def ratio(a, b):
        return fmt(a / b, 2) if a and b else "—"

    def cell(v, net, preset):  # images/s, or "failed" when that run left a failure record
        return fmt(v) if v else ("failed" if (net, preset) in torch_failed else "—")

    out = []
    p = out.append
    p(f"GPU throughput, {time.strftime('%Y-%m-%d %H:%M')}, {gpu_line}; "
      f"torch {info.get('torch', '?')}, CUDA {info.get('cuda', '?')}, cuDNN {info.get('cudnn', '?')}. "
      "Images/s, higher is better; synthetic data already on the GPU.")
    switches = sorted({(r.get("cudnn_engines", "auto"), r.get("batch_norm_kernels", "cudnn"),
                        bool(r.get("allow_reduced_precision_reduction", False)))
                       for r in rows if "source" in r and "failed" not in r
                       and not r["source"].endswith("-switches")})
    if any(s != ("auto", "cudnn", False) for s in switches):
        p("dltrain ran with " + "; ".join(f"CudnnEngines {e}, BatchNormKernels {b}, AllowReducedPrecisionReduction "
                                          f"{str(r).lower()}" for e, b, r in switches)
          + " (not the defaults auto / cudnn / false).")
    p("")
    p("| network | mode | batch | dltrain | PyTorch fp32 | PyTorch TF32 convs (default) | torch.compile fp32 "
      "| dltrain / fp32 | dltrain / TF32 | dltrain / compile |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    table = []
    t_mixed = {(k[0], k[2]): r for k, r in torch.items() if k[1] == "mixed"}
    for net in nets:
        d = dlt.get(net)
        for mode in ("train", "inference"):
            s, df, c = (torch.get((net, k, mode)) for k in ("strict", "default", "compile"))
            v = {"dltrain": ips(d, mode), "strict": ips(s, mode), "default": ips(df, mode), "compile": ips(c, mode)}
            batch = (d or {}).get("batch") or (s or df or c or {}).get("batch")
            dc = fmt(v["dltrain"]) if v["dltrain"] else ("failed" if d and "failed" in d else "—")
            p(f"| {net} | {mode} | {batch or '—'} | {dc} | {cell(v['strict'], net, 'strict')} "
              f"| {cell(v['default'], net, 'default')} | {cell(v['compile'], net, 'compile')} "
              f"| {ratio(v['dltrain'], v['strict'])} | {ratio(v['dltrain'], v['default'])} "
              f"| {ratio(v['dltrain'], v['compile'])} |")
            # FLOPs: PyTorch's count (2 x MACs of conv + fc); dltrain's flops_per_image also
            # counts batch norm (2 per element: +0.1% for resnet18-cifar), used only without PyTorch.
            t = next((r for r in (s, df, c, t_mixed.get((net, mode))) if r), None)
            flops, flops_src = None, None
            if t and t.get("flops_per_image_forward"):
                flops, flops_src = t["flops_per_image_forward"], "pytorch"
            elif (d or {}).get("flops_per_image"):
                flops, flops_src = d["flops_per_image"], "dltrain"
            table.append({"network": net, "mode": mode, "batch": batch, "images_per_second": v,
                          "flops_per_image_forward": flops, "flops_source": flops_src})
    p("")
    graph_rows = []
    if dlt_graph:
        p("dltrain training step captured as a CUDA graph (DLT_CUDA_GRAPH=1) against the same step uncaptured:")
        p("")
        p("| network | batch | dltrain train | + CUDA graph | graph / plain | graph state |")
        p("|---|---:|---:|---:|---:|---|")
        for net in nets:
            g = dlt_graph.get(net)
            if g is None:
                continue
            plain, graphed = ips(dlt.get(net), "train"), ips(g, "train")
            state = g.get("failed") or g.get("cuda_graph", "?")
            p(f"| {net} | {g.get('batch') or '—'} | {fmt(plain)} | {fmt(graphed)} | {ratio(graphed, plain)} | {state} |")
            graph_rows.append({"network": net, "train_images_per_second": plain,
                               "graph_train_images_per_second": graphed, "state": state})
        p("")
    mixed_rows = []
    if dlt_mixed or any(k[1] == "mixed" for k in torch):
        p("Precision: mixed (bfloat16 multiplies, float32 sums and master weights) against PyTorch eager "
          "under torch.autocast(bfloat16), channels_last, cudnn.benchmark:")
        p("")
        p("| network | mode | batch | dltrain mixed | PyTorch autocast bf16 | ratio | dltrain mixed / single |")
        p("|---|---|---:|---:|---:|---:|---:|")
        for net in nets:
            d = dlt_mixed.get(net)
            for mode in ("train", "inference"):
                t = torch.get((net, "mixed", mode))
                if d is None and t is None:
                    continue
                m, pt, single = ips(d, mode), ips(t, mode), ips(dlt.get(net), mode)
                batch = (d or {}).get("batch") or (t or {}).get("batch")
                mc = fmt(m) if m else ("failed" if d and "failed" in d else "—")
                p(f"| {net} | {mode} | {batch or '—'} | {mc} | {cell(pt, net, 'mixed')} | {ratio(m, pt)} "
                  f"| {ratio(m, single)} |")
                mixed_rows.append({"network": net, "mode": mode, "dltrain_mixed": m, "pytorch_autocast_bf16": pt,
                                   "dltrain_single": single})
        for n, d in dlt_mixed.items():
            if "failed" in d:
                p(f"- dltrain {n} mixed: failed: {d['failed']}")
        p("")
    switch_rows = []
    if dlt_sw or dlt_mixed_sw:
        sw = next((r for r in list(dlt_sw.values()) + list(dlt_mixed_sw.values()) if "failed" not in r), {})
        p(f"dltrain with switches (CudnnEngines {sw.get('cudnn_engines', '?')}, BatchNormKernels "
          f"{sw.get('batch_norm_kernels', '?')}, AllowReducedPrecisionReduction "
          f"{str(sw.get('allow_reduced_precision_reduction', '?')).lower()}) against its defaults and the same "
          "PyTorch runs (float32: eager fp32; mixed: autocast bf16):")
        p("")
        p("| network | precision | mode | dltrain default | dltrain switches | switches / default | switches / PyTorch |")
        p("|---|---|---|---:|---:|---:|---:|")
        for prec, base, swd, preset in (("single", dlt, dlt_sw, "strict"), ("mixed", dlt_mixed, dlt_mixed_sw, "mixed")):
            for net in nets:
                d = swd.get(net)
                if d is None:
                    continue
                for mode in ("train", "inference"):
                    a, b, t = ips(base.get(net), mode), ips(d, mode), ips(torch.get((net, preset, mode)), mode)
                    bc = fmt(b) if b else ("failed" if "failed" in d else "—")
                    p(f"| {net} | {prec} | {mode} | {fmt(a)} | {bc} | {ratio(b, a)} | {ratio(b, t)} |")
                    switch_rows.append({"network": net, "precision": prec, "mode": mode, "default": a,
                                        "switches": b, "pytorch": t})
        p("")
    if fp32 or tf32 or bf16:
        p(f"Peak (measured now with torch.matmul 8192^3 on random data, median): float32 {fmt(fp32, 1)} TFLOP/s, "
          f"TF32 {fmt(tf32, 1)} TFLOP/s, bfloat16 {fmt(bf16, 1)} TFLOP/s; device copy {fmt(copy, 2)} TB/s "
          "(read + write).")
    else:
        p("Peak: not measured (no PyTorch with CUDA).")
    p("")
    # The targets: dltrain float32 against PyTorch eager float32 (TF32 off, channels_last).
    targets = []
    for net, goal in (("cifar10", 2.0), ("resnet18-cifar", 1.0)):
        if net not in nets:
            continue
        for mode in ("train", "inference"):
            row = next((t for t in table if t["network"] == net and t["mode"] == mode), None)
            a, b = (row["images_per_second"]["dltrain"], row["images_per_second"]["strict"]) if row else (None, None)
            r = a / b if a and b else None
            targets.append({"network": net, "mode": mode, "goal": goal, "ratio": None if r is None else round(r, 3),
                            "met": None if r is None else r >= goal})
    if targets:
        p("Targets (dltrain float32 / PyTorch eager float32, TF32 off, channels_last, same batch): "
          + "; ".join(f"{t['network']} {t['mode']} >= {t['goal']:.1f}x: "
                      + ("not measured" if t["ratio"] is None else
                         f"{t['ratio']:.2f}x, {'met' if t['met'] else 'NOT met'}") for t in targets) + ".")
        p("")
    mfu = []
    net = "resnet18-cifar"
    rn = [t for t in table if t["network"] == net]
    if rn and rn[0]["flops_per_image_forward"]:
        src = ("2 x MACs of conv + fc" if rn[0]["flops_source"] == "pytorch"
               else "dltrain's count: conv + fc + batch norm")
        p(f"Model FLOP utilisation, {net} ({rn[0]['flops_per_image_forward'] / 1e9:.3f} GFLOP/image forward, "
          f"{src}; training = 3x forward):")
        p("")
        p("| who | mode | TFLOP/s | % of float32 peak | % of TF32 peak | % of bfloat16 peak |")
        p("|---|---|---:|---:|---:|---:|")
        mixed_ips = {(r["mode"]): r for r in mixed_rows if r["network"] == net}
        for t in rn:
            mr = mixed_ips.get(t["mode"], {})
            whos = [("dltrain", "dltrain fp32", t["images_per_second"]["dltrain"]),
                    ("strict", "PyTorch fp32", t["images_per_second"]["strict"]),
                    ("default", "PyTorch TF32 convs", t["images_per_second"]["default"]),
                    ("compile", "torch.compile fp32", t["images_per_second"]["compile"]),
                    ("dltrain-mixed", "dltrain mixed", mr.get("dltrain_mixed")),
                    ("mixed", "PyTorch autocast bf16", mr.get("pytorch_autocast_bf16"))]
            for who, label, i in whos:
                if not i:
                    continue
                # the header's count for every row (a mode whose own runs failed has none)
                tfl = i * rn[0]["flops_per_image_forward"] * (3 if t["mode"] == "train" else 1) / 1e12
                pct = {k: (100 * tfl / v if v else None) for k, v in (("fp32", fp32), ("tf32", tf32), ("bf16", bf16))}
                p(f"| {label} | {t['mode']} | {tfl:.2f} | {fmt(pct['fp32'], 0)}% | {fmt(pct['tf32'], 0)}% "
                  f"| {fmt(pct['bf16'], 0)}% |")
                mfu.append({"who": who, "mode": t["mode"], "tflops": round(tfl, 3),
                            "mfu_fp32": round(tfl / fp32, 4) if fp32 else None,
                            "mfu_tf32": round(tfl / tf32, 4) if tf32 else None,
                            "mfu_bf16": round(tfl / bf16, 4) if bf16 else None})
        p("")
    p("Both sides: the same network built from the same YAML (PyTorch: scripts/bench/pytorch_cpu.py's builder), "
      "one batch of random images and labels uploaded to the GPU once before timing (no data loading), "
      "warm-up, then repeats of the same iteration count each timed as a whole; the median repeat. "
      "PyTorch: eager, float32, channels_last, cudnn.benchmark=True, CUDA events, torch.optim.SGD (foreach); "
      "'fp32' = TF32 off for convolutions and matmuls (dltrain's float32 is the same: cuDNN FMA math, "
      "cuBLAS COMPUTE_32F; DLT_ALLOW_TF32 unset), 'TF32 convs' = PyTorch's default (cudnn.allow_tf32=True). "
      "dltrain: `dltrain time --gpu 0 --json` (host clock after a device synchronize); its training step "
      "waits for its loss once per step, PyTorch's loop never reads the loss. "
      "Ratios are dltrain / PyTorch (> 1: dltrain faster).")
    for (n, k), why in torch_failed.items():
        p(f"- PyTorch {n} {k}: {why} (see logs/torch_{n}_{k}.err)")
    for n in nets:
        for lab, dd in (("dltrain", dlt), ("dltrain CUDA graph", dlt_graph)):
            if n in dd and "failed" in dd[n]:
                p(f"- {lab} {n}: failed: {dd[n]['failed']}")
    if not dlt:
        p("- dltrain: not measured (no binary, --no-dltrain, or not reached).")
    print("\n".join(out))
    with open(json_out, "w") as f:
        json.dump({"gpu": gpu_line, "device": info, "peak": peak, "rows": table, "targets": targets,
                   "resnet18_mfu": mfu, "cuda_graph": graph_rows, "mixed": mixed_rows, "switches": switch_rows,
                   "raw": rows}, f, indent=1)


if __name__ == "__main__":
    main()

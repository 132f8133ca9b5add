#!/usr/bin/env python3
"""Table for scripts/bench/gpu_vs_pytorch: reads the JSON lines it collected (pytorch_cuda.py's
peak and network records, `dltrain time --json` records) and prints a markdown table of images/s
and ratios, plus ResNet-18's model FLOP utilisation against the measured matmul peaks. Writes the
combined results as one JSON file.

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
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    peak = {r["benchmark"]: r for r in rows if "benchmark" in r}
    fp32 = peak.get("torch_matmul_fp32", {}).get("tflops_median")
    tf32 = peak.get("torch_matmul_fp32_tf32", {}).get("tflops_median")
    copy = peak.get("device_copy", {}).get("tb_per_second")
    torch = {(r["network"], r["preset"], r.get("mode")): r for r in rows if "preset" in r}
    compile_failed = {r["network"]: r["failed"] for r in rows if r.get("preset") == "compile" and "failed" in r}
    dlt = {r["network"]: r for r in rows if r.get("source") == "dltrain"}
    dlt_graph = {r["network"]: r for r in rows if r.get("source") == "dltrain-graph"}
    dlt_mixed = {r["network"]: r for r in rows if r.get("source") == "dltrain-mixed"}
    info = next((r for r in rows if "gpu" in r), {})

    def ips(r, mode):
        if not r or "failed" in r:
            return None
        return r.get(f"{mode}_images_per_second") if "source" in r else r.get("images_per_second")

    def fmt(v, nd=0):
        return "—" if v is None else f"{v:,.{nd}f}"

    def ratio(a, b):
        return fmt(a / b, 2) if a and b else "—"

    out = []
    p = out.append
    p(f"GPU throughput, {time.strftime('%Y-%m-%d %H:%M')}, {gpu_line}; "
      f"torch {info.get('torch', '?')}, CUDA {info.get('cuda', '?')}, cuDNN {info.get('cudnn', '?')}. "
      "Images/s, higher is better; synthetic data already on the GPU.")
    p("")
    p("| network | mode | batch | dltrain | PyTorch fp32 | PyTorch TF32 convs (default) | torch.compile fp32 "
      "| dltrain / fp32 | dltrain / TF32 | dltrain / compile |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    table = []
    for net in nets:
        d = dlt.get(net)
        for mode in ("train", "inference"):
            s, df, c = (torch.get((net, k, mode)) for k in ("strict", "default", "compile"))
            v = {"dltrain": ips(d, mode), "strict": ips(s, mode), "default": ips(df, mode), "compile": ips(c, mode)}
            batch = (d or {}).get("batch") or (s or df or c or {}).get("batch")
            cc = fmt(v["compile"]) if v["compile"] else ("failed" if net in compile_failed else "—")
            p(f"| {net} | {mode} | {batch or '—'} | {fmt(v['dltrain'])} | {fmt(v['strict'])} | {fmt(v['default'])} "
              f"| {cc} | {ratio(v['dltrain'], v['strict'])} | {ratio(v['dltrain'], v['default'])} "
              f"| {ratio(v['dltrain'], v['compile'])} |")
            flops = (s or df or c or {}).get("flops_per_image_forward") or (d or {}).get("flops_per_image")
            table.append({"network": net, "mode": mode, "batch": batch, "images_per_second": v,
                          "flops_per_image_forward": flops})
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
                p(f"| {net} | {mode} | {batch or '—'} | {fmt(m)} | {fmt(pt)} | {ratio(m, pt)} | {ratio(m, single)} |")
                mixed_rows.append({"network": net, "mode": mode, "dltrain_mixed": m, "pytorch_autocast_bf16": pt,
                                   "dltrain_single": single})
        for n, d in dlt_mixed.items():
            if "failed" in d:
                p(f"- dltrain {n} mixed: failed: {d['failed']}")
        p("")
    if fp32 or tf32:
        p(f"Peak (measured now with torch.matmul 8192^3 on random data, median): float32 {fmt(fp32, 1)} TFLOP/s, "
          f"TF32 {fmt(tf32, 1)} TFLOP/s; device copy {fmt(copy, 2)} TB/s (read + write).")
    else:
        p("Peak: not measured (no PyTorch with CUDA).")
    p("")
    mfu = []
    net = "resnet18-cifar"
    rn = [t for t in table if t["network"] == net]
    if rn and rn[0]["flops_per_image_forward"]:
        p(f"Model FLOP utilisation, {net} ({rn[0]['flops_per_image_forward'] / 1e9:.3f} GFLOP/image forward, "
          "2 x MACs of conv + fc; training = 3x forward):")
        p("")
        p("| who | mode | TFLOP/s | % of float32 peak | % of TF32 peak |")
        p("|---|---|---:|---:|---:|")
        for t in rn:
            for who, label in (("dltrain", "dltrain"), ("strict", "PyTorch fp32"), ("default", "PyTorch TF32 convs"),
                               ("compile", "torch.compile fp32")):
                i = t["images_per_second"][who]
                if not i:
                    continue
                tfl = i * t["flops_per_image_forward"] * (3 if t["mode"] == "train" else 1) / 1e12
                p(f"| {label} | {t['mode']} | {tfl:.2f} | {fmt(100 * tfl / fp32, 0) if fp32 else '—'}% "
                  f"| {fmt(100 * tfl / tf32, 0) if tf32 else '—'}% |")
                mfu.append({"who": who, "mode": t["mode"], "tflops": round(tfl, 3),
                            "mfu_fp32": round(tfl / fp32, 4) if fp32 else None,
                            "mfu_tf32": round(tfl / tf32, 4) if tf32 else None})
        p("")
    p("PyTorch: eager, float32, channels_last, cudnn.benchmark=True, median of timed repeats (CUDA events); "
      "'fp32' = TF32 off everywhere (what dltrain's tests demand), 'TF32 convs' = PyTorch's default "
      "(cudnn.allow_tf32=True). dltrain: `dltrain time --gpu 0 --json`, fastest of 3 repeats. "
      "Ratios are dltrain / PyTorch (> 1: dltrain faster).")
    for n, why in compile_failed.items():
        p(f"- torch.compile {n}: {why} (see logs/torch_{n}_compile.err)")
    for n in nets:
        if n in dlt and "failed" in dlt[n]:
            p(f"- dltrain {n}: failed: {dlt[n]['failed']}")
    if not dlt:
        p("- dltrain: not measured (no binary, or --no-dltrain).")
    print("\n".join(out))
    with open(json_out, "w") as f:
        json.dump({"gpu": gpu_line, "device": info, "peak": peak, "rows": table, "resnet18_mfu": mfu, "cuda_graph": graph_rows, "mixed": mixed_rows,
                   "raw": rows}, f, indent=1)


if __name__ == "__main__":
    main()

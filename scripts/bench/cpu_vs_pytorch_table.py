#!/usr/bin/python3
"""The markdown tables of cpu_vs_pytorch: one per ISA cap, from the JSON lines the driver
collected (sgemm peak, oneDNN ISA probes, PyTorch rows tagged with their peer, dltrain rows).
Prints to stdout; reads nothing else and measures nothing.

  scripts/bench/cpu_vs_pytorch_table.py results.jsonl --networks "cifar10 resnet18-cifar"
"""
import argparse
import json
import time

# (peer, preset) columns in table order; "system" is Debian's PyTorch, "current" the venv's.
PEER_COLUMNS = [("system", "best"), ("system", "default"), ("current", "best"), ("current", "compile")]
CAPS_TEXT = {"native": "no cap", "avx2": "DNNL_MAX_CPU_ISA=ONEDNN_MAX_CPU_ISA=AVX2, ATEN_CPU_CAPABILITY=avx2 (PyTorch)"}


def fmt(v, nd=0):
    return "—" if v is None else f"{v:,.{nd}f}"


def short_version(v):
    """'2.15.0+cu132' -> '2.15', '1.13.0a0' -> '1.13'."""
    return ".".join((v or "?").split("+")[0].split(".")[:2])


def peer_version(rows, peer):
    return next((r["torch"] for r in rows if r.get("peer") == peer and r.get("torch")), None)


def column_title(peer, preset, versions):
    v = short_version(versions.get(peer)) if versions.get(peer) else ("1.13" if peer == "system" else "current")
    what = {"best": "best", "default": "default", "compile": "compile"}[preset]
    if peer == "current" and preset == "best":
        what = "eager channels_last"
    return f"PyTorch {v} {what}"


def table_for_isa(isa, rows, nets, out):
    sgemm = next((r for r in rows if r.get("benchmark") == "dnnl_sgemm"), None)
    peak = sgemm["gflops_median"] if sgemm else None
    torch = {(r["peer"], r["preset"], r["network"], r["mode"]): r for r in rows if "preset" in r and "peer" in r}
    dlt = {r["network"]: r for r in rows if r.get("source") == "dltrain"}
    probes = [r for r in rows if r.get("probe") == "isa"]
    versions = {p: peer_version(rows, p) for p in ("system", "current")}
    for p in probes:  # versions known from the probes even when every row of a peer failed
        peer = p["program"][len("pytorch_"):] if p["program"].startswith("pytorch_") else None
        if peer and not versions.get(peer):
            versions[peer] = p.get("torch")

    model = next((r.get("cpu_model") for r in rows if r.get("cpu_model")), "?")
    program_name = {"pytorch_system": f"PyTorch {short_version(versions.get('system'))}",
                    "pytorch_current": f"PyTorch {short_version(versions.get('current'))}"}
    isa_text = "; ".join(
        f"{program_name.get(p['program'], p['program'])}: {p.get('onednn_isa') or 'no isa line'}"
        + (f" (ATen {p['cpu_capability']})" if p.get("cpu_capability") else "")
        for p in probes)
    prec = next((r.get("precision") for r in rows if r.get("precision")), "single")
    vers = ", ".join(f"PyTorch {v}" for v in versions.values() if v)
    out.append(f"### ISA {isa}: {model}; oneDNN reported {isa_text or 'nothing (no probe ran)'}; "
               f"caps: {CAPS_TEXT.get(isa, isa)}; {vers or 'no PyTorch'}; Precision {prec}")
    out.append("")
    cols = [column_title(p, s, versions) for p, s in PEER_COLUMNS]
    out.append("| network | mode | batch | dltrain img/s | " + " | ".join(cols)
               + " | fastest peer (which) | ratio dltrain / fastest | dltrain GFLOP/s (% of sgemm peak) |")
    out.append("|---|---|---:|---:|" + "---:|" * len(cols) + "---|---:|---:|")
    notes = []
    for net in nets:
        d = dlt.get(net)
        for mode in ("train", "inference"):
            peer_rows = [torch.get((p, s, net, mode)) for p, s in PEER_COLUMNS]
            ours = d.get(f"{mode}_images_per_second") if d else None
            any_peer = next((r for r in peer_rows if r), {})
            fwd = any_peer.get("flops_per_image_forward")
            if d and d.get("flops_per_image"):
                if fwd and abs(d["flops_per_image"] - fwd) > 0.001 * fwd and mode == "train":
                    notes.append(f"{net}: dltrain reports {d['flops_per_image']:,} FLOPs/image, "
                                 f"pytorch_cpu.py counts {fwd:,} (conv + fc only); GFLOP/s use the latter.")
                fwd = fwd or d["flops_per_image"]
            mult = 3 if mode == "train" else 1
            ours_g = ours * fwd * mult / 1e9 if ours and fwd else None
            batch = (d or {}).get("batch") or any_peer.get("batch")
            present = [(r["images_per_second"], title) for r, title in zip(peer_rows, cols) if r]
            best = max(present) if present else None
            gcell = "—" if ours_g is None else f"{ours_g:.1f}" + (f" ({100 * ours_g / peak:.0f}%)" if peak else "")
            out.append(f"| {net} | {mode} | {batch or '—'} | {fmt(ours)} | "
                       + " | ".join(fmt(r and r["images_per_second"]) for r in peer_rows)
                       + f" | {fmt(best[0]) + ' (' + best[1] + ')' if best else '—'}"
                       + f" | {fmt(ours / best[0], 2) if ours and best else '—'} | {gcell} |")
            for r, title in zip(peer_rows, cols):
                if r and (r.get("foreign_load_cores") or 0) > 0.3:
                    notes.append(f"{net} {mode} {title}: other processes used {r['foreign_load_cores']} "
                                 "cores while timing; treat as a lower bound.")
                if r and r.get("compile_seconds") is not None:
                    notes.append(f"{net} {mode} {title}: the first iteration (torch.compile) took "
                                 f"{r['compile_seconds']:.1f} s (warm-up, not timed).")
            if mode == "train" and d and (d.get("foreign_load_cores") or 0) > 0.3:
                notes.append(f"{net} dltrain: other processes used {d['foreign_load_cores']} cores while "
                             "timing; treat as a lower bound.")
    out.append("")
    if sgemm:
        out.append(f"sgemm peak: oneDNN dnnl_sgemm {sgemm['n']}x{sgemm['n']}, {sgemm['threads']} threads: "
                   f"{sgemm['gflops_median']} GFLOP/s median ({sgemm['gflops_best']} best).")
        if (sgemm.get("foreign_load_cores") or 0) > 0.3:
            notes.append(f"sgemm: other processes used {sgemm['foreign_load_cores']} cores while timing; "
                         "the peak is understated and every '% of peak' overstated.")
    if not dlt:
        out.append("dltrain: not measured (no binary, or 'dltrain time' failed).")
    for p in probes:
        out.append(f"- oneDNN verbose line parsed for {p['program']}: `{p.get('verbose_line') or 'none'}`")
    for n in notes:
        out.append(f"- {n}")
    out.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="the JSON lines file cpu_vs_pytorch collected")
    ap.add_argument("--networks", required=True, help="network names, space separated, table order")
    ap.add_argument("--avx2-folded", default="0", help="1: avx2 was asked for on a CPU without AVX-512")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.results) if line.strip()]
    nets = args.networks.split()
    isas = list(dict.fromkeys(r["isa"] for r in rows if r.get("isa")))
    out = [f"CPU throughput, {time.strftime('%Y-%m-%d %H:%M')}; images/s, higher is better; one table per ISA cap.",
           ""]
    if args.avx2_folded == "1":
        out += ["This CPU has no AVX-512: the avx2 cap is what native runs anyway, so only native was measured.", ""]
    for isa in isas:
        table_for_isa(isa, [r for r in rows if r.get("isa") == isa], nets, out)
    out.append("Presets: PyTorch best = channels_last, 2 threads, tcmalloc, OPENBLAS_NUM_THREADS=1; default = "
               "NCHW, PyTorch's default threads, no preload; compile = best + torch.compile (inductor, "
               "default mode), compilation in the warm-up. Median of timed repeats after warm-up, synthetic "
               "data. The fastest peer is the fastest PyTorch row of that network and mode; the ratio is "
               "dltrain / that (> 1: dltrain faster). FLOPs: 2 x multiply-adds of convolution and "
               "fullyConnected layers per image, forward (pytorch_cpu.py's count); a training step counts "
               "3x forward.")
    print("\n".join(out))


if __name__ == "__main__":
    main()

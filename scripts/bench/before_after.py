#!/usr/bin/env python3
"""Two dltrain binaries side by side: the same speed and the same results, or a verdict why not.

Measures a "before" and an "after" binary in one run on one machine, round by round in turn
(before, after, [onnxruntime], before, after, ...), so that a machine's drift over minutes
reaches both alike:
  - the networks of cpu_vs_pytorch (configs/NET.yaml): `dltrain time` training and inference
    images/s, with cpu_vs_pytorch's batch, iterations, repeats and warm-up (cpu_schedule.sh) and
    OMP_NUM_THREADS=2;
  - imported torchvision networks as in onnx_inference_vs_peers (random weights, seed 0, 224x224,
    batch 32, 2 threads; the dynamo export, cached under --cache): `dltrain time` on a config
    whose base: is the ONNX file, and onnxruntime on the same file as the peer row.
Per workload (network and mode) it reports each binary's median images/s over the rounds, the
ratio after / before of the medians, the range of the per-round ratios, each binary's median
peak memory (the max RSS of its `dltrain time` process) and PASS, or FAIL when after is slower
than before by more than --threshold percent (default 3).
Results: before the timing, each config trains 1 epoch on a small generated shapes dataset with
both binaries from the same seed (log.csv compared column by column, times left out) and
classifies the test images with its model (every score compared); the after binary also
classifies with the before binary's model. Each imported network is imported by both and
classifies the same 4 images (all 1000 probabilities compared). Equal means bitwise equal.
Exit status 1 when a workload FAILs, a run fails or a result differs; 0 otherwise.
The ONNX networks need the virtual environment of scripts/onnx/zoo_coverage.py (--venv, default
build/zoo-venv, created when missing); the script re-executes itself there. `--onnx ""` runs
the configs alone with any python3.
"""
import argparse
import contextlib
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts", "onnx"))
import conv_bound  # noqa: E402  (the CPU name and oneDNN's ISA probe of a dltrain binary)
import zoo_coverage as zc  # noqa: E402  (the venv, the exporter, the time config, test images)


def _load_script(name):
    """Imports the extensionless script scripts/bench/NAME as a module (its main() does not run)."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(HERE, name))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


peers = _load_script("onnx_inference_vs_peers")  # wait_idle, measured, median_ms, the time command

SCHEDULE = os.path.join(HERE, "cpu_schedule.sh")
AVX2_CAP = {"DNNL_MAX_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
MODES = ("train", "inference")
SIDES = ("before", "after")
CHECK_CLASSES = 4        # the generated dataset's classes (the configs' last fullyConnected is set to it)
CHECK_PER_CLASS = 50     # 40 training and 10 test images per class
CHECK_BATCH = 10
CHECK_IMAGES = 4         # images the imported networks classify


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", required=True, help="the dltrain binary to compare against (today's)")
    p.add_argument("--after", required=True, help="the dltrain binary under test")
    p.add_argument("--rounds", type=int, default=5, help="rounds per workload (5)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: cpu_vs_pytorch's --quick schedule, 1 iteration x 2 repeats for the ONNX networks")
    p.add_argument("--networks", default="cifar10 cifar10-bn resnet18-cifar",
                   help="configs under configs/ (space or comma separated; default cpu_vs_pytorch's three)")
    p.add_argument("--onnx", default="resnet50 mobilenet_v2 efficientnet_b0",
                   help="torchvision networks to export and import (default onnx_inference_vs_peers's three; '' none)")
    p.add_argument("--output", default="", help="write the JSON lines here ({\"run\": ...} first)")
    p.add_argument("--threshold", type=float, default=3.0, help="FAIL when after/before < 1 - this percent (3)")
    p.add_argument("--isa", default="native", help="'native', 'avx2' (oneDNN capped at AVX2) or both (native)")
    p.add_argument("--wait-idle", type=float, default=120,
                   help="before each measurement wait up to this many s for idle cores (120; 0 = don't)")
    p.add_argument("--no-check", action="store_true", help="skip the results comparison (speed only)")
    p.add_argument("--venv", default=os.path.join(ROOT, "build", "zoo-venv"),
                   help="zoo_coverage.py's virtual environment, for the ONNX networks (default build/zoo-venv)")
    p.add_argument("--cache", default=os.path.join(ROOT, "build", "before_after"),
                   help="where the ONNX exports are kept between runs (default build/before_after)")
    args = p.parse_args(argv)
    args.networks = [n for n in re.split(r"[\s,]+", args.networks) if n]
    args.onnx = [n for n in re.split(r"[\s,]+", args.onnx) if n]
    args.isa = [i for i in re.split(r"[\s,]+", args.isa) if i]
    for i in args.isa:
        if i not in ("native", "avx2"):
            p.error(f"--isa {i}: native or avx2")
    if not args.networks and not args.onnx:
        p.error("--networks and --onnx are both empty: nothing to measure")
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    if not os.access(GNU_TIME, os.X_OK):
        p.error(f"no {GNU_TIME} to measure peak memory (apt-get install time; scripts/setup.sh does)")
    for side in SIDES:
        path = getattr(args, side)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            p.error(f"--{side} {path}: not an executable file")
        setattr(args, side, os.path.abspath(path))
    for n in args.networks:
        if not os.path.isfile(config_path(n)):
            p.error(f"--networks: no configs/{n}.yaml")
    return args


def config_path(net):
    return os.path.join(ROOT, "configs", net + ".yaml")


def cpu_schedule(net, quick):
    """cpu_vs_pytorch's (batch, iterations, repeats, warm-up) for NET, from cpu_schedule.sh."""
    out = subprocess.run(["bash", "-c", 'quick=$1; source "$2"; echo "$(batch_of "$3") $(iters_of "$3") '
                          '$(repeats_of "$3") $(warmup_of "$3")"', "_", "1" if quick else "0", SCHEDULE, net],
                         capture_output=True, text=True, check=True).stdout
    return tuple(int(v) for v in out.split())


GNU_TIME = "/usr/bin/time"


def run_child(cmd, env=None, cwd=None):
    """Runs CMD; returns (exit code, stdout, stderr, its peak RSS in MiB). The peak comes from GNU
    time (as tests/cli/common.sh's peak_rss_kib): the rusage of a child this Python forks itself
    counts the Python's own pages too (Linux keeps the largest RSS across fork and exec), which
    with torch loaded is over 1 GiB."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        p = subprocess.run([GNU_TIME, "-f", "%M", "-o", rss.name] + cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        out.seek(0)
        err.seek(0)
        kib = [ln for ln in rss.read().splitlines() if ln.strip().isdigit()]
        return p.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"), \
            int(kib[-1]) / 1024 if kib else float("nan")


def last_line(text, default):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else default


def checked(cmd, env=None, cwd=None):
    """Runs CMD; its stdout, or RuntimeError naming the command and its last error line."""
    rc, out, err, _ = run_child(cmd, env, cwd)
    if rc != 0:
        raise RuntimeError(f"{cmd[0]} {cmd[1]}: exit {rc}: {last_line(err, '(no message)')}")
    return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------- the workloads

class Workload:
    """One network: how to time it with a binary, and (imported networks) the onnxruntime peer."""

    def __init__(self, name, kind, batch, command, env, peer=None):
        self.name, self.kind, self.batch = name, kind, batch
        self.command, self.env, self.peer = command, env, peer


def config_workload(net, quick, env):
    batch, iters, repeats, warmup = cpu_schedule(net, quick)

    def command(binary):  # cpu_vs_pytorch's step 3, exactly
        return [binary, "time", config_path(net), "--batch", str(batch), "--iterations", str(iters), "--repeats",
                str(repeats), "--warmup", str(warmup), "--set", "training.Precision=single", "--json"]

    return Workload(net, "config", batch, command, dict(env, OMP_NUM_THREADS="2"))


ONNX_BATCH, ONNX_SIZE, ONNX_THREADS = 32, 224, 2  # onnx_inference_vs_peers's defaults


def onnx_schedule(quick):
    """(iterations, repeats): onnx_inference_vs_peers's defaults, or a smoke run's."""
    return (1, 2) if quick else (3, 3)


def exported(net, cache, peer=False):
    """The dynamo export of torchvision's NET (random weights, seed 0, batch 32, 224x224), made
    as onnx_inference_vs_peers makes it and kept in CACHE; a later run reuses it. Transformers
    (zoo_coverage.one_image) are exported with one image for dltrain, which reads only that
    form, and (peer) with a symbolic batch for onnxruntime; other networks once for both."""
    single = zc.one_image(net)
    batch = 1 if single and not peer else ONNX_BATCH
    path = os.path.join(cache, f"{net}-b{batch}-{ONNX_SIZE}-dynamo{'-symbolic' if single and peer else ''}.onnx")
    done = path + ".done"
    if os.path.exists(done) and os.path.exists(path):
        return path
    import torch
    import torchvision
    os.makedirs(cache, exist_ok=True)
    print(f"== exporting {net} to {path}", file=sys.stderr, flush=True)
    torch.set_num_threads(ONNX_THREADS)
    torch.manual_seed(0)
    model = torchvision.models.get_model(net, weights=None).eval()
    x = torch.rand(batch, 3, ONNX_SIZE, ONNX_SIZE)
    with contextlib.redirect_stdout(sys.stderr):  # the exporter's progress lines; stdout is the table's
        if single and peer:
            zc.export(model, x, path, "dynamo", dynamic_batch=True)
        else:
            zc.export(model, x, path, "dynamo")
    with open(done, "w") as f:
        json.dump({"torch": torch.__version__, "torchvision": torchvision.__version__}, f)
    return path


def onnx_workload(net, quick, env, cache, work):
    import numpy as np
    path = exported(net, cache)
    cfg = os.path.join(work, f"time-{net}.yaml")
    zc.write_time_config(cfg, path, ONNX_BATCH)
    iters, repeats = onnx_schedule(quick)
    sess = peers.ort_session(exported(net, cache, peer=True), ONNX_THREADS)
    feed = {sess.get_inputs()[0].name:
            np.random.default_rng(0).random((ONNX_BATCH, 3, ONNX_SIZE, ONNX_SIZE), dtype=np.float32)}

    def command(binary):
        return peers.dltrain_time_command(binary, cfg, ONNX_BATCH, ONNX_THREADS, iters, repeats)

    def peer():
        return peers.median_ms(lambda: sess.run(None, feed), 1, iters, repeats)

    return Workload(net, "onnx", ONNX_BATCH, command, env, peer)


def time_once(w, binary):
    """One `dltrain time` of W with BINARY: images/s per mode, peak memory, foreign load."""
    (rc, out, err, rss), load = peers.measured(lambda: run_child(w.command(binary), w.env))
    if rc != 0:
        return {"error": f"exit {rc}: {last_line(err, '(no message)')}"[:200]}
    objs = [ln for ln in out.splitlines() if ln.strip().startswith("{")]
    if not objs:
        return {"error": "printed no JSON"}
    d = json.loads(objs[-1])
    return {"train": d["train_images_per_second"], "inference": d["inference_images_per_second"],
            "max_rss_mib": round(rss, 1), "foreign_load_cores": round(load, 2)}


def peer_once(w):
    ms, load = peers.measured(w.peer)
    return {"inference": w.batch / ms * 1e3, "foreign_load_cores": round(load, 2)}


def summarize(isa, w, runs, threshold):
    """One row per mode (imported networks: train and inference too, the peer on inference)."""
    rows = []
    for mode in MODES:
        row = {"isa": isa, "network": w.name, "kind": w.kind, "mode": mode, "batch": w.batch,
               "rounds": len(runs["before"])}
        errors = [m["error"] for side in SIDES for m in runs[side] if "error" in m]
        if errors:
            row.update(verdict="ERROR", error=errors[0])
            rows.append(row)
            continue
        b = [m[mode] for m in runs["before"]]
        a = [m[mode] for m in runs["after"]]
        ratios = [x / y for x, y in zip(a, b)]
        row.update(before=statistics.median(b), after=statistics.median(a))
        row["ratio"] = row["after"] / row["before"]
        row["ratio_min"], row["ratio_max"] = min(ratios), max(ratios)
        for side in SIDES:
            row[side + "_max_rss_mib"] = statistics.median(m["max_rss_mib"] for m in runs[side])
        row["foreign_load_cores"] = max(m["foreign_load_cores"] for side in SIDES for m in runs[side])
        if mode == "inference" and runs["onnxruntime"]:
            row["onnxruntime"] = statistics.median(m["inference"] for m in runs["onnxruntime"])
        row["verdict"] = "PASS" if row["ratio"] >= 1 - threshold / 100 else "FAIL"
        rows.append(row)
    return rows


# ---------------------------------------------------------------- the results comparison

def last_fc(net):
    """The Name of the config's last fullyConnected layer (its OutputSize is set to the classes)."""
    name = None
    with open(config_path(net)) as f:
        for line in f:
            if re.search(r"type:\s*fullyConnected\b", line):
                m = re.search(r"\bName:\s*([^,}\s]+)", line)
                name = m.group(1) if m else name
    if name is None:
        raise RuntimeError(f"configs/{net}.yaml: no fullyConnected layer with a Name")
    return name


def log_rows(path):
    """log.csv without its time column: the header and each row as lists of strings."""
    with open(path) as f:
        rows = [ln.rstrip("\n").split(",") for ln in f if ln.strip()]
    keep = [i for i, c in enumerate(rows[0]) if c != "time_elapsed_seconds"]
    return [[r[i] if i < len(r) else "" for i in keep] for r in rows]


def first_difference(a, b, where=""):
    """'' when A == B, else where they first differ (JSON documents: lists, objects, values)."""
    if a == b:
        return ""
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where or 'the lists'}: {len(a)} against {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            d = first_difference(a.get(k), b.get(k), f"{where}.{k}" if where else k)
            if d:
                return d
    return f"{where}: {json.dumps(a)[:80]} against {json.dumps(b)[:80]}"


def log_difference(a, b):
    """'' when two log_rows() agree, else the first row and column where they differ."""
    if a[0] != b[0]:
        return f"columns {','.join(a[0])} against {','.join(b[0])}"
    if len(a) != len(b):
        return f"{len(a) - 1} against {len(b) - 1} rows"
    for i, (x, y) in enumerate(zip(a[1:], b[1:]), 1):
        for name, u, v in zip(a[0], x, y):
            if u != v:
                return f"row {i} ({', '.join(f'{n} {w}' for n, w in zip(a[0][:2], x[:2]))}), {name}: {u} against {v}"
    return ""


def classify(binary, model, paths, top):
    """`dltrain classify --json` of PATHS with every class's score (TOP = the class count)."""
    return json.loads(checked([binary, "classify", model] + paths + ["--json", "--top", str(top), "--threads", "2"]))


def check_config(net, bins, dataset, work):
    """Both binaries train NET one epoch from seed 0; log.csv and the test images' scores compared."""
    sets = [f"data.train={dataset}/train", f"data.validation={dataset}/test", "training.MaxEpochs=1",
            f"training.MiniBatchSize={CHECK_BATCH}", "training.Seed=0",
            f"layers.{last_fc(net)}.OutputSize={CHECK_CLASSES}"]
    out = {}
    for side in SIDES:
        run_dir = os.path.join(work, side, net)
        checked([bins[side], "train", config_path(net), "-o", run_dir, "-q", "--threads", "2", "--overwrite",
                 "--set"] + sets)
        out[side] = {"log": log_rows(os.path.join(run_dir, "log.csv")), "model": os.path.join(run_dir, "model.bin")}
        out[side]["scores"] = classify(bins[side], out[side]["model"], [os.path.join(dataset, "test")],
                                       CHECK_CLASSES)
    cross = classify(bins["after"], out["before"]["model"], [os.path.join(dataset, "test")], CHECK_CLASSES)
    b, a = out["before"], out["after"]
    return [
        {"check": "log.csv (training, 1 epoch)", "network": net, "rows": len(b["log"]) - 1,
         "difference": log_difference(b["log"], a["log"])},
        {"check": "classify scores, own models", "network": net, "images": len(b["scores"]["predictions"]),
         "difference": first_difference(b["scores"], a["scores"])},
        {"check": "classify scores, after on before's model", "network": net,
         "images": len(cross["predictions"]), "difference": first_difference(b["scores"], cross)},
        {"check": "model.bin bytes (not a verdict)", "network": net, "info": True,
         "difference": "" if sha256(b["model"]) == sha256(a["model"]) else "the files differ"},
    ]


def check_onnx(net, bins, cache, work):
    """Both binaries import NET's export and classify the same images: every probability compared."""
    folder = os.path.join(work, "images")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        zc.write_pngs(zc.make_images(CHECK_IMAGES, ONNX_SIZE), folder)
    images = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    path = exported(net, cache)
    out = {}
    for side in SIDES:
        model = os.path.join(work, side, net + ".bin")
        os.makedirs(os.path.dirname(model), exist_ok=True)
        checked([bins[side], "import", path, "--output", model])
        out[side] = {"model": model, "scores": classify(bins[side], model, images, 1000)}
    cross = classify(bins["after"], out["before"]["model"], images, 1000)
    b, a = out["before"], out["after"]
    return [
        {"check": "import + classify (1000 probabilities)", "network": net, "images": len(images),
         "difference": first_difference(b["scores"], a["scores"])},
        {"check": "classify, after on before's import", "network": net, "images": len(images),
         "difference": first_difference(b["scores"], cross)},
        {"check": "imported model.bin bytes (not a verdict)", "network": net, "info": True,
         "difference": "" if sha256(b["model"]) == sha256(a["model"]) else "the files differ"},
    ]


def run_checks(args, bins, work, emit):
    dataset = os.path.join(work, "shapes")
    checked([bins["before"], "make-dataset", "shapes", dataset, "--classes", str(CHECK_CLASSES), "--per-class",
             str(CHECK_PER_CLASS), "--seed", "0"])
    results = []
    jobs = [("config", n) for n in args.networks] + [("onnx", n) for n in args.onnx]
    for kind, net in jobs:
        t0 = time.time()
        try:
            rows = check_config(net, bins, dataset, work) if kind == "config" else check_onnx(net, bins, args.cache,
                                                                                               work)
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            rows = [{"check": "could not run", "network": net, "error": str(e)[:300], "difference": str(e)[:300]}]
        for r in rows:
            r["seconds"] = round(time.time() - t0, 1)
            print(f"  check {net}: {r['check']}: {r['difference'] or 'equal'}", file=sys.stderr, flush=True)
            emit({"check": r})
        results += rows
    return results


# ---------------------------------------------------------------- the report

def fmt_ips(v):
    return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def table(rows, checks, run, threshold):
    lines = [f"`scripts/bench/before_after.py` on {run['date']} UTC: {run['machine']} ({run['cpu_isa']}); "
             f"before {run['binaries']['before']['version_line']} ({run['binaries']['before']['sha256'][:12]}), "
             f"after {run['binaries']['after']['version_line']} ({run['binaries']['after']['sha256'][:12]}); "
             f"median of {run['rounds']} rounds in turn"
             + (" (--quick: a smoke run, numbers rough)" if run["quick"] else "") + "."]
    for isa in run["isa"]:
        probe = ", ".join(f"{s} {run['binaries'][s]['onednn_isa'].get(isa, '?')}" for s in SIDES)
        lines += ["", f"ISA {isa} (oneDNN dispatches to: {probe}). img/s; ratio = after / before of the medians "
                  f"(in brackets the range of the per-round ratios); FAIL below {1 - threshold / 100:.2f}.", "",
                  "| network | mode | batch | before img/s | after img/s | after / before | onnxruntime img/s "
                  "| peak RSS before / after MiB | verdict |",
                  "|---|---|---:|---:|---:|---|---:|---:|---|"]
        for r in (r for r in rows if r["isa"] == isa):
            name = r["network"] + (" (ONNX)" if r["kind"] == "onnx" else "")
            if r["verdict"] == "ERROR":
                lines.append(f"| {name} | {r['mode']} | {r['batch']} | | | | | | ERROR: {r['error']} |")
                continue
            note = f", foreign load {r['foreign_load_cores']:.1f}" if r["foreign_load_cores"] >= 0.3 else ""
            ort = fmt_ips(r["onnxruntime"]) if "onnxruntime" in r else ""
            lines.append(f"| {name} | {r['mode']} | {r['batch']} | {fmt_ips(r['before'])} | {fmt_ips(r['after'])} | "
                         f"{r['ratio']:.3f} ({r['ratio_min']:.3f}-{r['ratio_max']:.3f}) | {ort} | "
                         f"{r['before_max_rss_mib']:.0f} / {r['after_max_rss_mib']:.0f} | {r['verdict']}{note} |")
    if checks:
        lines += ["", "Results (before against after; equal = bitwise):", "", "| network | check | result |",
                  "|---|---|---|"]
        for c in checks:
            result = "equal" if not c["difference"] else ("ERROR: " if "error" in c else "differ: " if not c.get(
                "info") else "") + c["difference"]
            lines.append(f"| {c['network']} | {c['check']} | {result.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def binary_info(path, isas):
    p = subprocess.run([path, "--version"], capture_output=True, text=True)
    version = (p.stdout + p.stderr).strip()
    env = dict(os.environ, OMP_NUM_THREADS="2")
    onednn = {isa: conv_bound.dltrain_isa(path, config_path("cifar10"), dict(env, **(AVX2_CAP if isa == "avx2" else {})))
              for isa in isas}
    return {"path": path, "sha256": sha256(path), "version": version,
            "version_line": version.splitlines()[0] if version else "dltrain ?", "onednn_isa": onednn}


def main():
    args = parse_args(sys.argv[1:])
    if args.onnx:
        zc.ensure_venv(args, __file__)
        import torchvision
        known = torchvision.models.list_models(module=torchvision.models)
        unknown = [n for n in args.onnx if n not in known]
        if unknown:
            print(f"before_after: --onnx {', '.join(unknown)}: not torchvision classification models "
                  f"(e.g. resnet50, mobilenet_v2, efficientnet_b0)", file=sys.stderr)
            return 2
    bins = {"before": args.before, "after": args.after}
    out = open(args.output, "w") if args.output else None

    def emit(obj):
        if out:
            out.write(json.dumps(obj) + "\n")
            out.flush()

    run = {"script": "before_after", "command": "scripts/bench/before_after.py " + shlex.join(sys.argv[1:]),
           "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "machine": zc.cpu_model(),
           "cpu_model": conv_bound.cpu_model(), "cpu_isa": zc.isa(), "isa": args.isa, "rounds": args.rounds,
           "quick": args.quick, "threshold_percent": args.threshold, "networks": args.networks, "onnx": args.onnx,
           "binaries": {s: binary_info(bins[s], args.isa) for s in SIDES}}
    if args.onnx:
        import onnxruntime
        import torch
        run.update(onnxruntime=onnxruntime.__version__, torch=torch.__version__)
    emit({"run": run})
    for s in SIDES:
        b = run["binaries"][s]
        print(f"{s}: {b['path']} ({b['version_line']}, sha256 {b['sha256'][:12]}; oneDNN ISA {b['onednn_isa']})",
              file=sys.stderr)
    start = time.time()
    work = tempfile.mkdtemp(prefix="before_after.")
    checks = []
    if not args.no_check:
        print("== results: both binaries on the same inputs", file=sys.stderr, flush=True)
        checks = run_checks(args, bins, work, emit)
    rows = []
    for isa in args.isa:
        env = dict(os.environ, **(AVX2_CAP if isa == "avx2" else {}))
        workloads = [("config", n) for n in args.networks] + [("onnx", n) for n in args.onnx]
        for kind, net in workloads:
            w = config_workload(net, args.quick, env) if kind == "config" else \
                onnx_workload(net, args.quick, env, args.cache, work)
            runs = {"before": [], "after": [], "onnxruntime": []}
            for rnd in range(args.rounds):
                for side in SIDES + (("onnxruntime",) if w.peer else ()):
                    peers.wait_idle(args.wait_idle)
                    t0 = time.time()
                    m = peer_once(w) if side == "onnxruntime" else time_once(w, bins[side])
                    m["seconds"] = round(time.time() - t0, 1)
                    runs[side].append(m)
                    emit({"measurement": dict(m, isa=isa, network=w.name, kind=w.kind, side=side, round=rnd + 1)})
                    shown = m.get("error") or ", ".join(
                        f"{k} {m[k]:.1f} img/s" for k in MODES if k in m) + (
                        f", max RSS {m['max_rss_mib']:.0f} MiB" if "max_rss_mib" in m else "")
                    print(f"  {isa} {w.name} round {rnd + 1} {side}: {shown} ({m['seconds']} s)", file=sys.stderr,
                          flush=True)
            for r in summarize(isa, w, runs, args.threshold):
                emit({"summary": r})
                rows.append(r)
    text = table(rows, checks, run, args.threshold)
    failed = [f"{r['network']} {r['mode']} ({r['isa']}): {r['verdict']}" for r in rows if r["verdict"] != "PASS"]
    failed += [f"{c['network']}: " + ("the results check could not run" if "error" in c else f"{c['check']} differs")
               for c in checks if c["difference"] and not c.get("info")]
    verdict = "FAIL: " + "; ".join(failed) if failed else "PASS: no workload slower by more than " \
        f"{args.threshold:g} %, every result equal"
    loaded = sorted({r["network"] for r in rows if r.get("foreign_load_cores", 0) >= 0.3})
    if loaded:
        verdict += f". Measured while other processes used the cores (not comparable): {', '.join(loaded)}"
    text += "\n" + verdict + f" ({(time.time() - start) / 60:.1f} min)\n"
    print(text)
    emit({"verdict": {"pass": not failed, "failed": failed, "minutes": round((time.time() - start) / 60, 1)}})
    if out:
        out.close()
        print(f"wrote {args.output}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Multi-label classification against a PyTorch twin: configs/shapes-multilabel.yaml (MATLAB's
"Multilabel Image Classification Using Deep Learning" written trainnet's way: sigmoid outputs,
binary cross-entropy) trained by dltrain and by PyTorch (scripts/bench/pytorch_multilabel.py: the
same network, options, initialisation, loss and data) for each seed, on the same data and
cores; the test F1 after the same epochs and the seconds per epoch side by side.

  scripts/bench/multilabel_vs_pytorch.py [--seeds "0 1 2"] [--epochs N] [--data DIR]
      [--count N] [--logs DIR] [--wait-idle S] [--same-start-seeds SEEDS] [--write-docs [--machine NAME]]

Data: `dltrain make-dataset shapes-multi DIR --count N --seed 0` (N images, default 3000 as the
config's comment, of 32x32 RGB with 1 to 3 of 4 kinds of shape; the last 20% are the test
table). An existing DIR (--data) with train.csv and test.csv is used as it is. Both sides train
on DIR/train.csv and are scored on DIR/test.csv.

For each seed both sides run one after the other, the first side alternating between seeds
(seed 0: dltrain first, seed 1: PyTorch first, ...), each on 2 threads (OMP_NUM_THREADS=2 for
dltrain, torch.set_num_threads(2)); before each run the script waits up to --wait-idle seconds
for idle cores and records the cores other processes kept busy during the run
(foreign_load_cores). dltrain: `dltrain train CONFIG --set training.Seed=S` (and
training.MaxEpochs with --epochs), then `dltrain classify model.bin --table test.csv
--threshold 0.5 --json --output FILE.csv`: its test F1 is classify's f1_micro (micro over every
image and label), its Jaccard classify's (MATLAB's per-image mean); summary.json's
validation_f1 (the same network on the same table during train) is kept as a check; its seconds
per epoch the trained images (iterations x MiniBatchSize) / train_images_per_second / epochs
(the training loop, validation excluded). PyTorch: the same metrics in eval mode after the last
epoch, seconds per epoch the mean of its training loops. As a check of both, one scorer in this
script recomputes each side's F1 (f1_scored) from its predictions on the test table (classify's
CSV and pytorch_multilabel.py's --predictions CSV, matched to the table by path).

Same start (--same-start-seeds SEEDS, default: every seed of --seeds; "" skips it): the seeds
draw different initial weights and mini-batch orders on the two sides, and one seed's F1 moves
by a few points with them, so for each of these seeds the twin trains a second time from
dltrain's start: dltrain's initial network for the seed (a one-epoch run with every learn-rate
factor 0, `dltrain export`ed) loaded into the twin (--init-onnx), and dltrain's mini-batch order
for every epoch (--dltrain-order: the config's Shuffle with dltrain's permutations for the
seed), for the whole run. Its pair is dltrain's run of the same seed (which starts there and
takes that order): the two F1 side by side per seed, and each iteration's mini-batch loss
(dltrain's log.csv against the twin's --iteration-losses) ({"kind": "same_start", "seed",
"dltrain_f1", "pytorch_f1", "f1_difference_points", "max_loss_difference_first_epoch",
"max_loss_difference", ...}); the summary (same_start_f1_difference_points: the mean per-seed
difference, same_start_max_abs_f1_difference_points) and the table's header state it. Equal
implementations agree there up to rounding, which grows over a run; the unpaired seeds then
differ by the draws alone.

Prints a markdown table and writes LOGS/results.jsonl (each run also to LOGS/runs-so-far.jsonl
as it ends): a {"run": {...}} line (command, date, machine, CPU model, ISA, dltrain and PyTorch
versions, data), one line per run ({"kind": "run", "side", "seed", "epochs", "f1",
"precision", "recall", "jaccard", "f1_per_epoch", "seconds_per_epoch", ...}) and a summary line
({"kind": "summary", mean F1 per side, their difference in points, seconds per epoch per side,
verdict}); PASS when |dltrain's mean F1 - PyTorch's| <= 1 point (0.01; issue 52). --write-docs
also saves them as docs/results/DATE-MACHINE-multilabel_vs_pytorch.jsonl and regenerates
docs/performance.md (scripts/bench/perf_page.py). Exit status 1 on FAIL or a failed run.

Environment: DLTRAIN (default build/dltrain), PYTHON (the twin's interpreter, default
/usr/bin/python3: Debian's PyTorch).
"""
import argparse
import csv
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts", "onnx"))
import perf_page  # noqa: E402
import regression_vs_pytorch as rvp  # noqa: E402  (busy_seconds, measured, read_yaml, table_rows, wait_idle)
import zoo_coverage as zc  # noqa: E402  (cpu_model, isa)

BENCH = "multilabel_vs_pytorch"
TOLERANCE = 1.0  # issue 52: the mean F1 within 1 point (percentage points of F1 in 0..100)


def say(msg):
    sys.stderr.write(f"{BENCH}: {msg}\n")
    sys.stderr.flush()


def die(msg):
    say("error: " + msg)
    sys.exit(1)


def split_labels(field):
    return frozenset(s.strip() for s in field.split(";") if s.strip())


def scored(predictions_csv, table_csv):
    """One scorer for both sides: micro F1, precision, recall and MATLAB's per-image Jaccard of
    the predicted label sets (the CSV's `labels` column, ';'-separated; the image path in its
    first column) against the table's, matched by the path's last two parts (test/NNNNN.png)."""
    def key(p):
        return "/".join(os.path.normpath(p).split(os.sep)[-2:])
    with open(table_csv, newline="", encoding="utf-8-sig") as f:
        rows = [r for r in csv.reader(f) if r]
    truth = {key(r[0]): split_labels(r[1]) for r in rows[1:]}
    with open(predictions_csv, newline="", encoding="utf-8-sig") as f:
        rows = [r for r in csv.reader(f) if r]
    col = rows[0].index("labels")
    pred = {key(r[0]): split_labels(r[col]) for r in rows[1:]}
    if set(pred) != set(truth):
        raise ValueError(f"{predictions_csv}: {len(set(truth) - set(pred))} of the table's images missing, "
                         f"{len(set(pred) - set(truth))} not in it")
    tp = fp = fn = 0
    jac = 0.0
    for k, t in truth.items():
        y = pred[k]
        tp += len(y & t)
        fp += len(y - t)
        fn += len(t - y)
        jac += len(y & t) / len(y | t) if y | t else 1.0
    return {"f1_scored": round(2 * tp / (2 * tp + fp + fn), 6), "precision_scored": round(tp / max(tp + fp, 1), 6),
            "recall_scored": round(tp / max(tp + fn, 1), 6), "jaccard_scored": round(jac / len(truth), 6)}


def dltrain_epoch_f1(log_csv):
    """log.csv's validation_f1 of each epoch's last validation: [[epoch, f1], ...] (validation runs
    every ValidationFrequency iterations and at the end, so an epoch may have none)."""
    if not os.path.exists(log_csv):
        return []
    per_epoch = {}
    with open(log_csv, newline="") as f:
        for r in csv.DictReader(f):
            v = r.get("validation_f1", "")
            if v not in ("", None):
                per_epoch[int(r["epoch"])] = float(v)
    return [[e, round(per_epoch[e], 6)] for e in sorted(per_epoch)]


def run_dltrain(args, data, seed, logs, env):
    run = os.path.join(logs, f"dltrain-seed{seed}")
    log_path = run + ".log"
    cmd = [args.dltrain, "train", args.config, "--output-dir", run, "--quiet",
           "--set", f"data.train={os.path.join(data, 'train.csv')}",
           "--set", f"data.validation={os.path.join(data, 'test.csv')}",
           "--set", f"training.Seed={seed}"]
    if args.epochs:
        cmd += ["--set", f"training.MaxEpochs={args.epochs}"]
    if os.path.exists(run):
        subprocess.check_call(["rm", "-rf", run])
    say(f"dltrain seed {seed}: {' '.join(shlex.quote(c) for c in cmd)} (log {log_path})")
    denv = dict(env, OMP_NUM_THREADS=str(args.threads))
    with open(log_path, "w") as lf:
        rc, wall, load = rvp.measured(cmd, denv, lf, subprocess.STDOUT)
    if rc != 0:
        sys.stderr.write("".join(open(log_path).readlines()[-20:]))
        return {"side": "dltrain", "seed": seed, "error": f"exit {rc} (log {log_path})"}
    j = json.load(open(os.path.join(run, "summary.json")))
    if j.get("status") != "completed":
        return {"side": "dltrain", "seed": seed, "error": f"status {j.get('status')}: {j.get('stop_reason')}"}
    # The test metrics as a user gets them: dltrain classify on the test table.
    cls_cmd = [args.dltrain, "classify", os.path.join(run, "model.bin"), "--table", os.path.join(data, "test.csv"),
               "--threshold", "0.5", "--json", "--output", run + "-pred.csv"]
    say("  " + " ".join(shlex.quote(c) for c in cls_cmd))
    p = subprocess.run(cls_cmd, env=denv, capture_output=True, text=True)
    with open(log_path, "a") as lf:
        lf.write(p.stderr)
    if p.returncode != 0:
        return {"side": "dltrain", "seed": seed, "error": f"dltrain classify: exit {p.returncode} (log {log_path})"}
    c = json.loads(p.stdout)
    extra = {}
    try:
        extra.update(scored(run + "-pred.csv", os.path.join(data, "test.csv")))
    except (ValueError, OSError, IndexError) as e:
        extra["scored_error"] = str(e)
    batch = int(rvp.read_yaml(os.path.join(run, "config.yaml"))["training"]["MiniBatchSize"])
    epochs = int(j["epochs"])
    ips = float(j["train_images_per_second"])
    return {"side": "dltrain", "seed": seed, "epochs": epochs, "f1": round(float(c["f1_micro"]), 6),
            # classify's JSON has per-label precision and recall; the micro ones from its predictions
            "precision": extra.get("precision_scored"), "recall": extra.get("recall_scored"),
            "jaccard": round(float(c["jaccard"]), 6), "exact_match": round(float(c["exact_match"]), 6),
            "mean_average_precision": round(float(c["mean_average_precision"]), 6),
            "summary_validation_f1": j.get("validation_f1"),
            "validation_f1_by_epoch": dltrain_epoch_f1(os.path.join(run, "log.csv")),
            "seconds_per_epoch": round(j["iterations"] * batch / ips / epochs, 4),
            "train_images_per_second": round(ips, 2), "wall_seconds": round(float(j["wall_seconds"]), 3),
            "process_seconds": round(wall, 3), "iterations": j["iterations"], "mini_batch_size": batch,
            "train_images": j.get("train_images"), "test_images": j.get("validation_images"),
            "foreign_load_cores": load, **extra}


def run_pytorch(args, data, seed, logs, env):
    base = os.path.join(logs, f"pytorch-seed{seed}")
    cmd = [args.python, os.path.join(HERE, "pytorch_multilabel.py"), args.config, "--data", data,
           "--seed", str(seed), "--threads", str(args.threads), "--predictions", base + "-pred.csv"]
    if args.epochs:
        cmd += ["--epochs", str(args.epochs)]
    say(f"pytorch seed {seed}: {' '.join(shlex.quote(c) for c in cmd)} (log {base}.log)")
    with open(base + ".json", "w") as out, open(base + ".log", "w") as err:
        rc, wall, load = rvp.measured(cmd, env, out, err)
    if rc != 0:
        sys.stderr.write("".join(open(base + ".log").readlines()[-20:]))
        return {"side": "pytorch", "seed": seed, "error": f"exit {rc} (log {base}.log)"}
    r = json.loads(open(base + ".json").read().strip().splitlines()[-1])
    try:
        r.update(scored(base + "-pred.csv", os.path.join(data, "test.csv")))
    except (ValueError, OSError, IndexError) as e:
        r["scored_error"] = str(e)
    keep = ("epochs", "f1", "precision", "recall", "jaccard", "exact_match", "f1_per_epoch", "seconds_per_epoch",
            "epoch_seconds", "train_images_per_second", "wall_seconds", "iterations_per_epoch", "mini_batch_size",
            "train_images", "test_images", "final_epoch_mean_loss", "torch", "decoder", "tcmalloc", "threads",
            "f1_scored", "precision_scored", "recall_scored", "jaccard_scored", "scored_error")
    return dict({"side": "pytorch", "seed": seed}, **{k: r[k] for k in keep if k in r},
                process_seconds=round(wall, 3), foreign_load_cores=load)


def same_start(args, data, seed, logs, env, dl):
    """The twin from dltrain's start for SEED: dltrain's initial network (a one-epoch run with
    every learn-rate factor 0, exported to ONNX) loaded into the twin (--init-onnx), dltrain's
    mini-batch order for every epoch (--dltrain-order), the whole run; compared with DL, dltrain's
    run of SEED (the same start and order): F1 and each iteration's mini-batch loss."""
    d = os.path.join(logs, "same-start")
    os.makedirs(d, exist_ok=True)
    cfg = rvp.read_yaml(args.config)
    frozen = []
    for layer in cfg["layers"]:
        names = {"convolution2d": ("Weight", "Bias"), "fullyConnected": ("Weight", "Bias"),
                 "batchNormalization": ("Scale", "Offset")}.get(layer["type"], ())
        for n in names:
            frozen += ["--set", f"layers.{layer['Name']}.{n}LearnRateFactor=0"]
    initial = os.path.join(d, f"initial-seed{seed}")
    onnx_path = initial + ".onnx"
    base = os.path.join(d, f"pytorch-seed{seed}")
    denv = dict(env, OMP_NUM_THREADS=str(args.threads))
    steps = [[args.dltrain, "train", args.config, "--output-dir", initial, "--quiet",
              "--set", f"data.train={os.path.join(data, 'train.csv')}",
              "--set", f"data.validation={os.path.join(data, 'test.csv')}",
              "--set", f"training.Seed={seed}", "--set", "training.MaxEpochs=1"] + frozen,
             [args.dltrain, "export", os.path.join(initial, "model.bin"), "--output", onnx_path]]
    twin = [args.python, os.path.join(HERE, "pytorch_multilabel.py"), args.config, "--data", data, "--seed", str(seed),
            "--threads", str(args.threads), "--init-onnx", onnx_path, "--dltrain-order",
            "--iteration-losses", base + "-losses.txt", "--predictions", base + "-pred.csv"]
    if args.epochs:
        twin += ["--epochs", str(args.epochs)]
    say(f"same start, seed {seed}: {' '.join(shlex.quote(c) for c in twin)} (log {base}.log)")
    with open(base + ".log", "w") as lf:
        for cmd in steps:
            lf.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
            lf.flush()
            if subprocess.call(cmd, env=denv, stdout=lf, stderr=subprocess.STDOUT) != 0:
                return {"kind": "same_start", "seed": seed,
                        "error": f"dltrain {cmd[1]}: failed (log {base}.log)"}
        lf.write("$ " + " ".join(shlex.quote(c) for c in twin) + "\n")
    with open(base + ".json", "w") as out, open(base + ".log", "a") as err:
        rc, wall, load = rvp.measured(twin, env, out, err)
    if rc != 0:
        return {"kind": "same_start", "seed": seed, "error": f"pytorch_multilabel.py: exit {rc} (log {base}.log)"}
    r = json.loads(open(base + ".json").read().strip().splitlines()[-1])
    with open(os.path.join(logs, f"dltrain-seed{seed}", "log.csv"), newline="") as f:
        dl_losses = [float(v["minibatch_loss"]) for v in csv.DictReader(f) if v.get("minibatch_loss")]
    with open(base + "-losses.txt") as f:
        pt_losses = [float(v) for v in f if v.strip()]
    if len(dl_losses) != len(pt_losses) or not dl_losses:
        return {"kind": "same_start", "seed": seed,
                "error": f"{len(dl_losses)} dltrain and {len(pt_losses)} PyTorch iterations"}
    diff = [abs(a - b) for a, b in zip(dl_losses, pt_losses)]
    first = len(dl_losses) // r["epochs"]
    out = {"kind": "same_start", "seed": seed, "epochs": r["epochs"], "iterations": len(dl_losses),
           "dltrain_f1": dl["f1"], "pytorch_f1": r["f1"],
           "f1_difference_points": round(100 * (dl["f1"] - r["f1"]), 3),
           "dltrain_jaccard": dl["jaccard"], "pytorch_jaccard": r["jaccard"],
           "max_loss_difference_first_epoch": round(max(diff[:first]), 7),
           "max_loss_difference": round(max(diff), 7),
           "last_losses": [round(dl_losses[-1], 6), round(pt_losses[-1], 6)],
           "dltrain_f1_by_epoch": dl.get("validation_f1_by_epoch"), "pytorch_f1_per_epoch": r.get("f1_per_epoch"),
           "seconds_per_epoch": r.get("seconds_per_epoch"), "foreign_load_cores": load,
           "dltrain_losses": [round(v, 6) for v in dl_losses], "pytorch_losses": [round(v, 6) for v in pt_losses]}
    try:
        out["pytorch_f1_scored"] = scored(base + "-pred.csv", os.path.join(data, "test.csv"))["f1_scored"]
    except (ValueError, OSError, IndexError) as e:
        out["scored_error"] = str(e)
    return out


def summarise(runs):
    ok = {s: [r for r in runs if r["side"] == s and "error" not in r] for s in ("dltrain", "pytorch")}
    s = {"kind": "summary", "seeds": sorted({r["seed"] for r in runs}), "tolerance_points": TOLERANCE}
    failed = [f"{r['side']} seed {r['seed']}: {r['error']}" for r in runs if "error" in r]
    for side, rs in ok.items():
        if rs:
            s[f"{side}_f1_mean"] = round(statistics.mean(r["f1"] for r in rs), 6)
            s[f"{side}_jaccard_mean"] = round(statistics.mean(r["jaccard"] for r in rs), 6)
            s[f"{side}_seconds_per_epoch_mean"] = round(statistics.mean(r["seconds_per_epoch"] for r in rs), 4)
    if ok["dltrain"] and ok["pytorch"]:
        s["f1_difference_points"] = round(100 * (s["dltrain_f1_mean"] - s["pytorch_f1_mean"]), 3)
        s["epoch_time_ratio"] = round(s["dltrain_seconds_per_epoch_mean"] / s["pytorch_seconds_per_epoch_mean"], 4)
    # Each side's own F1 against the one scorer's (its predictions on the test table).
    s["checks"] = [f"{r['side']} seed {r['seed']}: its F1 {r['f1']:.4f}, scored from its predictions "
                   f"{r['f1_scored']:.4f}" for rs in ok.values() for r in rs
                   if "f1_scored" in r and abs(r["f1_scored"] - r["f1"]) > 1e-4]
    s["checks"] += [f"{r['side']} seed {r['seed']}: not scored ({r['scored_error']})"
                    for rs in ok.values() for r in rs if "scored_error" in r]
    s["checks"] += [f"dltrain seed {r['seed']}: classify's F1 {r['f1']:.4f}, summary.json's validation_f1 "
                    f"{r['summary_validation_f1']:.4f}" for r in ok["dltrain"]
                    if r.get("summary_validation_f1") is not None and abs(r["summary_validation_f1"] - r["f1"]) > 1e-4]
    if failed:
        s["verdict"] = "FAIL: " + "; ".join(failed)
    elif "f1_difference_points" not in s:
        s["verdict"] = "FAIL: a side has no result"
    elif abs(s["f1_difference_points"]) <= TOLERANCE:
        s["verdict"] = (f"PASS: dltrain's mean F1 is {s['f1_difference_points']:+.2f} points from PyTorch's "
                        f"(|difference| <= {TOLERANCE:g})")
    else:
        s["verdict"] = (f"FAIL: dltrain's mean F1 is {s['f1_difference_points']:+.2f} points from PyTorch's "
                        f"(|difference| > {TOLERANCE:g})")
    return s


def summarise_same_start(rows):
    """The same-start pairs: dltrain's run of a seed against the twin from its start and order."""
    ok = [r for r in rows if "error" not in r]
    s = {"same_start_seeds": [r["seed"] for r in rows]}
    if ok:
        d = [r["f1_difference_points"] for r in ok]
        s.update({"same_start_dltrain_f1_mean": round(statistics.mean(r["dltrain_f1"] for r in ok), 6),
                  "same_start_pytorch_f1_mean": round(statistics.mean(r["pytorch_f1"] for r in ok), 6),
                  "same_start_f1_difference_points": round(statistics.mean(d), 3),
                  "same_start_max_abs_f1_difference_points": round(max(abs(v) for v in d), 3),
                  "same_start_max_loss_difference_first_epoch": max(r["max_loss_difference_first_epoch"] for r in ok),
                  "same_start_max_loss_difference": max(r["max_loss_difference"] for r in ok)})
    failed = "; ".join(f"seed {r['seed']}: {r['error']}" for r in rows if "error" in r)
    s["same_start"] = (
        (f"from dltrain's start and order (seeds {', '.join(str(r['seed']) for r in ok)}, every epoch) the twin's F1 "
         f"differs from dltrain's by {s['same_start_f1_difference_points']:+.2f} points on average and at most "
         f"{s['same_start_max_abs_f1_difference_points']:.2f} in one seed; the mini-batch losses differ by at most "
         f"{s['same_start_max_loss_difference_first_epoch']:.1e} in the first epoch and "
         f"{s['same_start_max_loss_difference']:.1e} over the {ok[0]['iterations']} iterations" if ok else
         "same start: no pair") + (f" (failed: {failed})" if failed else ""))
    return s


def markdown(runs, summary, pairs):
    out = ["| seed | dltrain F1 | PyTorch F1 | dltrain Jaccard | PyTorch Jaccard | dltrain s / epoch | "
           "PyTorch s / epoch | foreign load (cores) |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for seed in summary["seeds"]:
        d = next((r for r in runs if r["seed"] == seed and r["side"] == "dltrain"), {})
        p = next((r for r in runs if r["seed"] == seed and r["side"] == "pytorch"), {})

        def f(r, k, fmt):
            return "error" if "error" in r else (format(r[k], fmt) if k in r else "—")
        out.append(f"| {seed} | {f(d, 'f1', '.4f')} | {f(p, 'f1', '.4f')} | {f(d, 'jaccard', '.4f')} | "
                   f"{f(p, 'jaccard', '.4f')} | {f(d, 'seconds_per_epoch', '.2f')} | {f(p, 'seconds_per_epoch', '.2f')} | "
                   f"{d.get('foreign_load_cores', '—')}, {p.get('foreign_load_cores', '—')} |")
    if "f1_difference_points" in summary:
        out.append(f"| mean | {summary['dltrain_f1_mean']:.4f} | {summary['pytorch_f1_mean']:.4f} | "
                   f"{summary['dltrain_jaccard_mean']:.4f} | {summary['pytorch_jaccard_mean']:.4f} | "
                   f"{summary['dltrain_seconds_per_epoch_mean']:.2f} | {summary['pytorch_seconds_per_epoch_mean']:.2f} | |")
    if pairs:
        out += ["", "| seed, same start | dltrain F1 | PyTorch F1 | difference (points) | largest loss difference |",
                "|---:|---:|---:|---:|---:|"]
        out += [f"| {r['seed']} | error: {r['error']} | | | |" if "error" in r else
                f"| {r['seed']} | {r['dltrain_f1']:.4f} | {r['pytorch_f1']:.4f} | {r['f1_difference_points']:+.2f} | "
                f"{r['max_loss_difference']:.1e} |" for r in pairs]
    return (out + ["", summary["verdict"]] + ([summary["same_start"]] if "same_start" in summary else []) +
            [f"check: {c}" for c in summary["checks"]])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "shapes-multilabel.yaml"))
    ap.add_argument("--seeds", default="0 1 2", help="space-separated seeds; one run per seed and side")
    ap.add_argument("--epochs", type=int, default=0, help="epochs per run (default: the config's MaxEpochs)")
    ap.add_argument("--data", help="shapes-multi folder (train.csv, test.csv); made when missing "
                                   "(default: LOGS/shapes-multi)")
    ap.add_argument("--count", type=int, default=3000, help="images (training and test) when making the data")
    ap.add_argument("--logs", help="run folders and results.jsonl (default: a new /tmp folder)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--wait-idle", type=int, default=120, help="seconds to wait for idle cores before each run")
    ap.add_argument("--same-start-seeds",
                    help="seeds (of --seeds) whose twin also trains from dltrain's start and in dltrain's order "
                         "for the whole run (default: every seed; \"\": none)")
    ap.add_argument("--write-docs", action="store_true",
                    help="save the results as docs/results/DATE-MACHINE-multilabel_vs_pytorch.jsonl and "
                         "regenerate docs/performance.md")
    ap.add_argument("--machine", default=os.uname().nodename, help="the result file's machine label")
    args = ap.parse_args()
    try:
        seeds = [int(s) for s in args.seeds.split()]
    except ValueError:
        die(f"--seeds must be integers, got '{args.seeds}'")
    if not seeds or min(seeds) < 0:
        die(f"--seeds must list integers >= 0, got '{args.seeds}'")
    if args.epochs < 0:
        die(f"--epochs must be >= 1, got {args.epochs}")
    try:
        same_seeds = seeds if args.same_start_seeds is None else [int(s) for s in args.same_start_seeds.split()]
    except ValueError:
        die(f"--same-start-seeds must be integers, got '{args.same_start_seeds}'")
    if set(same_seeds) - set(seeds):
        die(f"--same-start-seeds must be among --seeds ({args.seeds}): the pair's dltrain side is that seed's run")
    if args.count < 10:
        die(f"--count must be at least 10, got {args.count}")
    args.dltrain = os.path.abspath(os.environ.get("DLTRAIN", os.path.join(ROOT, "build", "dltrain")))
    args.python = os.environ.get("PYTHON", "/usr/bin/python3")
    args.config = os.path.abspath(args.config)
    if not os.access(args.dltrain, os.X_OK):
        die(f"no dltrain binary at {args.dltrain} (build it, or set DLTRAIN=...)")
    if not os.path.isfile(args.config):
        die(f"no config {args.config}")
    if subprocess.call([args.python, "-c", "import torch, yaml, numpy"], stderr=subprocess.DEVNULL) != 0:
        die(f"{args.python} cannot import torch, yaml and numpy (set PYTHON=...)")

    logs = os.path.abspath(args.logs) if args.logs else __import__("tempfile").mkdtemp(prefix=BENCH + ".")
    os.makedirs(logs, exist_ok=True)
    say(f"logs in {logs}")
    env = dict(os.environ)

    data = os.path.abspath(args.data or os.path.join(logs, "shapes-multi"))
    made = None
    if not (os.path.isfile(os.path.join(data, "train.csv")) and os.path.isfile(os.path.join(data, "test.csv"))):
        made = [args.dltrain, "make-dataset", "shapes-multi", data, "--count", str(args.count), "--seed", "0"]
        say("making the data: " + " ".join(shlex.quote(c) for c in made))
        t0 = time.time()
        if subprocess.call(made) != 0:
            die("make-dataset shapes-multi failed")
        say(f"made in {time.time() - t0:.1f} s")
    n_train, n_test = rvp.table_rows(os.path.join(data, "train.csv")), rvp.table_rows(os.path.join(data, "test.csv"))

    cfg_training = rvp.read_yaml(args.config).get("training", {}) or {}
    epochs = args.epochs or int(cfg_training.get("MaxEpochs", 30))
    version = subprocess.run([args.dltrain, "--version"], capture_output=True, text=True).stdout.splitlines()
    torch_version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    machine = {"machine": args.machine, "cpu_model": zc.cpu_model(), "isa": zc.isa(), "threads": args.threads}

    runs, extra_rows = [], []
    open(os.path.join(logs, "runs-so-far.jsonl"), "w").close()

    def keep(r):
        say(json.dumps({k: v for k, v in r.items() if not isinstance(v, list)}))
        with open(os.path.join(logs, "runs-so-far.jsonl"), "a") as f:  # kept if the script is stopped
            f.write(json.dumps(r) + "\n")
    for i, seed in enumerate(seeds):
        order = (run_dltrain, run_pytorch) if i % 2 == 0 else (run_pytorch, run_dltrain)
        for fn in order:
            rvp.wait_idle(args.wait_idle, say)
            r = fn(args, data, seed, logs, env)
            peer = version[0] if r["side"] == "dltrain" and version else f"PyTorch {torch_version}"
            r = {"kind": "run", **r, **machine, "version": peer}
            runs.append(r)
            keep(r)
        dl = next(r for r in runs if r["seed"] == seed and r["side"] == "dltrain")
        if seed in same_seeds:
            rvp.wait_idle(args.wait_idle, say)
            ss = (same_start(args, data, seed, logs, env, dl) if "error" not in dl else
                  {"kind": "same_start", "seed": seed, "error": "dltrain's run of the seed failed"})
            extra_rows.append(ss)
            keep(ss)
    summary = summarise(runs)
    if same_seeds:
        summary.update(summarise_same_start(extra_rows))

    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    config_rel = os.path.relpath(args.config, ROOT)
    loads = [r["foreign_load_cores"] for r in runs if "foreign_load_cores" in r]
    header = [
        f"`scripts/bench/{BENCH}.py` on {when}: {machine['cpu_model']} ({machine['isa']}), {args.threads} threads "
        f"each; {config_rel} (MATLAB's multi-label example, trainnet's binary-crossentropy) for {epochs} epochs on "
        f"`dltrain make-dataset shapes-multi` ({n_train:,} training / {n_test:,} test images, 1 to 3 of 4 kinds "
        f"of shape each); {version[0] if version else 'dltrain'}, PyTorch {torch_version} "
        f"(`scripts/bench/pytorch_multilabel.py`: the same network, options, initialisation and data, the loss "
        f"summed over the labels and averaged over the images).",
        f"F1 (micro over every test image and label, threshold 0.5) and Jaccard (the mean over images) after the "
        f"last epoch; seconds per epoch: the training loop, validation excluded; sides in turn on the same "
        f"{args.threads} cores, the first alternating by seed. Other processes kept up to "
        f"{max(loads) if loads else 0:.1f} cores busy during the runs (foreign load), so the times are "
        f"indicative. {summary['verdict']}."] + ([summary["same_start"][0].upper() + summary["same_start"][1:] + "."]
                                                 if "same_start" in summary else [])
    run_line = {"bench": BENCH, "command": " ".join(shlex.quote(a) for a in sys.argv), "date": when,
                "config": config_rel, "epochs": epochs, "seeds": seeds, "data": data,
                "make_dataset": " ".join(made) if made else None, "train_images": n_train, "test_images": n_test,
                "dltrain": version[0] if version else None, "dltrain_path": args.dltrain, "torch": torch_version,
                "header": header, **machine}
    rows = runs + extra_rows + [summary]
    with open(os.path.join(logs, "results.jsonl"), "w") as f:
        f.write(json.dumps({"run": run_line}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print("\n".join(header[:1] + [""] + markdown(runs, summary, extra_rows)))
    if args.write_docs:
        perf_page.save_result(BENCH, args.machine, run_line, rows)
    return 0 if summary["verdict"].startswith("PASS") else 1


if __name__ == "__main__":
    sys.exit(main())

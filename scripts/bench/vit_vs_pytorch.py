#!/usr/bin/env python3
"""A vision transformer against a PyTorch twin: configs/cifar10-vit.yaml (ViT-Tiny sized, patch 4,
6 blocks, adamw, warmup then cosine) trained on CIFAR-10 by dltrain and by PyTorch eager
(scripts/bench/pytorch_vit.py: the same network, initialisation, options, augmentation and
data) for each seed on the same cores; the test accuracy after the same epochs, the seconds
per epoch and the peak memory side by side (issue 51, item 4).

  nice -n 19 env OMP_WAIT_POLICY=passive scripts/bench/vit_vs_pytorch.py [--seeds "0 1"]
      [--epochs 3] [--train-subset 10000] [--data DIR] [--logs DIR] [--wait-idle S]
      [--side both|dltrain|pytorch] [--resume] [--write-docs [--machine NAME] [--note TEXT]]

Data: DIR (default data/cifar10, unpacked from /work/shared/datasets/cifar10-jpg.tar by
datasets/get-cifar10.sh when missing) with train/<class>/ and test/<class>/. --train-subset N
(default 10000; 0: all 50,000) trains both sides on the same fixed class-balanced subset: the
first N / 10 images of each class folder in sorted order (symbolic links in LOGS/subset-N/);
both are scored on the whole test folder (10,000 images).

The schedule is sized to --epochs: LOGS/config.yaml is the config with MaxEpochs = E, a linear
warmup over the first W = max(1, round(E / 6)) epochs (the config's 5 of 30; NumSteps = W x
iterations per epoch) and a per-iteration cosine to 0 over the other E - W epochs, the data paths and
ValidationFrequency 1000000 (dltrain then validates after iteration 1 and at the end); both sides
train from that file. For each seed both sides run one after the other, the first alternating
(seed 0: dltrain first, seed 1: PyTorch first), each on --threads (2) threads (OMP_NUM_THREADS
for dltrain, torch.set_num_threads for PyTorch); before each run the script waits up to
--wait-idle seconds for idle cores and records the cores other processes kept busy during the
run (foreign_load_cores) and the run's peak resident memory (wait4's ru_maxrss, peak_rss_mib).
dltrain: `dltrain train LOGS/config.yaml --set training.Seed=S`; its test accuracy summary.json's
validation_accuracy (the last network on the test folder), its seconds per epoch the trained
images (iterations x MiniBatchSize) / train_images_per_second / epochs. PyTorch
(pytorch_vit.py, run by PYTHON: a PyTorch 2.15): its test accuracy after the last epoch, its
seconds per epoch the mean of its training loops. --resume keeps the completed runs of
LOGS/runs-so-far.jsonl with the same epochs and training images (a stopped comparison, or one
side run before the other with --side) and runs the rest. Check: the twin writes each iteration's rate
(--iterations-csv); the summary's "checks" give, per seed, the largest relative difference from
dltrain's log.csv base_learning_rate (MISMATCH above 1e-5: log.csv keeps 6 significant digits)
and both sides' mean mini-batch loss per epoch.

Prints a markdown table and writes LOGS/results.jsonl (each run also to LOGS/runs-so-far.jsonl
as it ends): a {"run": {...}} line (command, date, machine, CPU model, ISA, dltrain and PyTorch
versions, data, subset, epochs), one line per run ({"kind": "run", "side", "seed",
"test_accuracy", "seconds_per_epoch", "peak_rss_mib", "foreign_load_cores", ...}) and a summary
({"kind": "summary", the mean accuracy per side, their difference in points, seconds per epoch
and peak memory per side, verdict}): PASS when |dltrain's mean accuracy - PyTorch's| <= 1 point.
--write-docs also saves them as docs/results/DATE-MACHINE-vit_vs_pytorch.jsonl and regenerates
docs/performance.md (scripts/bench/perf_page.py's vit_twin). Exit status 1 on FAIL or a failed
run. Duration: each run is E x (its seconds per epoch) plus decoding and the test passes; on 2
shared cores PyTorch trained 48 images a second (an epoch of 10,000 in 208 s, the test in 80 s),
so the default (10,000 images, 3 epochs, 2 seeds) is about 25 minutes for PyTorch's two runs.

Environment: DLTRAIN (default build/dltrain), PYTHON (the twin's interpreter, default
/work/wt/bench/build/zoo-venv/bin/python, then build/zoo-venv/bin/python, then /usr/bin/python3).
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
import regression_vs_pytorch as rvp  # noqa: E402  (busy_seconds, read_yaml, wait_idle)
import zoo_coverage as zc  # noqa: E402  (cpu_model, isa)

BENCH = "vit_vs_pytorch"
TOLERANCE = 1.0  # issue 51: the mean test accuracy within 1 point
PYTHONS = ["/work/wt/bench/build/zoo-venv/bin/python", os.path.join(ROOT, "build", "zoo-venv", "bin", "python"),
           "/usr/bin/python3"]


def say(msg):
    sys.stderr.write(f"{BENCH}: {msg}\n")
    sys.stderr.flush()


def die(msg):
    say("error: " + msg)
    sys.exit(1)


def measured(cmd, env, stdout, stderr):
    """Runs cmd; returns (exit status, wall seconds, foreign load in cores, peak RSS in MiB)."""
    b0, w0 = rvp.busy_seconds(), time.time()
    p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    b1, w1 = rvp.busy_seconds(), time.time()
    own = usage.ru_utime + usage.ru_stime
    load = round(max(0.0, (b1 - b0 - own) / max(w1 - w0, 1e-9)), 2)
    return p.returncode, w1 - w0, load, round(usage.ru_maxrss / 1024.0, 1)


def make_subset(data, n, logs):
    """The first n / 10 images of each class folder (sorted), as symbolic links; the test folder linked whole."""
    classes = sorted(d for d in os.listdir(os.path.join(data, "train")) if os.path.isdir(os.path.join(data, "train", d)))
    per_class, extra = divmod(n, len(classes))
    if extra:
        die(f"--train-subset {n} is not a multiple of the {len(classes)} classes")
    out = os.path.join(logs, f"subset-{n}")
    subprocess.check_call(["rm", "-rf", out])
    for cls in classes:
        src = os.path.join(data, "train", cls)
        files = sorted(f for f in os.listdir(src) if not f.startswith("."))
        if len(files) < per_class:
            die(f"{src} has {len(files)} images, fewer than --train-subset {n} / {len(classes)}")
        os.makedirs(os.path.join(out, "train", cls))
        for f in files[:per_class]:
            os.symlink(os.path.join(src, f), os.path.join(out, "train", cls, f))
    os.symlink(os.path.join(data, "test"), os.path.join(out, "test"))
    return out


def sized_config(args, data, n_train, logs):
    """LOGS/config.yaml: the config with the schedule sized to --epochs (module doc)."""
    cfg = rvp.read_yaml(args.config)
    t = cfg.setdefault("training", {})
    batch = int(t.get("MiniBatchSize", 128))
    ipe = n_train // min(batch, n_train)
    warm = max(1, round(args.epochs / 6))
    if args.epochs < 2:
        die(f"--epochs must be at least 2 (a warmup epoch and a cosine one), got {args.epochs}")
    t["MaxEpochs"] = args.epochs
    t["LearnRateSchedule"] = [{"type": "warmupLearnRate", "NumSteps": warm * ipe},
                              {"type": "cosineLearnRate", "Period": (args.epochs - warm) * ipe, "FrequencyUnit": "iteration"}]
    t["ValidationFrequency"] = 1000000
    cfg.setdefault("data", {})["train"] = os.path.join(data, "train")
    cfg["data"]["validation"] = os.path.join(data, "test")
    path = os.path.join(logs, "config.yaml")
    import yaml
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False, default_flow_style=None, width=120)
    return path, {"warmup_epochs": warm, "warmup_iterations": warm * ipe, "cosine_epochs": args.epochs - warm,
                  "iterations_per_epoch": ipe, "mini_batch_size": batch}


def iteration_rows(path):
    """{iteration: (base_learning_rate, minibatch_loss)} from a log.csv or the twin's --iterations-csv."""
    out = {}
    if os.path.exists(path):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r.get("iteration") and r.get("base_learning_rate") and r.get("minibatch_loss"):
                    out[int(r["iteration"])] = (float(r["base_learning_rate"]), float(r["minibatch_loss"]))
    return out


def last_epoch_loss(rows, iterations_per_epoch):
    last = sorted(rows)[-iterations_per_epoch:]
    return round(sum(rows[i][1] for i in last) / len(last), 5) if last else None


def run_dltrain(args, config, seed, logs, env):
    run = os.path.join(logs, f"dltrain-seed{seed}")
    cmd = [args.dltrain, "train", config, "--output-dir", run, "--quiet", "--set", f"training.Seed={seed}"]
    subprocess.call(["rm", "-rf", run])
    say(f"dltrain seed {seed}: {' '.join(shlex.quote(c) for c in cmd)} (log {run}.log)")
    with open(run + ".log", "w") as lf:
        rc, wall, load, rss = measured(cmd, dict(env, OMP_NUM_THREADS=str(args.threads)), lf, subprocess.STDOUT)
    base = {"side": "dltrain", "seed": seed, "foreign_load_cores": load, "peak_rss_mib": rss,
            "process_seconds": round(wall, 1)}
    if rc != 0:
        sys.stderr.write("".join(open(run + ".log").readlines()[-20:]))
        return dict(base, error=f"exit {rc} (log {run}.log)")
    j = json.load(open(os.path.join(run, "summary.json")))
    if j.get("status") != "completed":
        return dict(base, error=f"status {j.get('status')}: {j.get('stop_reason')}")
    batch = int(rvp.read_yaml(config)["training"]["MiniBatchSize"])
    ips = float(j["train_images_per_second"])
    epochs = int(j["epochs"])
    rows = iteration_rows(os.path.join(run, "log.csv"))
    return dict(base, epochs=epochs, final_epoch_mean_loss=last_epoch_loss(rows, j["iterations"] // epochs), test_accuracy=round(float(j["validation_accuracy"]), 4),
                seconds_per_epoch=round(j["iterations"] * batch / ips / epochs, 2),
                train_images_per_second=round(ips, 2), wall_seconds=round(float(j["wall_seconds"]), 1),
                iterations=j["iterations"], train_images=j.get("train_images"), test_images=j.get("validation_images"))


def run_pytorch(args, config, seed, logs, env):
    base_path = os.path.join(logs, f"pytorch-seed{seed}")
    cmd = [args.python, os.path.join(HERE, "pytorch_vit.py"), config, "--data", args.subset, "--seed", str(seed),
           "--threads", str(args.threads), "--iterations-csv", base_path + "-iterations.csv"]
    say(f"pytorch seed {seed}: {' '.join(shlex.quote(c) for c in cmd)} (log {base_path}.log)")
    with open(base_path + ".json", "w") as out, open(base_path + ".log", "w") as err:
        rc, wall, load, rss = measured(cmd, env, out, err)
    base = {"side": "pytorch", "seed": seed, "foreign_load_cores": load, "peak_rss_mib": rss,
            "process_seconds": round(wall, 1)}
    if rc != 0:
        sys.stderr.write("".join(open(base_path + ".log").readlines()[-20:]))
        return dict(base, error=f"exit {rc} (log {base_path}.log)")
    r = json.loads(open(base_path + ".json").read().strip().splitlines()[-1])
    keep = ("epochs", "test_accuracy", "seconds_per_epoch", "epoch_seconds", "train_images_per_second", "wall_seconds",
            "train_images", "test_images", "final_epoch_mean_loss", "learnables", "torch")
    return dict(base, **{k: r[k] for k in keep if k in r})


def rate_check(logs, seed, iterations_per_epoch):
    """A seed's learning rates on both sides (their largest relative difference; log.csv keeps 6
    significant digits) and each side's mean mini-batch loss per epoch."""
    d = iteration_rows(os.path.join(logs, f"dltrain-seed{seed}", "log.csv"))
    p = iteration_rows(os.path.join(logs, f"pytorch-seed{seed}-iterations.csv"))
    if not d or not p:
        return None
    if sorted(d) != sorted(p):
        return f"seed {seed}: dltrain ran {len(d)} iterations, PyTorch {len(p)}"
    worst = max(abs(d[i][0] - p[i][0]) / max(abs(d[i][0]), 1e-30) for i in d)
    ipe = max(iterations_per_epoch, 1)

    def per_epoch(rows):
        its = sorted(rows)
        return "/".join(f"{statistics.mean(rows[i][1] for i in its[e:e + ipe]):.3f}" for e in range(0, len(its), ipe))
    return (f"seed {seed}: the learning rates of the {len(d)} iterations agree to {worst:.1e} relative" +
            ("" if worst < 1e-5 else " (MISMATCH: > 1e-5)") +
            f"; mean mini-batch loss per epoch dltrain {per_epoch(d)}, PyTorch {per_epoch(p)}")


def summarise(runs, logs, iterations_per_epoch):
    ok = {s: [r for r in runs if r["side"] == s and "error" not in r] for s in ("dltrain", "pytorch")}
    s = {"kind": "summary", "seeds": sorted({r["seed"] for r in runs}), "tolerance_points": TOLERANCE}
    s["checks"] = [c for c in (rate_check(logs, seed, iterations_per_epoch) for seed in s["seeds"]) if c]
    for side, rs in ok.items():
        if rs:
            s[f"{side}_accuracy_mean"] = round(statistics.mean(r["test_accuracy"] for r in rs), 3)
            s[f"{side}_seconds_per_epoch_mean"] = round(statistics.mean(r["seconds_per_epoch"] for r in rs), 2)
            s[f"{side}_peak_rss_mib_max"] = max(r["peak_rss_mib"] for r in rs)
    failed = [f"{r['side']} seed {r['seed']}: {r['error']}" for r in runs if "error" in r]
    if ok["dltrain"] and ok["pytorch"]:
        s["accuracy_difference_points"] = round(s["dltrain_accuracy_mean"] - s["pytorch_accuracy_mean"], 3)
        s["epoch_time_ratio"] = round(s["dltrain_seconds_per_epoch_mean"] / s["pytorch_seconds_per_epoch_mean"], 3)
    if failed:
        s["verdict"] = "FAIL: " + "; ".join(failed)
    elif "accuracy_difference_points" not in s:
        s["verdict"] = "no verdict: only " + ", ".join(k for k, v in ok.items() if v) + " ran"
    else:
        d = s["accuracy_difference_points"]
        s["verdict"] = (f"{'PASS' if abs(d) <= TOLERANCE else 'FAIL'}: dltrain's mean test accuracy is {d:+.2f} points "
                        f"from PyTorch's (|difference| {'<=' if abs(d) <= TOLERANCE else '>'} {TOLERANCE:g})")
    return s


def markdown(runs, summary):
    out = ["| seed | dltrain accuracy % | PyTorch accuracy % | dltrain s / epoch | PyTorch s / epoch | "
           "dltrain peak MiB | PyTorch peak MiB | foreign load (cores) |", "|---:|---:|---:|---:|---:|---:|---:|---|"]

    def f(r, k, fmt):
        return "error" if "error" in r else (format(r[k], fmt) if k in r else "—")
    for seed in summary["seeds"]:
        d = next((r for r in runs if r["seed"] == seed and r["side"] == "dltrain"), {})
        p = next((r for r in runs if r["seed"] == seed and r["side"] == "pytorch"), {})
        out.append(f"| {seed} | {f(d, 'test_accuracy', '.2f')} | {f(p, 'test_accuracy', '.2f')} | "
                   f"{f(d, 'seconds_per_epoch', '.1f')} | {f(p, 'seconds_per_epoch', '.1f')} | {f(d, 'peak_rss_mib', '.0f')} | "
                   f"{f(p, 'peak_rss_mib', '.0f')} | {d.get('foreign_load_cores', '—')}, {p.get('foreign_load_cores', '—')} |")
    return out + ["", summary["verdict"]] + [f"check: {c}" for c in summary["checks"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "cifar10-vit.yaml"))
    ap.add_argument("--seeds", default="0 1", help="space-separated seeds; one run per seed and side")
    ap.add_argument("--epochs", type=int, default=3, help="epochs per run; the schedule is sized to them")
    ap.add_argument("--train-subset", type=int, default=10000,
                    help="train on the first N/10 images of each class (0: the whole training folder)")
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "cifar10"), help="CIFAR-10 folder (train/, test/)")
    ap.add_argument("--logs", help="run folders and results.jsonl (default: a new /tmp folder)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--side", choices=("both", "dltrain", "pytorch"), default="both")
    ap.add_argument("--wait-idle", type=int, default=120, help="seconds to wait for idle cores before each run")
    ap.add_argument("--resume", action="store_true",
                    help="keep the completed runs of LOGS/runs-so-far.jsonl (same epochs and images); run the others")
    ap.add_argument("--write-docs", action="store_true",
                    help="save the results as docs/results/DATE-MACHINE-vit_vs_pytorch.jsonl and regenerate "
                         "docs/performance.md")
    ap.add_argument("--machine", default=os.uname().nodename, help="the result file's machine label")
    ap.add_argument("--note", default="", help="a sentence on how the runs were made, for the header and the table")
    args = ap.parse_args()
    try:
        seeds = [int(s) for s in args.seeds.split()]
    except ValueError:
        die(f"--seeds must be integers, got '{args.seeds}'")
    if not seeds or min(seeds) < 0:
        die(f"--seeds must list integers >= 0, got '{args.seeds}'")
    if args.train_subset < 0:
        die(f"--train-subset must be >= 0, got {args.train_subset}")
    args.dltrain = os.path.abspath(os.environ.get("DLTRAIN", os.path.join(ROOT, "build", "dltrain")))
    args.python = os.environ.get("PYTHON") or next((p for p in PYTHONS if os.access(p, os.X_OK)), "/usr/bin/python3")
    args.config = os.path.abspath(args.config)
    if args.side != "pytorch" and not os.access(args.dltrain, os.X_OK):
        die(f"no dltrain binary at {args.dltrain} (build it, or set DLTRAIN=...)")
    if not os.path.isfile(args.config):
        die(f"no config {args.config}")
    torch_version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                                   text=True).stdout.strip()
    if args.side != "dltrain" and not torch_version:
        die(f"{args.python} cannot import torch (set PYTHON=...)")

    logs = os.path.abspath(args.logs) if args.logs else __import__("tempfile").mkdtemp(prefix=BENCH + ".")
    os.makedirs(logs, exist_ok=True)
    say(f"logs in {logs}")
    data = os.path.abspath(args.data)
    if not (os.path.isdir(os.path.join(data, "train")) and os.path.isdir(os.path.join(data, "test"))):
        archive = "/work/shared/datasets/cifar10-jpg.tar"
        get = [os.path.join(ROOT, "datasets", "get-cifar10.sh"), data] + (["--from", archive] if os.path.exists(archive) else [])
        say("no CIFAR-10 in " + data + ": " + " ".join(get))
        if subprocess.call(get) != 0:
            die("datasets/get-cifar10.sh failed")
    args.subset = make_subset(data, args.train_subset, logs) if args.train_subset else data
    n_train = sum(len(fs) for _, _, fs in os.walk(os.path.join(args.subset, "train"), followlinks=True))
    n_test = sum(len(fs) for _, _, fs in os.walk(os.path.join(args.subset, "test"), followlinks=True))
    config, plan = sized_config(args, args.subset, n_train, logs)
    say(f"{n_train} training / {n_test} test images; {args.epochs} epochs: {plan}")

    version = []
    if args.side != "pytorch":
        version = subprocess.run([args.dltrain, "--version"], capture_output=True, text=True).stdout.splitlines()
    machine = {"machine": args.machine, "cpu_model": zc.cpu_model(), "isa": zc.isa(), "threads": args.threads}
    env = dict(os.environ)
    sides = {"both": (run_dltrain, run_pytorch), "dltrain": (run_dltrain,), "pytorch": (run_pytorch,)}[args.side]
    runs, kept = [], []
    so_far = os.path.join(logs, "runs-so-far.jsonl")
    done = {}
    if args.resume and os.path.exists(so_far):
        for line in open(so_far):
            r = json.loads(line)
            if "error" not in r and r.get("epochs") == args.epochs and r.get("train_images") == n_train:
                done[(r["side"], r["seed"])] = r
    else:
        open(so_far, "w").close()
    for i, seed in enumerate(seeds):
        for fn in (sides if i % 2 == 0 else sides[::-1]):
            side = fn.__name__.split("_")[1]
            if (side, seed) in done:
                say(f"{side} seed {seed}: kept from {so_far} (--resume)")
                runs.append(done[(side, seed)])
                kept.append((side, seed))
                continue
            rvp.wait_idle(args.wait_idle, say)
            r = fn(args, config, seed, logs, env)
            peer = (version[0] if version else "dltrain") if r["side"] == "dltrain" else f"PyTorch {torch_version}"
            r = {"kind": "run", **r, **machine, "version": peer}
            runs.append(r)
            say(json.dumps({k: v for k, v in r.items() if not isinstance(v, list)}))
            with open(os.path.join(logs, "runs-so-far.jsonl"), "a") as f:  # kept if the script is stopped
                f.write(json.dumps(r) + "\n")
    summary = summarise(runs, logs, plan["iterations_per_epoch"])
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    loads = [r["foreign_load_cores"] for r in runs]
    subset = f"the first {n_train // 10:,} images of each class" if args.train_subset else "the whole training set"
    header = [
        f"`scripts/bench/{BENCH}.py` on {when}: {machine['cpu_model']} ({machine['isa']}), {args.threads} threads each; "
        f"{os.path.relpath(args.config, ROOT)} for {args.epochs} epochs ({plan['warmup_epochs']} of warmup, "
        f"{plan['cosine_epochs']} of cosine) on {n_train:,} CIFAR-10 training images ({subset}), tested on {n_test:,}; "
        f"{version[0] if version else 'dltrain'}, PyTorch {torch_version} (`scripts/bench/pytorch_vit.py`: the same "
        f"network, initialisation, options, augmentation and data, F.scaled_dot_product_attention).",
        f"Seconds per epoch: the training loop, validation excluded; "
        f"{'sides in turn' if not kept else f'{len(kept)} of the runs kept from earlier invocations (--resume)'} on the "
        f"same {args.threads} cores; "
        f"other processes kept up to {max(loads) if loads else 0:.1f} cores busy (foreign load). {summary['verdict']}."] + \
        ([args.note] if args.note else [])
    run_line = {"bench": BENCH, "command": " ".join(shlex.quote(a) for a in sys.argv), "date": when,
                "config": os.path.relpath(args.config, ROOT), "epochs": args.epochs, "seeds": seeds,
                "train_subset": args.train_subset, "train_images": n_train, "test_images": n_test, "plan": plan,
                "data": data, "dltrain": version[0] if version else None, "dltrain_path": args.dltrain,
                "python": args.python, "torch": torch_version, "note": args.note, "header": header, **machine}
    rows = runs + [summary]
    with open(os.path.join(logs, "results.jsonl"), "w") as f:
        f.write(json.dumps({"run": run_line}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print("\n".join(header + [""] + markdown(runs, summary)))
    if args.write_docs:
        perf_page.save_result(BENCH, args.machine, run_line, rows)
    return 0 if summary["verdict"].startswith("PASS") else 1


if __name__ == "__main__":
    sys.exit(main())

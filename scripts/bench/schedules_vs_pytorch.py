#!/usr/bin/python3
"""dltrain's learning-rate schedules against PyTorch's schedulers for equal settings (issue 37).

For each case, a short `dltrain train` run on a generated 2-class dataset writes the rate of
every iteration to log.csv (base_learning_rate); the same settings drive PyTorch's schedulers
(LambdaLR, CosineAnnealingWarmRestarts, PolynomialLR, ExponentialLR, StepLR, SequentialLR),
stepped once per iteration (or per epoch for per-epoch schedules), and the script prints the
largest absolute and relative difference per case, and at how many iterations PyTorch's rate
printed as log.csv prints (%.6g) is log.csv's text. log.csv writes 6 significant digits, so a
relative difference up to 5e-6 is the printing (ExponentialLR and PolynomialLR multiply their
rate step by step, so where the exact rate sits on a rounding boundary, 1.953125e-05, PyTorch's
accumulated rounding can print one unit lower); the unit tests (tests/optim/test_schedules.cpp)
check the formulas to 1e-12.

  /usr/bin/python3 scripts/bench/schedules_vs_pytorch.py [--dltrain build/dltrain]
  /work/zoo-venv/bin/python scripts/bench/schedules_vs_pytorch.py      # a current PyTorch

Exits 1 when a difference exceeds 1e-5 relative.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile

import torch

LR = 0.01
EPOCHS = 4
BATCH = 4

NETWORK = """layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax}
  - {type: classification}
"""


def torch_rates(make, iterations, per_epoch=None):
    """The rate of each iteration: lr before the step, then scheduler.step() once per
    iteration, or once per epoch when per_epoch is given."""
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=LR)
    sched = make(opt)
    rates = []
    for it in range(iterations):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        if per_epoch is None or (it + 1) % per_epoch == 0:
            sched.step()
    return rates


def warmup_lambda(g0, gn, n):
    return lambda k: g0 + (gn - g0) * k / n if k < n else gn


# name, LearnRateSchedule (YAML flow), PyTorch scheduler factory (opt, iterations per epoch,
# iterations) -> (scheduler, per_epoch or None)
CASES = [
    ("cosine, Period 5, growth 2, FinalFactor 0.01 (per iteration) vs CosineAnnealingWarmRestarts",
     "{type: cosineLearnRate, FinalFactor: 0.01, Period: 5, PeriodGrowthFactor: 2, FrequencyUnit: iteration}",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
         o, T_0=5, T_mult=2, eta_min=0.01 * LR), None)),
    ("cosine (the name: one cycle over MaxEpochs, per epoch) vs CosineAnnealingWarmRestarts",
     "cosine",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=EPOCHS), ipe)),
    ("warmup 0.1->1 over 6, then cosine Period 10 (per iteration) vs SequentialLR(LambdaLR, "
     "CosineAnnealingWarmRestarts)",
     "[{type: warmupLearnRate, NumSteps: 6}, {type: cosineLearnRate, Period: 10, FrequencyUnit: iteration}]",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.SequentialLR(
         o, [torch.optim.lr_scheduler.LambdaLR(o, warmup_lambda(0.1, 1.0, 6)),
             torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=10)], milestones=[6]), None)),
    ("warmup then cosine as one LambdaLR",
     "[{type: warmupLearnRate, InitialFactor: 0.25, NumSteps: 5}, "
     "{type: cosineLearnRate, FinalFactor: 0.05, Period: 7, FrequencyUnit: iteration}]",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.LambdaLR(
         o, lambda k: 0.25 + 0.75 * k / 5 if k < 5 else
         0.05 + 0.95 * (1 + math.cos(math.pi * ((k - 5) % 7) / 7)) / 2), None)),
    ("polynomial Power 2 over the training (per iteration) vs PolynomialLR",
     "{type: polynomialLearnRate, Power: 2, FrequencyUnit: iteration}",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=n, power=2.0), None)),
    ("polynomial Power 0.5, NumSteps 20 (per iteration) vs PolynomialLR",
     "{type: polynomialLearnRate, Power: 0.5, NumSteps: 20, FrequencyUnit: iteration}",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=20, power=0.5), None)),
    ("exponential DropFactor 0.5, Period 4 (per iteration) vs ExponentialLR",
     "{type: exponentialLearnRate, DropFactor: 0.5, Period: 4, FrequencyUnit: iteration}",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.5 ** 0.25), None)),
    ("piecewise DropFactor 0.5, Period 7 (per iteration) vs StepLR",
     "{type: piecewiseLearnRate, DropFactor: 0.5, Period: 7, FrequencyUnit: iteration}",
     lambda ipe, n: (lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=7, gamma=0.5), None)),
]


def dltrain_rates(binary, folder, data, schedule):
    out = os.path.join(folder, "run")
    subprocess.run([binary, "train", os.path.join(folder, "net.yaml"), "--quiet", "--threads", "2",
                    "--output-dir", out, "--overwrite", "--set", f"data.train={data}", "--set",
                    f"training.LearnRateSchedule={schedule}"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "log.csv")) as f:
        rows = list(csv.DictReader(f))
    ipe = sum(1 for r in rows if r["epoch"] == "1")
    return [r["base_learning_rate"] for r in rows], ipe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dltrain", default=os.environ.get("DLTRAIN", "build/dltrain"))
    args = ap.parse_args()
    binary = os.path.abspath(args.dltrain)
    print(f"PyTorch {torch.__version__}; dltrain {binary}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        subprocess.run([binary, "make-dataset", "shapes", data, "--classes", "2", "--per-class", "40",
                        "--size", "16x16", "--seed", "2"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(tmp, "net.yaml"), "w") as f:
            f.write(NETWORK + f"training:\n  Solver: sgdm\n  InitialLearnRate: {LR}\n  MaxEpochs: {EPOCHS}\n"
                    f"  MiniBatchSize: {BATCH}\n  GradientThreshold: 1\n  Verbose: false\n  Plots: none\n")
        print("| case | iterations | max abs difference | max rel difference | same 6 digits |")
        print("|---|---|---|---|---|")
        for name, schedule, torch_case in CASES:
            texts, ipe = dltrain_rates(binary, tmp, os.path.join(data, "train"), schedule)
            ours = [float(t) for t in texts]
            make, per_epoch = torch_case(ipe, len(ours))
            theirs = torch_rates(make, len(ours), per_epoch)
            same = sum(1 for t, b in zip(texts, theirs) if t == "%.6g" % b)
            diffs = [abs(a - b) for a, b in zip(ours, theirs)]
            rels = [d / abs(b) if b else d for d, b in zip(diffs, theirs)]
            worst = max(worst, max(rels))
            print(f"| {name} | {len(ours)} | {max(diffs):.3g} | {max(rels):.3g} | {same} of {len(ours)} |")
            subprocess.run(["rm", "-rf", os.path.join(tmp, "run")], check=True)
    print(f"largest relative difference: {worst:.3g} (log.csv prints 6 significant digits)")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())

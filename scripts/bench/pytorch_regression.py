#!/usr/bin/python3
"""PyTorch twin of a dltrain regression run (scripts/bench/regression_vs_pytorch.py): trains the
network of a dltrain YAML config (configs/digits-regression.yaml: MATLAB's "Train Convolutional
Neural Network for Regression") on image tables the way `dltrain train` does and prints one JSON
line with the test RMSE and the time per epoch.

  /usr/bin/python3 scripts/bench/pytorch_regression.py configs/digits-regression.yaml \\
      --data DIR --seed 0 [--epochs N] [--predictions FILE.csv]

DIR holds train.csv and test.csv as `dltrain make-dataset rotated-digits` writes them: a header
row, then the image file (relative to the CSV's folder, or absolute) and one number per response
(`File,Angle`). --train / --test name other tables.

Same network (pytorch_cpu.build: the config's layers, glorot / he / narrow-normal weights as
dltrain draws them, zero biases; the `regression` output layer adds nothing: the model returns
the responses), same data (the PNGs decoded once into uint8, used as 0..255 floats as dltrain
reads them), same normalization (zerocenter subtracts the training set's mean image), same
options from the config's `training:` section: sgdm = torch.optim.SGD(lr=InitialLearnRate,
momentum=Momentum, weight_decay=L2Regularization times each learnable's L2 factor, as dltrain
applies it: weights 1, biases 0 (BiasL2Factor), batch-norm scale and offset 1), piecewise
schedule (lr * LearnRateDropFactor^floor(epoch / LearnRateDropPeriod)), MiniBatchSize with the
last partial mini-batch of each epoch dropped (as MATLAB), Shuffle (torch.randperm from a generator
of its own, pytorch_cpu.order_seed, as dltrain draws the order apart from the weights), MaxEpochs. Batch norm: the
running statistics decay 0.1 with the unbiased batch variance (torch's momentum 0.1, as
dltrain's MeanDecay / VarianceDecay); dropout scales by 1/(1-p) in training (both).

Loss: MATLAB's regressionLayer, half the squared error summed over the R responses, averaged
over the images: 0.5 * ((y - t) ** 2).sum(1).mean(). torch.nn.MSELoss() (mean over the N x R
values) is 2 / R times this; with R = 1 it is twice the loss and twice every gradient, i.e.
the same training as doubling the learn rate, which is why the twin does not use it.

Reported: validation_rmse = sqrt(mean((y - t)^2)) over every value of the test table, in eval
mode after the last epoch (MATLAB's RMSE; dltrain's summary.json validation_rmse), and the RMSE
after every epoch (not timed); seconds per epoch = the training loop alone (no validation,
no data loading), per epoch and their mean; wall_seconds = everything. Runs in pytorch_cpu.py's
"best" CPU configuration: channels_last, torch.set_num_threads(2), tcmalloc preloaded when
installed. Progress goes to stderr, the JSON line to stdout.
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_cpu  # noqa: E402  (network builder and environment set-up)
import pytorch_train  # noqa: E402  (the SGD parameter groups and the option check)

# training: options this script reads beyond pytorch_train.py's, or that change nothing here.
OWN = {"Loss"}
IGNORED = {"ObjectiveMetricName", "Metrics", "ValidationData"}
LOSS_NAMES = {"mse", "mean-squared-error"}


def log(msg):
    sys.stderr.write(f"pytorch_regression: {msg}\n")
    sys.stderr.flush()


def read_table(path):
    """A table as dltrain reads it: header row, then the image file and R numbers per row.
    Returns (paths, responses as a list of R-float lists, response names)."""
    if not os.path.isfile(path):
        raise SystemExit(f"pytorch_regression: no table {path} "
                         "(make one with `dltrain make-dataset rotated-digits DIR`)")
    base = os.path.dirname(os.path.abspath(path))
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise SystemExit(f"pytorch_regression: {path}: no rows under the header")
    names = [h.strip() for h in rows[0][1:]]
    if not names:
        raise SystemExit(f"pytorch_regression: {path}:1: the header names no response column")
    paths, targets = [], []
    for line, row in enumerate(rows[1:], 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(names) + 1:
            raise SystemExit(f"pytorch_regression: {path}:{line}: {len(row)} columns, the header has "
                             f"{len(names) + 1}")
        try:
            values = [float(c) for c in row[1:]]
        except ValueError:
            raise SystemExit(f"pytorch_regression: {path}:{line}: a response is not a number: {row[1:]}")
        if not all(math.isfinite(v) for v in values):
            raise SystemExit(f"pytorch_regression: {path}:{line}: a response is not finite: {row[1:]}")
        p = row[0].strip()
        paths.append(p if os.path.isabs(p) else os.path.join(base, p))
        targets.append(values)
    return paths, targets, names


def image_decoder():
    """PIL when installed (as the other twins), else OpenCV (scripts/setup.sh installs it for the
    tests): PNG is lossless, so both give the same pixels."""
    try:
        from PIL import Image
        import PIL
        return f"PIL {PIL.__version__}", None
    except ImportError:
        import cv2
        return f"OpenCV {cv2.__version__}", cv2


def load_images(paths, hwc, np, cv2):
    """Decodes every image into one uint8 (N, H, W, C) array."""
    if cv2 is None:
        return pytorch_train.load_images(paths, hwc, np)
    h, w, c = hwc
    flag = {1: cv2.IMREAD_GRAYSCALE, 3: cv2.IMREAD_COLOR}.get(c)
    if flag is None:
        raise SystemExit(f"pytorch_regression: InputSize with {c} channels is not supported here")
    out = np.empty((len(paths), h, w, c), dtype=np.uint8)
    for i, p in enumerate(paths):
        a = cv2.imread(p, flag)
        if a is None:
            raise SystemExit(f"pytorch_regression: cannot read the image {p}")
        if c == 3:
            a = a[:, :, ::-1]  # OpenCV's BGR to RGB
        if a.shape[0] != h or a.shape[1] != w:
            raise SystemExit(f"pytorch_regression: {p} is {a.shape[1]}x{a.shape[0]}, the network "
                             f"takes {w}x{h}")
        out[i] = a.reshape(h, w, c)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="dltrain YAML config (a regression network)")
    ap.add_argument("--data", help="folder with train.csv and test.csv")
    ap.add_argument("--train", help="training table (default DATA/train.csv)")
    ap.add_argument("--test", help="test table (default DATA/test.csv)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=0, help="0: the config's MaxEpochs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-batch", type=int, default=1000)
    ap.add_argument("--predictions", help="write the test predictions here (CSV: File, then the responses)")
    args = ap.parse_args()
    train_csv = args.train or (args.data and os.path.join(args.data, "train.csv"))
    test_csv = args.test or (args.data and os.path.join(args.data, "test.csv"))
    if not train_csv or not test_csv:
        ap.error("give --data DIR, or --train and --test")

    pytorch_cpu.ensure_environment("best", args.threads)  # re-executes with tcmalloc etc.

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    t_start = time.perf_counter()

    net, (c, h, w), outputs, _, topts = pytorch_cpu.build(args.config, torch)
    loss_name = str(topts.get("Loss", "mse")).lower()
    if loss_name not in LOSS_NAMES:
        raise SystemExit(f"pytorch_regression: training.Loss '{loss_name}' not supported (mse only)")
    sched, shuffle = pytorch_train.check_options({k: v for k, v in topts.items() if k not in OWN | IGNORED})
    epochs = args.epochs or int(topts.get("MaxEpochs", 30))
    lr0 = float(topts.get("InitialLearnRate", 0.01))
    drop_factor = float(topts.get("LearnRateDropFactor", 0.1))
    drop_period = int(topts.get("LearnRateDropPeriod", 10))
    batch = int(topts.get("MiniBatchSize", 128))
    momentum = float(topts.get("Momentum", 0.9))
    l2 = float(topts.get("L2Regularization", 1e-4))

    # Data, decoded once.
    t0 = time.perf_counter()
    decoder, cv2 = image_decoder()
    train_paths, train_t, names = read_table(train_csv)
    test_paths, test_t, test_names = read_table(test_csv)
    if test_names != names:
        raise SystemExit(f"pytorch_regression: {test_csv} has the responses {test_names}, "
                         f"{train_csv} {names}")
    if len(names) != outputs:
        raise SystemExit(f"pytorch_regression: the network has {outputs} outputs, the table "
                         f"{len(names)} responses ({', '.join(names)})")
    train_x = torch.from_numpy(load_images(train_paths, (h, w, c), np, cv2))  # N H W C uint8
    test_x = torch.from_numpy(load_images(test_paths, (h, w, c), np, cv2))
    train_y = torch.tensor(train_t, dtype=torch.float32)  # N R
    test_y = torch.tensor(test_t, dtype=torch.float32)
    load_seconds = time.perf_counter() - t0
    log(f"loaded {len(train_paths)} training and {len(test_paths)} test images ({decoder}) in "
        f"{load_seconds:.1f} s; responses {', '.join(names)}")

    # Normalization statistics from the training set (double accumulation, like dltrain).
    inp = net.mods[net.order[0][0]]
    with torch.no_grad():
        if inp.norm == "zerocenter":
            inp.mean.copy_(train_x.to(torch.float64).mean(dim=0).permute(2, 0, 1).unsqueeze(0).float())
        elif inp.norm == "zscore":
            ch = train_x.to(torch.float64).reshape(-1, c)
            inp.mean.copy_(ch.mean(0).reshape(1, c, 1, 1).expand_as(inp.mean).float())
            inp.std.copy_(ch.std(0, unbiased=False).reshape(1, c, 1, 1).float())
        elif inp.norm != "none":
            raise SystemExit(f"pytorch_regression: Normalization '{inp.norm}' not supported here")

    net = net.to(memory_format=torch.channels_last)
    groups = pytorch_train.param_groups(args.config, net, lr0, l2)
    opt = torch.optim.SGD(groups, lr=lr0, momentum=momentum, weight_decay=l2)

    def as_input(x_nhwc_uint8):
        return x_nhwc_uint8.float().permute(0, 3, 1, 2)  # a channels_last NCHW view

    def half_mse(y, t):  # MATLAB's regressionLayer / trainnet "mse"
        return 0.5 * ((y - t) ** 2).sum(1).mean()

    def predict(x):
        net.eval()
        out = []
        with torch.no_grad():
            for s in range(0, x.shape[0], args.eval_batch):
                out.append(net(as_input(x[s:s + args.eval_batch])).reshape(-1, outputs))
        return torch.cat(out)

    def rmse(y, t):
        return math.sqrt(((y.double() - t.double()) ** 2).mean().item())

    n = train_x.shape[0]
    bsz = min(batch, n)
    per_epoch = n // bsz  # MATLAB drops the last partial mini-batch
    gen = torch.Generator().manual_seed(pytorch_cpu.order_seed(args.seed))  # not the weights' stream
    epoch_seconds, epoch_rmse = [], []
    last_loss = float("nan")
    log(f"{epochs} epochs x {per_epoch} iterations of {bsz}; lr {lr0} "
        f"{'x' + str(drop_factor) + ' every ' + str(drop_period) + ' epochs' if sched == 'piecewise' else 'constant'}, "
        f"momentum {momentum}, weight decay {l2}, shuffle {shuffle}, seed {args.seed}")
    for epoch, lr, order in pytorch_cpu.training_epochs(torch, opt, gen, n, epochs, shuffle, lr0, sched, drop_factor,
                                                        drop_period):
        net.train()
        te = time.perf_counter()
        loss_sum = 0.0
        for b in range(per_epoch):
            idx = order[b * bsz:(b + 1) * bsz]
            opt.zero_grad(set_to_none=True)
            loss = half_mse(net(as_input(train_x[idx])).reshape(-1, outputs), train_y[idx])
            loss.backward()
            opt.step()
            loss_sum += loss.item()
        dt = time.perf_counter() - te
        epoch_seconds.append(dt)
        last_loss = loss_sum / max(per_epoch, 1)
        if not math.isfinite(last_loss):
            raise SystemExit(f"pytorch_regression: training diverged in epoch {epoch + 1} (loss {last_loss})")
        epoch_rmse.append(rmse(predict(test_x), test_y))
        log(f"epoch {epoch + 1}/{epochs}: lr {lr:g}, mean loss {last_loss:.4f} (train RMSE "
            f"{math.sqrt(2 * last_loss / outputs):.3f}), test RMSE {epoch_rmse[-1]:.4f}, {dt:.2f} s")

    pred = predict(test_x)
    final_rmse = rmse(pred, test_y)
    if args.predictions:
        tmp = args.predictions + ".tmp"
        with open(tmp, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["File"] + names)
            for p, row in zip(test_paths, pred.tolist()):
                wr.writerow([p] + [repr(v) for v in row])
        os.replace(tmp, args.predictions)
    wall = time.perf_counter() - t_start
    log(f"test RMSE {final_rmse:.4f} ({test_x.shape[0]} images), {statistics.mean(epoch_seconds):.2f} s per "
        f"epoch, wall {wall:.1f} s")
    print(json.dumps({
        "side": "pytorch", "seed": args.seed, "epochs": epochs, "validation_rmse": round(final_rmse, 6),
        "validation_rmse_per_epoch": [round(v, 6) for v in epoch_rmse],
        "seconds_per_epoch": round(statistics.mean(epoch_seconds), 4),
        "epoch_seconds": [round(v, 4) for v in epoch_seconds],
        "train_images_per_second": round(per_epoch * bsz * epochs / sum(epoch_seconds), 2),
        "wall_seconds": round(wall, 3), "load_seconds": round(load_seconds, 3),
        "final_epoch_mean_loss": round(last_loss, 6), "responses": names,
        "total_learnables": sum(p.numel() for p in net.parameters()), "train_images": int(n),
        "test_images": int(test_x.shape[0]), "mini_batch_size": bsz, "iterations_per_epoch": per_epoch,
        "threads": torch.get_num_threads(), "torch": torch.__version__, "decoder": decoder,
        "tcmalloc": "tcmalloc" in os.environ.get("LD_PRELOAD", ""),
    }), flush=True)


if __name__ == "__main__":
    main()

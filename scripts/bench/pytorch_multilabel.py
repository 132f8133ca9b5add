#!/usr/bin/python3
"""PyTorch twin of a dltrain multi-label run (scripts/bench/multilabel_vs_pytorch.py): trains the
network of a dltrain YAML config (configs/shapes-multilabel.yaml: MATLAB's "Multilabel Image
Classification Using Deep Learning" written trainnet's way) on File,Labels tables the way
`dltrain train` does and prints one JSON line with the test F1 and the time per epoch.

  /usr/bin/python3 scripts/bench/pytorch_multilabel.py configs/shapes-multilabel.yaml \\
      --data DIR --seed 0 [--epochs N] [--predictions FILE.csv] [--init-onnx FILE.onnx]
      [--dltrain-order] [--iteration-losses FILE]

DIR holds train.csv and test.csv as `dltrain make-dataset shapes-multi` writes them: a header
row `File,Labels`, then the image file (relative to the CSV's folder, or absolute) and its
labels separated by `;` (empty: none). --train / --test name other tables. The classes are the
config's data.ClassNames when given, else the sorted union of the training table's labels
(docs/config.md, "Tables").

Same network (pytorch_cpu.build: the config's layers; he = normal(0, sqrt(2 / fan_in)) with
fan_in = FilterSize^2 x input channels, the fullyConnected default glorot = uniform(+-sqrt(6 /
(fan_in + fan_out))), zero biases, batch-norm scale 1 and offset 0, as dltrain draws them; the
sigmoid is left out of the model, which returns the K scores), same data (the PNGs decoded once
into uint8, used as 0..255 floats as dltrain reads them), same normalization (zscore: the
training set's per-channel mean and population standard deviation over every pixel of every
training image, accumulated in double, as dltrain's compute_stats), same options from the
config's `training:` section: adam = torch.optim.Adam(lr=InitialLearnRate,
betas=(GradientDecayFactor 0.9, SquaredGradientDecayFactor 0.999), eps=Epsilon 1e-8,
weight_decay=L2Regularization 1e-4 times each learnable's L2 factor: weights 1, biases 0
(BiasL2Factor), batch-norm scale and offset 1). torch's Adam adds weight_decay x w to the
gradient before the moments, as dltrain's adam_update does (L2 regularization, not AdamW);
its bias corrections are dltrain's. sgdm is also taken (torch.optim.SGD with Momentum); the
piecewise schedule, MiniBatchSize with the last partial mini-batch of each epoch dropped (as
MATLAB), Shuffle (once / every-epoch / never; torch.randperm from a generator of its own,
pytorch_cpu.order_seed, as dltrain draws the order apart from the weights), MaxEpochs. Batch
norm: epsilon 1e-5 (the layer's Epsilon), the running statistics decay 0.1 with the unbiased
batch variance (torch's momentum 0.1, as dltrain's MeanDecay / VarianceDecay), used as they are
in eval mode (dltrain does not recompute population statistics at the end).

Loss: dltrain's binary-crossentropy (docs/config.md, "Losses"): -sum over the K labels of
[t log p + (1 - t) log(1 - p)], averaged over the images, here
binary_cross_entropy_with_logits(scores, t, reduction="sum") / N: the gradient with respect to
the scores is (sigmoid(s) - t) / N, dltrain's fused sigmoid + loss gradient. torch.nn.BCELoss()
(mean over the N x K values) is this / K: with K = 4 a quarter of every gradient, which with
Adam's epsilon and the L2 term is not the same training, so the twin does not use it.

Reported, in eval mode after the last epoch, with a label predicted when its sigmoid
probability is >= --threshold (0.5), the definitions of dltrain's classify
(lib/train/multilabel_metrics.cpp): f1 = 2 TP / (2 TP + FP + FN) over every (image, label)
(micro; MATLAB's example F1Score), precision = TP / (TP + FP), recall = TP / (TP + FN), jaccard
= the mean over images of |predicted and true| / |predicted or true| (1 for an image with
neither; MATLAB's example jaccardIndex), exact_match = the fraction of images whose predicted
set is the true one; also the test F1 after every epoch (not timed). Seconds per epoch = the
training loop alone (no evaluation, no data loading), per epoch and their mean; wall_seconds =
everything. --predictions writes the test predictions as dltrain classify's CSV does (path,
labels, score_<class>...). Runs in pytorch_cpu.py's "best" CPU configuration: channels_last,
torch.set_num_threads(2), tcmalloc preloaded when installed. Progress goes to stderr, the JSON
line to stdout.

--init-onnx starts from the learnables and input mean / std of a `dltrain export` of the same
network instead of the seed's draw (the batch-norm statistics stay at 0 and 1, dltrain's
initial TrainedMean and TrainedVariance), --dltrain-order takes each epoch's mini-batch order
from dltrain's own shuffle for --seed (pytorch_cpu.dltrain_permutation) instead of torch's
generator, and --iteration-losses writes every iteration's mini-batch loss:
multilabel_vs_pytorch.py's same-start runs train the twin with all three from the start dltrain
draws for a seed, in dltrain's order for every epoch.
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
import pytorch_train  # noqa: E402  (param_groups: each learnable's L2 and learn-rate factors)
import pytorch_regression  # noqa: E402  (image_decoder, load_images)

# training: options this script implements, and ones that do not change what is learned.
HANDLED = {"Solver", "InitialLearnRate", "LearnRateSchedule", "LearnRateDropFactor", "LearnRateDropPeriod",
           "L2Regularization", "MaxEpochs", "MiniBatchSize", "Momentum", "GradientDecayFactor",
           "SquaredGradientDecayFactor", "Epsilon", "Shuffle", "Seed", "Loss"}
IGNORED = pytorch_train.IGNORED | {"Metrics", "ObjectiveMetricName", "ValidationData"}
LOSS_NAMES = {"binary-crossentropy"}


def log(msg):
    sys.stderr.write(f"pytorch_multilabel: {msg}\n")
    sys.stderr.flush()


def split_labels(field):
    """A Labels field as dltrain reads it: ';'-separated, spaces around each trimmed, empty: none."""
    return [s.strip() for s in field.split(";") if s.strip()] if field.strip() else []


def read_table(path):
    """A File,Labels table. Returns (paths, label lists)."""
    if not os.path.isfile(path):
        raise SystemExit(f"pytorch_multilabel: no table {path} "
                         "(make one with `dltrain make-dataset shapes-multi DIR`)")
    base = os.path.dirname(os.path.abspath(path))
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise SystemExit(f"pytorch_multilabel: {path}: no rows under the header")
    if len(rows[0]) != 2 or rows[0][1].strip() != "Labels":
        raise SystemExit(f"pytorch_multilabel: {path}:1: the header is {rows[0]}, a multi-label table has "
                         "File,Labels")
    paths, labels = [], []
    for line, row in enumerate(rows[1:], 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 2:
            raise SystemExit(f"pytorch_multilabel: {path}:{line}: {len(row)} columns, the header has 2")
        p = row[0].strip()
        paths.append(p if os.path.isabs(p) else os.path.join(base, p))
        labels.append(split_labels(row[1]))
    return paths, labels


def targets(labels, classes, where):
    index = {c: i for i, c in enumerate(classes)}
    out = []
    for i, ls in enumerate(labels):
        row = [0.0] * len(classes)
        for label in ls:
            if label not in index:
                raise SystemExit(f"pytorch_multilabel: {where}: image {i + 1}: label '{label}' is not one of the "
                                 f"classes ({', '.join(classes)})")
            row[index[label]] = 1.0
        out.append(row)
    return out


def metrics(pred, truth):
    """pred, truth: lists of per-image 0/1 lists. dltrain classify's definitions (module doc)."""
    tp = fp = fn = exact = 0
    jac = 0.0
    for y, t in zip(pred, truth, strict=True):
        both = sum(1 for a, b in zip(y, t) if a and b)
        either = sum(1 for a, b in zip(y, t) if a or b)
        tp += both
        fp += sum(1 for a, b in zip(y, t) if a and not b)
        fn += sum(1 for a, b in zip(y, t) if b and not a)
        jac += both / either if either else 1.0
        exact += all(bool(a) == bool(b) for a, b in zip(y, t))
    n = len(truth)

    def ratio(a, b):
        return a / b if b else float("nan")
    return {"f1": ratio(2 * tp, 2 * tp + fp + fn), "precision": ratio(tp, tp + fp), "recall": ratio(tp, tp + fn),
            "jaccard": jac / n if n else float("nan"), "exact_match": ratio(exact, n), "tp": tp, "fp": fp, "fn": fn}


def load_onnx_weights(path, net, torch):
    """The learnables and input mean / std of a `dltrain export` of the same network (its
    initializers are named after the layers: conv1_W, bn1_scale, fc_B, ...). The batch-norm
    statistics are not taken: they stay at 0 and 1, where dltrain's start has them (the export
    of an initial network comes from an epoch with every learn-rate factor 0, which moved them)."""
    import onnx
    from onnx import numpy_helper
    w = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in onnx.load(path).graph.initializer}
    used = set()

    def take(name, dst):
        if name not in w:
            raise SystemExit(f"pytorch_multilabel: {path} has no initializer {name}")
        if w[name].numel() != dst.numel():
            raise SystemExit(f"pytorch_multilabel: {path}: {name} has {w[name].numel()} values, the twin {dst.numel()}")
        dst.copy_(w[name].reshape(dst.shape))  # ONNX's OIHW and (out, in) are torch's layouts
        used.add(name)
    with torch.no_grad():
        for name, kind, _ in net.order:
            mod = net.mods[name] if name in net.mods else None
            if kind == "imageInput":
                if mod.norm == "zscore":
                    take(name + "_std", mod.std)
                    mod.mean.copy_(w[name + "_mean"].reshape(1, -1, 1, 1).expand_as(mod.mean))
                    used.add(name + "_mean")
            elif kind in ("convolution2d", "fullyConnected"):
                layer = mod if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)) else mod[-1]
                take(name + "_W", layer.weight)
                take(name + "_B", layer.bias)
            elif kind == "batchNormalization":
                take(name + "_scale", mod.weight)
                take(name + "_offset", mod.bias)
    log(f"started from {path} ({len(used)} of its {len(w)} initializers)")


def check_options(topts):
    for key in topts:
        if key not in HANDLED and key not in IGNORED:
            log(f"warning: training.{key} is not implemented here; the comparison ignores it")
    solver = str(topts.get("Solver", "sgdm")).lower()
    if solver not in ("adam", "sgdm"):
        raise SystemExit(f"pytorch_multilabel: Solver '{solver}' not supported (adam or sgdm)")
    sched = str(topts.get("LearnRateSchedule", "none")).lower()
    if sched not in ("none", "piecewise"):
        raise SystemExit(f"pytorch_multilabel: LearnRateSchedule '{sched}' not supported")
    shuffle = str(topts.get("Shuffle", "once")).lower()
    if shuffle not in ("once", "every-epoch", "never"):
        raise SystemExit(f"pytorch_multilabel: Shuffle '{shuffle}' must be once, every-epoch or never")
    loss = str(topts.get("Loss", "binary-crossentropy")).lower()
    if loss not in LOSS_NAMES:
        raise SystemExit(f"pytorch_multilabel: training.Loss '{loss}' not supported (binary-crossentropy only)")
    return solver, sched, shuffle


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="dltrain YAML config (a multi-label network: ... fullyConnected, sigmoid)")
    ap.add_argument("--data", help="folder with train.csv and test.csv")
    ap.add_argument("--train", help="training table (default DATA/train.csv)")
    ap.add_argument("--test", help="test table (default DATA/test.csv)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=0, help="0: the config's MaxEpochs")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-batch", type=int, default=1000)
    ap.add_argument("--predictions", help="write the test predictions here (CSV: path, labels, score_<class>...)")
    ap.add_argument("--init-onnx", help="start from the weights and input statistics of this `dltrain export` of "
                                        "the same network (a check that both sides train alike from one start)")
    ap.add_argument("--dltrain-order", action="store_true",
                    help="each epoch's mini-batch order from dltrain's shuffle for --seed instead of torch's")
    ap.add_argument("--iteration-losses", help="write each iteration's mini-batch loss here (one per line)")
    args = ap.parse_args()
    train_csv = args.train or (args.data and os.path.join(args.data, "train.csv"))
    test_csv = args.test or (args.data and os.path.join(args.data, "test.csv"))
    if not train_csv or not test_csv:
        ap.error("give --data DIR, or --train and --test")

    pytorch_cpu.ensure_environment("best", args.threads)  # re-executes with tcmalloc etc.

    import numpy as np
    import torch
    import torch.nn.functional as F
    import yaml

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    t_start = time.perf_counter()

    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    last = cfg["layers"][-1]["type"]
    if last not in ("sigmoid", "multilabelClassification"):
        raise SystemExit(f"pytorch_multilabel: {args.config}: the network ends in '{last}', a multi-label network "
                         "ends in a sigmoid (and optionally multilabelClassification)")
    net, (c, h, w), outputs, _, topts = pytorch_cpu.build(args.config, torch)
    solver, sched, shuffle = check_options(topts)
    epochs = args.epochs or int(topts.get("MaxEpochs", 30))
    lr0 = float(topts.get("InitialLearnRate", 0.001 if solver == "adam" else 0.01))
    drop_factor = float(topts.get("LearnRateDropFactor", 0.1))
    drop_period = int(topts.get("LearnRateDropPeriod", 10))
    batch = int(topts.get("MiniBatchSize", 128))
    l2 = float(topts.get("L2Regularization", 1e-4))

    # Data, decoded once.
    t0 = time.perf_counter()
    decoder, cv2 = pytorch_regression.image_decoder()
    train_paths, train_labels = read_table(train_csv)
    test_paths, test_labels = read_table(test_csv)
    names = (cfg.get("data") or {}).get("ClassNames")
    classes = [str(n) for n in names] if names else sorted({lb for ls in train_labels for lb in ls})
    if len(classes) != outputs:
        raise SystemExit(f"pytorch_multilabel: the network has {outputs} outputs, the data {len(classes)} classes "
                         f"({', '.join(classes)})")
    train_x = torch.from_numpy(pytorch_regression.load_images(train_paths, (h, w, c), np, cv2))  # N H W C uint8
    test_x = torch.from_numpy(pytorch_regression.load_images(test_paths, (h, w, c), np, cv2))
    train_y = torch.tensor(targets(train_labels, classes, train_csv), dtype=torch.float32)  # N K
    test_truth = targets(test_labels, classes, test_csv)
    load_seconds = time.perf_counter() - t0
    log(f"loaded {len(train_paths)} training and {len(test_paths)} test images ({decoder}) in "
        f"{load_seconds:.1f} s; classes {', '.join(classes)}")

    # Normalization statistics from the training set (double accumulation, like dltrain).
    inp = net.mods[net.order[0][0]]
    with torch.no_grad():
        if inp.norm == "zerocenter":
            inp.mean.copy_(train_x.to(torch.float64).mean(dim=0).permute(2, 0, 1).unsqueeze(0).float())
        elif inp.norm == "zscore":
            ch = train_x.to(torch.float64).reshape(-1, c)
            sd = ch.std(0, unbiased=False)
            sd = torch.where(sd > 0, sd, torch.ones_like(sd))  # dltrain: a constant channel is only centred
            inp.mean.copy_(ch.mean(0).reshape(1, c, 1, 1).expand_as(inp.mean).float())
            inp.std.copy_(sd.reshape(1, c, 1, 1).float())
        elif inp.norm != "none":
            raise SystemExit(f"pytorch_multilabel: Normalization '{inp.norm}' not supported here")

    if args.init_onnx:
        load_onnx_weights(args.init_onnx, net, torch)
    net = net.to(memory_format=torch.channels_last)
    groups = pytorch_train.param_groups(args.config, net, lr0, l2)
    if solver == "adam":
        betas = (float(topts.get("GradientDecayFactor", 0.9)), float(topts.get("SquaredGradientDecayFactor", 0.999)))
        eps = float(topts.get("Epsilon", 1e-8))
        opt = torch.optim.Adam(groups, lr=lr0, betas=betas, eps=eps, weight_decay=l2)
        solver_note = f"adam betas {betas}, epsilon {eps:g}"
    else:
        momentum = float(topts.get("Momentum", 0.9))
        opt = torch.optim.SGD(groups, lr=lr0, momentum=momentum, weight_decay=l2)
        solver_note = f"sgdm momentum {momentum}"

    def as_input(x_nhwc_uint8):
        return x_nhwc_uint8.float().permute(0, 3, 1, 2)  # a channels_last NCHW view

    def bce(scores, t):  # dltrain's binary-crossentropy: summed over the labels, mean over the images
        return F.binary_cross_entropy_with_logits(scores, t, reduction="sum") / scores.shape[0]

    def probabilities(x):
        net.eval()
        out = []
        with torch.no_grad():
            for s in range(0, x.shape[0], args.eval_batch):
                out.append(torch.sigmoid(net(as_input(x[s:s + args.eval_batch])).reshape(-1, outputs)))
        return torch.cat(out)

    def scored(probs):
        pred = (probs >= args.threshold).int().tolist()
        return metrics(pred, test_truth)

    n = train_x.shape[0]
    bsz = min(batch, n)
    per_epoch = n // bsz  # MATLAB drops the last partial mini-batch
    gen = torch.Generator().manual_seed(pytorch_cpu.order_seed(args.seed))  # not the weights' stream
    epoch_seconds, epoch_f1, iteration_losses = [], [], []
    last_loss = float("nan")
    log(f"{epochs} epochs x {per_epoch} iterations of {bsz}; lr {lr0} "
        f"{'x' + str(drop_factor) + ' every ' + str(drop_period) + ' epochs' if sched == 'piecewise' else 'constant'}, "
        f"{solver_note}, weight decay {l2}, shuffle {shuffle}{' (dltrain order)' if args.dltrain_order else ''}, "
        f"seed {args.seed}")
    for epoch, lr, order in pytorch_cpu.training_epochs(torch, opt, gen, n, epochs, shuffle, lr0, sched, drop_factor,
                                                        drop_period, args.seed if args.dltrain_order else None):
        net.train()
        te = time.perf_counter()
        loss_sum = 0.0
        for b in range(per_epoch):
            idx = order[b * bsz:(b + 1) * bsz]
            opt.zero_grad(set_to_none=True)
            loss = bce(net(as_input(train_x[idx])).reshape(-1, outputs), train_y[idx])
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            iteration_losses.append(loss.item())
        dt = time.perf_counter() - te
        epoch_seconds.append(dt)
        last_loss = loss_sum / max(per_epoch, 1)
        if not math.isfinite(last_loss):
            raise SystemExit(f"pytorch_multilabel: training diverged in epoch {epoch + 1} (loss {last_loss})")
        epoch_f1.append(scored(probabilities(test_x))["f1"])
        log(f"epoch {epoch + 1}/{epochs}: lr {lr:g}, mean loss {last_loss:.4f}, test F1 {epoch_f1[-1]:.4f}, "
            f"{dt:.2f} s")

    if args.iteration_losses:
        with open(args.iteration_losses, "w") as f:
            f.write("".join(f"{v:.6g}\n" for v in iteration_losses))
    probs = probabilities(test_x)
    m = scored(probs)
    if args.predictions:
        tmp = args.predictions + ".tmp"
        with open(tmp, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["path", "labels"] + [f"score_{k}" for k in classes])
            for p, row in zip(test_paths, probs.tolist()):
                wr.writerow([p, ";".join(k for k, v in zip(classes, row) if v >= args.threshold)] +
                            [f"{v:.6f}" for v in row])
        os.replace(tmp, args.predictions)
    wall = time.perf_counter() - t_start
    log(f"test F1 {m['f1']:.4f}, precision {m['precision']:.4f}, recall {m['recall']:.4f}, Jaccard "
        f"{m['jaccard']:.4f} ({len(test_paths)} images), {statistics.mean(epoch_seconds):.2f} s per epoch, "
        f"wall {wall:.1f} s")
    print(json.dumps({
        "side": "pytorch", "seed": args.seed, "epochs": epochs, "threshold": args.threshold,
        "f1": round(m["f1"], 6), "precision": round(m["precision"], 6), "recall": round(m["recall"], 6),
        "jaccard": round(m["jaccard"], 6), "exact_match": round(m["exact_match"], 6),
        "f1_per_epoch": [round(v, 6) for v in epoch_f1], "classes": classes,
        "seconds_per_epoch": round(statistics.mean(epoch_seconds), 4),
        "epoch_seconds": [round(v, 4) for v in epoch_seconds],
        "train_images_per_second": round(per_epoch * bsz / statistics.mean(epoch_seconds), 2),
        "wall_seconds": round(wall, 3), "load_seconds": round(load_seconds, 3), "iterations_per_epoch": per_epoch,
        "mini_batch_size": bsz, "train_images": int(n), "test_images": int(test_x.shape[0]),
        "final_epoch_mean_loss": round(last_loss, 6), "torch": torch.__version__, "decoder": decoder,
        "tcmalloc": os.environ.get("LD_PRELOAD", ""), "threads": torch.get_num_threads(),
        "init_onnx": args.init_onnx, "dltrain_order": args.dltrain_order,
    }), flush=True)


if __name__ == "__main__":
    main()

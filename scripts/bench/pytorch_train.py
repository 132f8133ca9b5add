#!/usr/bin/python3
"""PyTorch reference trainer for dltrain's accuracy comparison (scripts/bench/cifar10_accuracy.sh):
trains the network of a dltrain YAML config on real image folders the way `dltrain train` does
and prints one JSON line with the test accuracy and the timings.

  /usr/bin/python3 scripts/bench/pytorch_train.py configs/cifar10.yaml --data data/cifar10 \
      --seed 1 [--epochs N] [--drop-period P]

Same network (pytorch_cpu.build: the config's layers, narrow-normal/he/glorot weights, zero
biases), same data (DATA/train/<class>/ and DATA/test/<class>/, decoded once with PIL into uint8,
0..255 floats), same normalization (zerocenter subtracts the training set's mean image, zscore
uses per-channel mean/std, as dltrain), same options from the config's `training:` section:
sgdm = torch.optim.SGD(lr=InitialLearnRate, momentum=Momentum, weight_decay=L2Regularization
times each learnable's L2 factor: MATLAB's and dltrain's BiasL2Factor default is 0),
MiniBatchSize with the last partial mini-batch of each epoch dropped (as MATLAB), piecewise
schedule (lr * LearnRateDropFactor^floor(epoch / LearnRateDropPeriod)), Shuffle once (one
permutation reused every epoch) / every-epoch / never, MaxEpochs. Runs in pytorch_cpu.py's
"best" CPU configuration: channels_last, torch.set_num_threads(2), tcmalloc preloaded.

wall_seconds = data loading + mean image + network set-up + training + test evaluation (like
dltrain's summary.json, which also counts its own decoding); train_images_per_second = images
trained / seconds in the training loop only. Progress goes to stderr, the JSON line to stdout.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_cpu  # noqa: E402  (network builder and environment set-up)

IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".pgm", ".ppm", ".pnm"}
# training: options this script implements, and ones that do not change what is learned.
HANDLED = {"Solver", "InitialLearnRate", "LearnRateSchedule", "LearnRateDropFactor",
           "LearnRateDropPeriod", "L2Regularization", "MaxEpochs", "MiniBatchSize", "Momentum",
           "Shuffle", "Seed"}
IGNORED = {"ValidationFrequency", "Verbose", "VerboseFrequency", "VerboseLayout", "ExecutionEnvironment",
           "Plots", "Threads", "CheckpointPath", "CheckpointFrequency", "CheckpointFrequencyUnit",
           "DispatchInBackground", "OutputNetwork", "ValidationPatience"}


def log(msg):
    sys.stderr.write(f"pytorch_train: {msg}\n")
    sys.stderr.flush()


def list_folder(root, classes=None):
    """imageDatastore(root, 'IncludeSubfolders', true, 'LabelSource', 'foldernames'): sorted
    class folders, sorted files. Returns (paths, labels, classes)."""
    if not os.path.isdir(root):
        raise SystemExit(f"pytorch_train: data folder {root} does not exist "
                         "(run datasets/get-cifar10.sh first)")
    found = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if classes is None:
        classes = found
    index = {c: i for i, c in enumerate(classes)}
    paths, labels = [], []
    for cls in found:
        if cls not in index:
            raise SystemExit(f"pytorch_train: class folder {root}/{cls} is not one of the "
                             f"training classes {classes}")
        files = []
        for dirpath, _, names in os.walk(os.path.join(root, cls), followlinks=True):
            files += [os.path.join(dirpath, n) for n in names
                      if os.path.splitext(n)[1].lower() in IMAGE_EXTENSIONS]
        for p in sorted(files):
            paths.append(p)
            labels.append(index[cls])
    if not paths:
        raise SystemExit(f"pytorch_train: no images under {root}")
    return paths, labels, classes


def load_images(paths, hwc, np):
    """Decodes every image with PIL into one uint8 (N, H, W, C) array."""
    from PIL import Image
    h, w, c = hwc
    mode = {1: "L", 3: "RGB"}.get(c)
    if mode is None:
        raise SystemExit(f"pytorch_train: InputSize with {c} channels is not supported here")
    out = np.empty((len(paths), h, w, c), dtype=np.uint8)
    for i, p in enumerate(paths):
        with Image.open(p) as im:
            a = np.asarray(im.convert(mode), dtype=np.uint8)
        if a.shape[0] != h or a.shape[1] != w:
            raise SystemExit(f"pytorch_train: {p} is {a.shape[1]}x{a.shape[0]}, the network "
                             f"takes {w}x{h}; resize the data set first")
        out[i] = a.reshape(h, w, c)
    return out


def param_groups(config_path, net, lr0, l2):
    """SGD parameter groups with each learnable's L2 and learn-rate factors, as dltrain (and
    MATLAB) set them: WeightL2Factor 1, BiasL2Factor 0 for convolution2d / fullyConnected, Scale
    and Offset L2 factors 1 for batchNormalization; *LearnRateFactor 1; all overridable in the
    layer's options. (torch's weight_decay alone would also decay the biases.)"""
    import yaml
    with open(config_path) as f:
        specs = yaml.safe_load(f)["layers"]
    by_name = {}
    for i, spec in enumerate(specs):
        by_name[spec.get("Name", f"{spec['type']}_{i + 1}")] = spec
    groups = {}
    for name, mod in net.mods.items():
        spec = by_name.get(name, {})
        kind = spec.get("type")
        for pname, param in mod.named_parameters():
            last = pname.rsplit(".", 1)[-1]
            if kind == "batchNormalization":
                key = "Scale" if last == "weight" else "Offset"
                default_l2 = 1.0
            else:
                key = "Weight" if last == "weight" else "Bias"
                default_l2 = 1.0 if key == "Weight" else 0.0
            l2f = float(spec.get(key + "L2Factor", default_l2))
            lrf = float(spec.get(key + "LearnRateFactor", 1.0))
            groups.setdefault((lrf, l2f), []).append(param)
    return [{"params": ps, "lr": lr0 * lrf, "lr_factor": lrf, "weight_decay": l2 * l2f}
            for (lrf, l2f), ps in groups.items()]


def check_options(topts):
    for key in topts:
        if key not in HANDLED and key not in IGNORED:
            log(f"warning: training.{key} is not implemented here; the comparison ignores it")
    solver = str(topts.get("Solver", "sgdm")).lower()
    if solver != "sgdm":
        raise SystemExit(f"pytorch_train: Solver '{solver}' not supported (sgdm only)")
    sched = str(topts.get("LearnRateSchedule", "none")).lower()
    if sched not in ("none", "piecewise"):
        raise SystemExit(f"pytorch_train: LearnRateSchedule '{sched}' not supported")
    shuffle = str(topts.get("Shuffle", "once")).lower()
    if shuffle not in ("once", "every-epoch", "never"):
        raise SystemExit(f"pytorch_train: Shuffle '{shuffle}' must be once, every-epoch or never")
    return sched, shuffle


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="dltrain YAML config")
    ap.add_argument("--data", required=True, help="folder with train/<class>/ and test/<class>/")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=0, help="0: the config's MaxEpochs")
    ap.add_argument("--drop-period", type=int, default=0, help="0: the config's LearnRateDropPeriod")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-batch", type=int, default=1000)
    args = ap.parse_args()

    pytorch_cpu.ensure_environment("best", args.threads)  # re-executes with tcmalloc etc.

    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    t_start = time.perf_counter()

    net, (c, h, w), num_classes, _, topts = pytorch_cpu.build(args.config, torch)
    sched, shuffle = check_options(topts)
    epochs = args.epochs or int(topts.get("MaxEpochs", 30))
    lr0 = float(topts.get("InitialLearnRate", 0.01))
    drop_factor = float(topts.get("LearnRateDropFactor", 0.1))
    drop_period = args.drop_period or int(topts.get("LearnRateDropPeriod", 10))
    batch = int(topts.get("MiniBatchSize", 128))
    momentum = float(topts.get("Momentum", 0.9))
    l2 = float(topts.get("L2Regularization", 1e-4))

    # Data, decoded once.
    t0 = time.perf_counter()
    train_paths, train_labels, classes = list_folder(os.path.join(args.data, "train"))
    test_paths, test_labels, _ = list_folder(os.path.join(args.data, "test"), classes)
    if len(classes) != num_classes:
        raise SystemExit(f"pytorch_train: the network has {num_classes} outputs but the data has "
                         f"{len(classes)} classes")
    train_x = torch.from_numpy(load_images(train_paths, (h, w, c), np))  # N H W C uint8
    test_x = torch.from_numpy(load_images(test_paths, (h, w, c), np))
    train_y = torch.tensor(train_labels, dtype=torch.long)
    test_y = torch.tensor(test_labels, dtype=torch.long)
    log(f"loaded {len(train_paths)} training and {len(test_paths)} test images in "
        f"{time.perf_counter() - t0:.1f} s")

    # Normalization statistics from the training set (double accumulation, like dltrain).
    input_name = net.order[0][0]
    inp = net.mods[input_name]
    with torch.no_grad():
        mean_hwc = train_x.to(torch.float64).mean(dim=0)  # H W C
        if inp.norm == "zerocenter":
            inp.mean.copy_(mean_hwc.permute(2, 0, 1).unsqueeze(0).float())
        elif inp.norm == "zscore":
            ch = train_x.to(torch.float64).reshape(-1, c)
            inp.mean.copy_(ch.mean(0).reshape(1, c, 1, 1).expand_as(inp.mean).float())
            inp.std.copy_(ch.std(0, unbiased=False).reshape(1, c, 1, 1).float())

    net = net.to(memory_format=torch.channels_last)
    groups = param_groups(args.config, net, lr0, l2)
    opt = torch.optim.SGD(groups, lr=lr0, momentum=momentum, weight_decay=l2)

    def as_input(x_nhwc_uint8):
        # uint8 NHWC -> float NCHW view with channels_last memory: no copy beyond the cast.
        return x_nhwc_uint8.float().permute(0, 3, 1, 2)

    n = train_x.shape[0]
    bsz = min(batch, n)
    per_epoch = n // bsz  # MATLAB drops the last partial mini-batch
    gen = torch.Generator().manual_seed(args.seed)
    train_seconds = 0.0
    images_trained = 0
    last_loss = float("nan")
    log(f"{epochs} epochs x {per_epoch} iterations of {bsz}; lr {lr0} "
        f"{'x' + str(drop_factor) + ' every ' + str(drop_period) + ' epochs' if sched == 'piecewise' else 'constant'}, "
        f"momentum {momentum}, weight decay {l2}, shuffle {shuffle}, seed {args.seed}")
    for epoch, lr, order in pytorch_cpu.training_epochs(torch, opt, gen, n, epochs, shuffle, lr0, sched, drop_factor,
                                                        drop_period):
        net.train()
        te = time.perf_counter()
        loss_sum = 0.0
        correct = 0
        for b in range(per_epoch):
            idx = order[b * bsz:(b + 1) * bsz]
            x = as_input(train_x[idx])
            y = train_y[idx]
            opt.zero_grad(set_to_none=True)
            logits = net(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            correct += (logits.argmax(1) == y).sum().item()
        dt = time.perf_counter() - te
        train_seconds += dt
        images_trained += per_epoch * bsz
        last_loss = loss_sum / max(per_epoch, 1)
        if not np.isfinite(last_loss):
            raise SystemExit(f"pytorch_train: training diverged in epoch {epoch + 1} (loss {last_loss})")
        log(f"epoch {epoch + 1}/{epochs}: lr {lr:g}, mean loss {last_loss:.4f}, train accuracy "
            f"{100.0 * correct / max(per_epoch * bsz, 1):.2f}%, {dt:.1f} s, {per_epoch * bsz / dt:.0f} img/s")

    # Test accuracy.
    net.eval()
    right = 0
    with torch.no_grad():
        for s in range(0, test_x.shape[0], args.eval_batch):
            logits = net(as_input(test_x[s:s + args.eval_batch]))
            right += (logits.argmax(1) == test_y[s:s + args.eval_batch]).sum().item()
    acc = 100.0 * right / test_x.shape[0]
    wall = time.perf_counter() - t_start
    log(f"test accuracy {acc:.2f}% ({test_x.shape[0]} images), wall {wall:.1f} s")
    print(json.dumps({
        "side": "pytorch", "seed": args.seed, "epochs": epochs, "test_accuracy": round(acc, 4),
        "wall_seconds": round(wall, 3),
        "train_images_per_second": round(images_trained / train_seconds, 2) if train_seconds > 0 else 0,
        "learn_rate_drop_period": drop_period, "final_epoch_mean_loss": round(last_loss, 5),
        "total_learnables": sum(p.numel() for p in net.parameters()), "train_images": int(n), "test_images": int(test_x.shape[0]), "mini_batch_size": bsz,
        "threads": torch.get_num_threads(), "torch": torch.__version__,
    }), flush=True)


if __name__ == "__main__":
    main()

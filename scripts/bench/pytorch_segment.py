#!/usr/bin/python3
"""PyTorch reference trainer for dltrain's segmentation comparison
(scripts/bench/camvid_segmentation.sh): trains the network of a *resolved* dltrain config
(the config.yaml `dltrain train` writes: generators expanded, ClassWeights as numbers) on a
pixel-label data set the way `dltrain train` does, writes its predictions on the validation
images as index PNGs (one per image, named by stem) and prints one JSON line with the timings.

  /usr/bin/python3 scripts/bench/pytorch_segment.py RUN/config.yaml --data data/camvid \\
      --seed 1 [--epochs N] --predictions DIR

Same network (pytorch_cpu.build: the config's layers with He / glorot / narrow-normal weights
and zero biases; maxPooling2d with HasUnpoolingOutputs + maxUnpooling2d = MaxPool2d with
return_indices + MaxUnpool2d), same data (DATA/train/{images,labels}, DATA/val/{images,labels}
paired by file stem; images resized to the input size with PIL's antialiased bilinear filter,
labels with nearest neighbour; label values not in LabelIDs are undefined = ignore_index),
same normalization (zerocenter: the training set's mean image at the input size), same loss
(the output layer's, or training.Loss's when the network ends in its softmax; undefined pixels
count nowhere): pixelClassification / crossentropy is per-pixel cross-entropy with the config's
ClassWeights, PyTorch's CrossEntropyLoss(weight, ignore_index=-1) with its weighted mean;
dicePixelClassification / generalized-dice, focalLoss / focal-crossentropy and
tverskyPixelClassification / tversky are generalized_dice, focal_cross_entropy and tversky below, written as dltrain's kernels
(lib/backend/cpu/loss_kernels.cpp) compute them, with autograd through the softmax; same augmentation (RandXReflection, RandX/YTranslation drawn uniformly,
one affine warp: bilinear image sampling with zero fill, nearest labels with undefined fill),
same options (sgdm with each learnable's L2 factor, MiniBatchSize with the partial last batch
dropped, Shuffle every-epoch / once / never, MaxEpochs, constant or piecewise learn rate).
Runs channels_last with torch.set_num_threads(THREADS) and tcmalloc (pytorch_cpu's "best").

train_images_per_second: images trained / seconds in the training loop (augmentation included,
as dltrain's summary.json counts it).
Progress goes to stderr, the JSON line to stdout.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_cpu  # noqa: E402

IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".ppm", ".pgm"}


def log(msg):
    sys.stderr.write(f"pytorch_segment: {msg}\n")
    sys.stderr.flush()


def pairs_in(folder):
    """(stem, image path, label path) for DATA/<split>/{images,labels}, sorted by stem."""
    def by_stem(d):
        out = {}
        for n in sorted(os.listdir(d)):
            stem, ext = os.path.splitext(n)
            if ext.lower() in IMAGE_EXTENSIONS:
                out[stem] = os.path.join(d, n)
        return out
    images, labels = by_stem(os.path.join(folder, "images")), by_stem(os.path.join(folder, "labels"))
    missing = sorted(set(images) ^ set(labels))
    if missing:
        raise SystemExit(f"pytorch_segment: {folder}: images and labels do not pair: {missing[:5]}")
    return [(s, images[s], labels[s]) for s in sorted(images)]


def label_lookup(label_ids, np):
    """A 256 (index PNG) or RGB-keyed map from pixel values to class indices, -1 = undefined."""
    table = {}
    for cls, ids in enumerate(label_ids):
        ids = ids if isinstance(ids, list) and ids and isinstance(ids[0], list) else [ids]
        for v in ids:
            key = tuple(v) if isinstance(v, list) else int(v)
            table[key] = cls
    return table


def decode_label(path, table, hw, np):
    from PIL import Image
    with Image.open(path) as im:
        rgb = any(isinstance(k, tuple) for k in table)
        im = im.convert("RGB") if rgb else im
        im = im.resize((hw[1], hw[0]), Image.NEAREST)
        a = np.asarray(im)
    out = np.full(a.shape[:2], -1, dtype=np.int64)
    if rgb:
        key = (a[..., 0].astype(np.int64) << 16) | (a[..., 1].astype(np.int64) << 8) | a[..., 2]
        for k, cls in table.items():
            out[key == ((k[0] << 16) | (k[1] << 8) | k[2])] = cls
    else:
        for k, cls in table.items():
            out[a == k] = cls
    return out


def load_split(items, hw, c, table, np):
    from PIL import Image
    h, w = hw
    x = np.empty((len(items), h, w, c), dtype=np.float32)
    y = np.empty((len(items), h, w), dtype=np.int64)
    for i, (_, ip, lp) in enumerate(items):
        with Image.open(ip) as im:
            im = im.convert("RGB" if c == 3 else "L").resize((w, h), Image.BILINEAR)
            x[i] = np.asarray(im, dtype=np.float32).reshape(h, w, c)
        y[i] = decode_label(lp, table, hw, np)
    return x, y


def loss_of(cfg):
    """The loss dltrain trains the resolved config with: its output layer's, or training.Loss's
    when the layers end in the softmax (dltrain appends the loss's output layer)."""
    out = cfg["layers"][-1]
    by_layer = {"pixelClassification": "crossentropy", "dicePixelClassification": "generalized-dice",
                "focalLoss": "focal-crossentropy", "tverskyPixelClassification": "tversky"}
    if out["type"] in by_layer:
        return by_layer[out["type"]], out
    named = str((cfg.get("training") or {}).get("Loss", "none")).lower()
    named = {"index-crossentropy": "crossentropy"}.get(named, named)
    if out["type"] == "softmax" and named in ("crossentropy", "generalized-dice", "focal-crossentropy", "tversky"):
        return named, {}
    raise SystemExit(f"pytorch_segment: the network ends in {out['type']} with Loss {named}; this script trains "
                     "pixelClassification, dicePixelClassification, focalLoss and tverskyPixelClassification")


def generalized_dice(logits, y, torch):
    """dltrain's generalized Dice (MATLAB's generalizedDice): per image, over its pixels whose label
    is defined (y >= 0), with n_k their count of class k, w_k = 1 / n_k^2 (0 when n_k = 0),
    A = sum_k w_k sum_p p_k t_k and B = sum_k w_k sum_p (p_k^2 + t_k^2), the loss is 1 - 2 A / B;
    the mean over the images with B > 0 (no epsilon). Sums in float64, as dltrain's kernel."""
    k = logits.shape[1]
    p = torch.softmax(logits, dim=1).double()
    defined = (y >= 0).unsqueeze(1)                                   # N 1 H W
    t = torch.nn.functional.one_hot(y.clamp(min=0), k).permute(0, 3, 1, 2).double() * defined
    count = t.sum((2, 3))                                             # N K
    w = torch.where(count > 0, 1.0 / count.clamp(min=1) ** 2, torch.zeros_like(count))
    inter = (p * t).sum((2, 3))
    union = (p * p * defined).sum((2, 3)) + count
    a, b = (w * inter).sum(1), (w * union).sum(1)
    counted = b > 0
    if not bool(counted.any()):
        return (p.sum() * 0).to(logits.dtype)
    return (1 - 2 * a[counted] / b[counted]).mean().to(logits.dtype)


def focal_cross_entropy(logits, y, gamma, alpha, torch):
    """dltrain's focal cross-entropy (MATLAB's focalCrossEntropy): -alpha (1 - p)^gamma log p of each
    defined pixel's label probability p, the mean over those pixels (the focalLoss layer takes no
    class weights)."""
    logp = torch.log_softmax(logits, dim=1)
    defined = y >= 0
    logp_l = logp.gather(1, y.clamp(min=0).unsqueeze(1)).squeeze(1)[defined]
    q = 1 - logp_l.exp()
    return -(alpha * q.pow(gamma) * logp_l).sum() / defined.sum().clamp(min=1)


def tversky(logits, y, alpha, beta, torch):
    """dltrain's Tversky loss (MATLAB's Tversky loss example): per image, over its pixels whose label
    is defined, TP_k = sum_p p_k t_k, FP_k = sum_p p_k (1 - t_k), FN_k = sum_p (1 - p_k) t_k, the
    loss sum_k 1 - (TP_k + 1e-8) / (TP_k + alpha FP_k + beta FN_k + 1e-8); the mean over the images
    with a defined pixel. Sums in float64, as dltrain's kernel."""
    k = logits.shape[1]
    defined = (y >= 0).unsqueeze(1)                                   # N 1 H W
    p = torch.softmax(logits, dim=1).double() * defined
    t = torch.nn.functional.one_hot(y.clamp(min=0), k).permute(0, 3, 1, 2).double() * defined
    tp = (p * t).sum((2, 3))
    fp = p.sum((2, 3)) - tp
    fn = t.sum((2, 3)) - tp
    ti = (tp + 1e-8) / (tp + alpha * fp + beta * fn + 1e-8)
    counted = defined.flatten(1).any(1)
    if not bool(counted.any()):
        return (p.sum() * 0).to(logits.dtype)
    return (1 - ti).sum(1)[counted].mean().to(logits.dtype)


def augment(x, y, aug, gen, torch):
    """One affine warp per image, as dltrain's: x (N, C, H, W) float, y (N, H, W) long."""
    import torch.nn.functional as F
    n, _, h, w = x.shape
    flip = torch.ones(n)
    if aug.get("RandXReflection", False):
        flip = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
    tx_lo, tx_hi = aug.get("RandXTranslation", [0, 0])
    ty_lo, ty_hi = aug.get("RandYTranslation", [0, 0])
    tx = tx_lo + (tx_hi - tx_lo) * torch.rand(n, generator=gen)
    ty = ty_lo + (ty_hi - ty_lo) * torch.rand(n, generator=gen)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = flip
    theta[:, 1, 1] = 1
    theta[:, 0, 2] = -2 * tx / w  # output pixel p samples input p - t (normalized coordinates)
    theta[:, 1, 2] = -2 * ty / h
    grid = F.affine_grid(theta.to(x.device), list(x.shape), align_corners=False)
    xa = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    ya = F.grid_sample((y + 1).unsqueeze(1).float(), grid, mode="nearest", padding_mode="zeros",
                       align_corners=False)
    return xa, ya.squeeze(1).round().long() - 1  # outside the image: 0 - 1 = undefined


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="the resolved config.yaml of a dltrain segmentation run")
    ap.add_argument("--data", required=True, help="folder with train/ and val/, each images/ + labels/")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=0, help="0: the config's MaxEpochs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--predictions", required=True, help="folder for the validation predictions (index PNGs)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: train on cuda:0 (data and augmentation on the GPU, cudnn.benchmark, TF32 off)")
    args = ap.parse_args()

    if args.device == "cpu":
        pytorch_cpu.ensure_environment("best", args.threads)

    import numpy as np
    import torch
    import torch.nn.functional as F
    import yaml
    from PIL import Image
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pytorch_train import param_groups  # noqa: E402

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    t_start = time.perf_counter()
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    net, (c, h, w), num_classes, _, topts = pytorch_cpu.build(args.config, torch)
    data = cfg["data"]
    loss_name, out_layer = loss_of(cfg)
    gamma, alpha = float(out_layer.get("Gamma", 2.0)), float(out_layer.get("Alpha", 0.25))
    t_alpha, t_beta = float(out_layer.get("Alpha", 0.3)), float(out_layer.get("Beta", 0.7))
    weights = out_layer.get("ClassWeights", "none")
    if isinstance(weights, str):
        if weights.lower() != "none":
            raise SystemExit(f"pytorch_segment: ClassWeights '{weights}' is not resolved; give the "
                             "config.yaml a dltrain run wrote")
        weights = None
    table = label_lookup(data["LabelIDs"], np)
    epochs = args.epochs or int(topts.get("MaxEpochs", 30))
    if str(topts.get("Solver", "sgdm")).lower() != "sgdm":
        raise SystemExit(f"pytorch_segment: Solver '{topts['Solver']}' not implemented here (sgdm only)")
    lr0 = float(topts.get("InitialLearnRate", 0.01))
    sched = str(topts.get("LearnRateSchedule", "none")).lower()
    drop_factor = float(topts.get("LearnRateDropFactor", 0.1))
    drop_period = int(topts.get("LearnRateDropPeriod", 10))
    batch = int(topts.get("MiniBatchSize", 128))
    momentum = float(topts.get("Momentum", 0.9))
    l2 = float(topts.get("L2Regularization", 1e-4))
    shuffle = str(topts.get("Shuffle", "once")).lower()
    aug = data.get("Augmentation", {}) or {}
    # The resolved config writes every key; the ones at their no-op value need nothing here.
    noop = {"RandYReflection": False, "RandRotation": [0, 0], "RandScale": [1, 1], "RandXScale": [1, 1],
            "RandYScale": [1, 1], "RandXShear": [0, 0], "RandYShear": [0, 0], "PadCrop": 0, "FillValue": []}
    unsupported = {k for k in set(aug) - {"RandXReflection", "RandXTranslation", "RandYTranslation"}
                   if aug[k] != noop.get(k, object())}
    if unsupported:
        raise SystemExit(f"pytorch_segment: augmentation {sorted(unsupported)} not implemented here")

    t0 = time.perf_counter()
    train_items = pairs_in(os.path.join(args.data, "train"))
    val_items = pairs_in(os.path.join(args.data, "val"))
    train_x, train_y = load_split(train_items, (h, w), c, table, np)
    val_x, _ = load_split(val_items, (h, w), c, table, np)
    log(f"loaded {len(train_items)} training and {len(val_items)} validation pairs at {h}x{w} in "
        f"{time.perf_counter() - t0:.1f} s")
    inp = net.mods[net.order[0][0]]
    with torch.no_grad():
        if inp.norm == "zerocenter":
            inp.mean.copy_(torch.from_numpy(train_x.astype(np.float64).mean(0)).permute(2, 0, 1).unsqueeze(0).float())
        elif inp.norm != "none":
            raise SystemExit(f"pytorch_segment: Normalization '{inp.norm}' not implemented here")
    train_x = torch.from_numpy(train_x).permute(0, 3, 1, 2).contiguous().to(dev)
    train_y = torch.from_numpy(train_y).to(dev)
    val_x = torch.from_numpy(val_x).permute(0, 3, 1, 2).contiguous().to(dev)

    net = net.to(dev, memory_format=torch.channels_last)
    groups = param_groups(args.config, net, lr0, l2)
    opt = torch.optim.SGD(groups, lr=lr0, momentum=momentum, weight_decay=l2)
    class_weights = torch.tensor(weights, dtype=torch.float32, device=dev) if weights else None
    n = train_x.shape[0]
    bsz = min(batch, n)
    per_epoch = n // bsz
    gen = torch.Generator().manual_seed(args.seed)
    epoch_seconds = []
    log(f"{epochs} epochs x {per_epoch} iterations of {bsz}; lr {lr0}, momentum {momentum}, "
        f"weight decay {l2}, shuffle {shuffle}, loss {loss_name}, class weights {weights}, seed {args.seed}")
    for epoch, lr, order in pytorch_cpu.training_epochs(torch, opt, gen, n, epochs, shuffle, lr0, sched, drop_factor,
                                                        drop_period):
        net.train()
        te = time.perf_counter()
        # Sums stay on the device (one synchronisation per epoch, not three per iteration).
        loss_sum = torch.zeros((), device=dev, dtype=torch.float64)
        right = torch.zeros((), device=dev, dtype=torch.int64)
        counted = torch.zeros((), device=dev, dtype=torch.int64)
        for b in range(per_epoch):
            idx = order[b * bsz:(b + 1) * bsz].to(dev)
            x, y = augment(train_x[idx], train_y[idx], aug, gen, torch)
            x = x.contiguous(memory_format=torch.channels_last)
            opt.zero_grad(set_to_none=True)
            logits = net(x)
            if loss_name == "generalized-dice":
                loss = generalized_dice(logits, y, torch)
            elif loss_name == "focal-crossentropy":
                loss = focal_cross_entropy(logits, y, gamma, alpha, torch)
            elif loss_name == "tversky":
                loss = tversky(logits, y, t_alpha, t_beta, torch)
            else:
                loss = F.cross_entropy(logits, y, weight=class_weights, ignore_index=-1)
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss.detach()
                defined = y >= 0
                right += ((logits.argmax(1) == y) & defined).sum()
                counted += defined.sum()
        loss_sum, right, counted = loss_sum.item(), right.item(), counted.item()  # waits for the GPU
        dt = time.perf_counter() - te
        epoch_seconds.append(dt)
        mean_loss = loss_sum / max(per_epoch, 1)
        if not np.isfinite(mean_loss):
            raise SystemExit(f"pytorch_segment: training diverged in epoch {epoch + 1}")
        log(f"epoch {epoch + 1}/{epochs}: mean loss {mean_loss:.4f}, pixel accuracy "
            f"{100.0 * right / max(counted, 1):.2f}%, {dt:.1f} s")

    os.makedirs(args.predictions, exist_ok=True)
    net.eval()
    with torch.no_grad():
        for s in range(0, val_x.shape[0], 8):
            pred = net(val_x[s:s + 8].contiguous(memory_format=torch.channels_last)).argmax(1).cpu()
            for k in range(pred.shape[0]):
                stem = val_items[s + k][0]
                Image.fromarray(pred[k].numpy().astype(np.uint8)).save(
                    os.path.join(args.predictions, stem + ".png"))
    print(json.dumps({
        "side": "pytorch", "seed": args.seed, "epochs": epochs, "loss": loss_name,
        "train_images_per_second": round(epochs * per_epoch * bsz / max(sum(epoch_seconds), 1e-9), 3),
        "wall_seconds": round(time.perf_counter() - t_start, 3),
        "train_images": int(n), "val_images": int(val_x.shape[0]), "mini_batch_size": bsz,
        "threads": torch.get_num_threads(), "torch": torch.__version__,
    }), flush=True)


if __name__ == "__main__":
    main()

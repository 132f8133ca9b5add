#!/usr/bin/python3
"""PIL side of scripts/bench/data_vs_pil: prepares the benchmark images and measures PIL's
decode + resize (+ augment) throughput on one core, the same work dltrain's loader does.

  data_vs_pil.py prep WORK CIFAR_TAR FLOWERS_TAR   -> WORK/png32, WORK/jpg227, WORK/jpgbig
  data_vs_pil.py bench DIR HxW [--augment] [--epochs N]
"""
import glob
import math
import os
import random
import sys
import tarfile
import time

import numpy as np
from PIL import Image


def prep(work, cifar_tar, flowers_tar, n_png=5000):
    os.makedirs(work, exist_ok=True)
    png = os.path.join(work, "png32")
    if not os.path.isdir(png):
        with tarfile.open(cifar_tar) as t:
            members = [m for m in t.getmembers() if m.isfile() and m.name.startswith("train/")]
            members.sort(key=lambda m: m.name)
            for m in members[:: max(1, len(members) // n_png)][:n_png]:
                cls = m.name.split("/")[1]
                os.makedirs(os.path.join(png + ".tmp", cls), exist_ok=True)
                img = Image.open(t.extractfile(m)).convert("RGB")
                img.save(os.path.join(png + ".tmp", cls, os.path.basename(m.name)[:-4] + ".png"))
        os.rename(png + ".tmp", png)
    big, j227 = os.path.join(work, "jpgbig"), os.path.join(work, "jpg227")
    if not os.path.isdir(big):
        with tarfile.open(flowers_tar) as t:
            t.extractall(big + ".tmp", members=[m for m in t.getmembers() if m.name.startswith("train/")])
        os.rename(os.path.join(big + ".tmp", "train"), big)
        os.rmdir(big + ".tmp")
    if not os.path.isdir(j227):
        for f in sorted(glob.glob(os.path.join(big, "*", "*.jpg"))):
            cls = os.path.basename(os.path.dirname(f))
            os.makedirs(os.path.join(j227 + ".tmp", cls), exist_ok=True)
            Image.open(f).convert("RGB").resize((227, 227), Image.BILINEAR).save(
                os.path.join(j227 + ".tmp", cls, os.path.basename(f)), quality=90)
        os.rename(j227 + ".tmp", j227)


def augment(img, rng, w, h):
    """RandXReflection, RandRotation [-10 10], RandScale [0.9 1.1], translations [-3 3]:
    one affine warp with bilinear sampling and zero fill, as dltrain's bench-loader --augment."""
    flip = rng.random() < 0.5
    theta = math.radians(rng.uniform(-10, 10))
    s = rng.uniform(0.9, 1.1)
    tx, ty = rng.uniform(-3, 3), rng.uniform(-3, 3)
    cx, cy = (w - 1) / 2, (h - 1) / 2
    c, sn = math.cos(theta) / s, math.sin(theta) / s
    fx = -1 if flip else 1
    # input = c + F R^-1 S^-1 (out - c - t): PIL's AFFINE takes this output->input map.
    a, b = fx * c, fx * sn
    d, e = -sn, c
    x0 = cx - a * (cx + tx) - b * (cy + ty)
    y0 = cy - d * (cx + tx) - e * (cy + ty)
    return img.transform((w, h), Image.AFFINE, (a, b, x0, d, e, y0), resample=Image.BILINEAR)


def bench(folder, size, do_augment, epochs):
    h, w = (int(v) for v in size.split("x")[:2])
    files = sorted(glob.glob(os.path.join(folder, "*", "*")))
    rng = random.Random(0)
    t0 = time.perf_counter()
    n = 0
    for _ in range(epochs):
        for f in files:
            img = Image.open(f).convert("RGB")
            if img.size != (w, h):
                img = img.resize((w, h), Image.BILINEAR)
            if do_augment:
                img = augment(img, rng, w, h)
            arr = np.asarray(img, dtype=np.float32)
            n += arr.shape[0] > 0
    dt = time.perf_counter() - t0
    print(f"pil: {n} images in {dt:.3f} s: {n / dt:.1f} images/s ({size}{', augment' if do_augment else ''})")


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "prep":
        prep(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 4 and sys.argv[1] == "bench":
        epochs = int(sys.argv[sys.argv.index("--epochs") + 1]) if "--epochs" in sys.argv else 1
        bench(sys.argv[2], sys.argv[3], "--augment" in sys.argv, epochs)
    else:
        sys.exit(__doc__)

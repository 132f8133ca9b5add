#!/usr/bin/python3
"""Helper of tests/cli/segment.sh, independent of dltrain's code: numpy and a small PNG codec
(zlib; no PIL needed).

  seg_check.py make DIR          images (DIR/img), index labels (DIR/lab), RGB labels (DIR/labrgb)
  seg_check.py check OUT IMG LAB [--colour] [--label-rgb]
      checks OUT/<stem>.png and OUT/<stem>_overlay.png against the images (sizes, colours,
      labeloverlay's 0.5 blend) and OUT/metrics.json against evaluateSemanticSegmentation's
      metrics recomputed here from the written predictions and the truth (BF score: bwperim
      boundaries with 4-connectivity, the image edge not a boundary, matches closer than 0.75%
      of the diagonal, the prediction masked where the truth is undefined). --label-rgb: LAB
      holds the RGB labels and the class colours are theirs.
"""
import json
import os
import struct
import sys
import zlib

import numpy as np

CLASSES = ["background", "red", "blue"]
COLOURS = np.array([[30, 180, 40], [200, 30, 20], [20, 40, 210]], dtype=np.uint8)  # image colours
LINES = np.array([[0, 114, 189], [217, 83, 25], [237, 177, 32]], dtype=np.int64)  # MATLAB lines
LABEL_RGB = np.array([[0, 255, 0], [255, 0, 0], [0, 0, 255]], dtype=np.uint8)  # for --label-ids


def write_png(path, a):
    a = np.ascontiguousarray(a, dtype=np.uint8)
    h, w = a.shape[:2]
    ctype = 0 if a.ndim == 2 else 2
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ctype, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, t = struct.unpack(">I4s", data[pos:pos + 8])
        d = data[pos + 8:pos + 8 + n]
        if t == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", d)
            assert depth == 8 and interlace == 0, f"{path}: depth {depth} interlace {interlace}"
        elif t == b"IDAT":
            idat += d
        pos += 12 + n
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), dtype=np.int64)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)], dtype=np.uint8).astype(np.int64)
        cur = np.zeros(stride, dtype=np.int64)
        for x in range(stride):
            a = cur[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch) if ch > 1 else out.reshape(h, w)


def make(d):
    rng = np.random.default_rng(7)
    for sub in ("img", "lab", "labrgb"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    sizes = {"a": (12, 16), "b": (24, 32), "c": (15, 21), "d": (30, 20), "e": (120, 150)}
    for stem, (h, w) in sizes.items():
        lab = np.zeros((h, w), dtype=np.uint8)
        for cls in (1, 2):
            rh, rw = rng.integers(h // 4, h // 2 + 1), rng.integers(w // 4, w // 2 + 1)
            y, x = rng.integers(0, h - rh + 1), rng.integers(0, w - rw + 1)
            lab[y:y + rh, x:x + rw] = cls
        img = COLOURS[lab]
        if stem == "c":
            lab[:, -3:] = 255  # undefined truth: counts nowhere
        write_png(os.path.join(d, "img", stem + ".png"), img)
        write_png(os.path.join(d, "lab", stem + ".png"), lab)
        rgb = np.zeros((h, w, 3), dtype=np.uint8)  # undefined: black, a colour of no class
        rgb[lab < 3] = LABEL_RGB[lab[lab < 3]]
        write_png(os.path.join(d, "labrgb", stem + ".png"), rgb)


def boundary(mask):
    p = np.pad(mask, 1, constant_values=True)  # imerode pads with 1s: the edge is no boundary
    eroded = p[1:-1, 1:-1] & p[:-2, 1:-1] & p[2:, 1:-1] & p[1:-1, :-2] & p[1:-1, 2:]
    return mask & ~eroded


def bf(truth, pred, k):
    h, w = truth.shape
    theta = 0.0075 * np.hypot(h, w)
    defined = truth < k
    pred = np.where(defined, pred, 255)
    out = []
    for c in range(k):
        mt, mp = truth == c, pred == c
        if not mt.any() and not mp.any():
            out.append(np.nan)
            continue
        bt, bp = np.argwhere(boundary(mt)), np.argwhere(boundary(mp))
        if len(bt) == 0 and len(bp) == 0:
            out.append(1.0 if mt.any() and mp.any() else 0.0)
            continue
        if len(bt) == 0 or len(bp) == 0:
            out.append(0.0)
            continue
        dist = np.sqrt(((bp[:, None, :] - bt[None, :, :]) ** 2).sum(-1))
        precision = (dist.min(1) < theta).mean()
        recall = (dist.min(0) < theta).mean()
        out.append(0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall))
    return out


def close(a, b, what):
    if a is None or b is None or (isinstance(a, float) and np.isnan(a)):
        ok = (a is None or np.isnan(a)) and (b is None or np.isnan(b))
    else:
        ok = abs(a - b) <= 1e-6 * max(1.0, abs(b))
    if not ok:
        raise SystemExit(f"seg_check: {what}: dltrain {a}, here {b}")


def check(out, img_dir, lab_dir, colour, label_rgb):
    k = len(CLASSES)
    conf = np.zeros((k, k), dtype=np.int64)
    per_image, per_class = [], [[] for _ in range(k)]
    stems = sorted(os.path.splitext(n)[0] for n in os.listdir(img_dir))
    palette = LABEL_RGB.astype(np.int64) if label_rgb else LINES
    for stem in stems:
        img = read_png(os.path.join(img_dir, stem + ".png"))
        lab = read_png(os.path.join(lab_dir, stem + ".png"))
        if label_rgb:  # colours -> classes, other colours undefined
            hit = (lab[:, :, None, :] == LABEL_RGB.astype(np.int64)[None, None]).all(-1)
            lab = np.where(hit.any(-1), hit.argmax(-1), 255)
        written = read_png(os.path.join(out, stem + ".png"))
        if colour:
            assert written.shape == img.shape, f"{stem}.png is {written.shape}, image {img.shape}"
            match = (written[:, :, None, :] == palette[None, None, :, :]).all(-1)
            assert match.any(-1).all(), f"{stem}.png has colours outside the palette"
            pred = match.argmax(-1)
        else:
            assert written.shape == img.shape[:2], f"{stem}.png is {written.shape}, image {img.shape}"
            pred = written
        assert pred.max() < k, f"{stem}.png: class {pred.max()}"
        over = read_png(os.path.join(out, stem + "_overlay.png"))
        want = (img + palette[pred] + 1) // 2  # round(0.5 image + 0.5 colour), halves up
        assert over.shape == img.shape and (over == want).all(), f"{stem}_overlay.png is not the 0.5 blend"
        d = lab < k
        np.add.at(conf, (lab[d], pred[d]), 1)
        s = bf(lab, pred, k)
        for c in range(k):
            if not np.isnan(s[c]):
                per_class[c].append(s[c])
        if not all(np.isnan(s)):
            per_image.append(np.nanmean(s))
    m = json.load(open(os.path.join(out, "metrics.json")))
    tp = np.diag(conf).astype(float)
    rows, cols = conf.sum(1).astype(float), conf.sum(0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = tp / rows
        iou = tp / (rows + cols - tp)
    ds = m["DataSetMetrics"]
    close(ds["GlobalAccuracy"], tp.sum() / conf.sum(), "GlobalAccuracy")
    close(ds["MeanAccuracy"], np.nanmean(acc), "MeanAccuracy")
    close(ds["MeanIoU"], np.nanmean(iou), "MeanIoU")
    close(ds["WeightedIoU"], np.nansum(rows * iou) / rows.sum(), "WeightedIoU")
    close(ds["MeanBFScore"], float(np.mean(per_image)), "MeanBFScore")
    assert ds["Images"] == len(stems) and ds["Pixels"] == conf.sum(), ds
    assert m["ConfusionMatrix"] == conf.tolist(), (m["ConfusionMatrix"], conf.tolist())
    for c in range(k):
        cm = m["ClassMetrics"][c]
        assert cm["Class"] == CLASSES[c]
        close(cm["Accuracy"], acc[c], f"{CLASSES[c]} Accuracy")
        close(cm["IoU"], iou[c], f"{CLASSES[c]} IoU")
        close(cm["MeanBFScore"], float(np.mean(per_class[c])) if per_class[c] else None, f"{CLASSES[c]} MeanBFScore")
        for j in range(k):
            close(m["NormalizedConfusionMatrix"][c][j], conf[c, j] / rows[c] if rows[c] else None, "normalized")
    print(f"seg_check: {len(stems)} images, GlobalAccuracy {ds['GlobalAccuracy']:.4f} MeanIoU {ds['MeanIoU']:.4f} "
          f"MeanBFScore {ds['MeanBFScore']:.4f} agree")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4], "--colour" in sys.argv[5:], "--label-rgb" in sys.argv[5:])
    elif sys.argv[1] == "palette":  # prints the colours of a --colour label PNG
        print(sorted({tuple(p) for p in read_png(sys.argv[2]).reshape(-1, 3).tolist()}))
    else:
        raise SystemExit(__doc__)

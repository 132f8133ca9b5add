#!/usr/bin/python3
"""One metric code for both sides of scripts/bench/camvid_segmentation.sh: reads predicted
index PNGs (PRED/<stem>.png, class indices) and ground-truth label images (LABELS/<stem>.*,
mapped to classes with the config's LabelIDs; values of no class are undefined and count
nowhere), accumulates one confusion matrix over the set and prints a JSON line with
evaluateSemanticSegmentation's data-set metrics: GlobalAccuracy, MeanAccuracy, MeanIoU,
WeightedIoU, as MATLAB's NaN handling does: a class absent from the ground truth is left out of
MeanAccuracy, and out of MeanIoU only when it is not predicted either (its IoU is then NaN; a
class predicted but absent has IoU 0), as dltrain's SegmentationMetrics. A prediction whose size differs from its label image is resized to it with
nearest neighbour first (what `dltrain segment` does with the network's output).

  /usr/bin/python3 scripts/bench/seg_metrics.py RUN/config.yaml PRED_DIR LABELS_DIR
"""
import json
import os
import sys

import numpy as np
import yaml
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_segment import decode_label, label_lookup  # noqa: E402


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    config, pred_dir, label_dir = sys.argv[1:]
    with open(config) as f:
        data = yaml.safe_load(f)["data"]
    table = label_lookup(data["LabelIDs"], np)
    k = len(data["ClassNames"])
    conf = np.zeros((k, k), dtype=np.int64)
    labels = {os.path.splitext(n)[0]: os.path.join(label_dir, n) for n in os.listdir(label_dir)}
    preds = sorted(n for n in os.listdir(pred_dir) if n.endswith(".png"))
    if not preds:
        raise SystemExit(f"seg_metrics: no predictions in {pred_dir}")
    for n in preds:
        stem = os.path.splitext(n)[0]
        if stem not in labels:
            raise SystemExit(f"seg_metrics: {pred_dir}/{n} has no label image in {label_dir}")
        with Image.open(labels[stem]) as im:
            size = im.size
        truth = decode_label(labels[stem], table, (size[1], size[0]), np)
        with Image.open(os.path.join(pred_dir, n)) as im:
            if im.size != size:
                im = im.resize(size, Image.NEAREST)
            pred = np.asarray(im).astype(np.int64)
        d = truth >= 0
        np.add.at(conf, (truth[d], pred[d]), 1)
    tp = np.diag(conf).astype(np.float64)
    truth_count = conf.sum(1).astype(np.float64)
    pred_count = conf.sum(0).astype(np.float64)
    present = truth_count > 0
    acc = tp[present] / truth_count[present]
    union = truth_count + pred_count - tp
    iou = tp[union > 0] / union[union > 0]  # a class predicted but absent from the truth: IoU 0
    print(json.dumps({
        "images": len(preds),
        "GlobalAccuracy": round(float(tp.sum() / conf.sum()), 6),
        "MeanAccuracy": round(float(acc.mean()), 6),
        "MeanIoU": round(float(iou.mean()), 6),
        "WeightedIoU": round(float((truth_count[present] * iou).sum() / truth_count.sum()), 6),
        "ClassIoU": {data["ClassNames"][i]: (round(float(tp[i] / (truth_count + pred_count - tp)[i]), 6)
                                             if present[i] else None) for i in range(k)},
    }))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Reads a dltrain run's TensorBoard event files with TensorBoard's own reader (issue 37).

Trains a small run with `TensorBoard: true` (or takes an existing event folder), loads it with
tensorboard.backend.event_processing.event_accumulator.EventAccumulator (what `tensorboard
--logdir` uses) and prints every tag with its number of steps, first and last step and last
value, the images' steps and sizes, and whether each scalar equals log.csv's value at every
iteration. TensorBoard is not a test dependency: install it into a virtual environment
(`python3 -m venv build/zoo-venv && build/zoo-venv/bin/pip install tensorboard`, or reuse
/work/zoo-venv) and run this script with that Python:

  build/zoo-venv/bin/python scripts/bench/tensorboard_read.py [--run DIR] [--dltrain build/dltrain]

--run DIR reads DIR/tensorboard and DIR/log.csv of a finished run instead of training one.
Exit 1 when TensorBoard finds no scalars or a value differs from log.csv.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile

from tensorboard.backend.event_processing import event_accumulator

TAG_OF = {"minibatch_loss": "train/loss", "minibatch_accuracy": "train/accuracy",
          "base_learning_rate": "train/learn_rate", "validation_loss": "validation/loss",
          "validation_accuracy": "validation/accuracy"}

CONFIG = """layers:
  - {{type: imageInput, InputSize: [16, 16, 3], Normalization: zscore}}
  - {{type: convolution2d, FilterSize: 3, NumFilters: 8, Padding: same}}
  - {{type: batchNormalization}}
  - {{type: relu}}
  - {{type: maxPooling2d, PoolSize: 2, Stride: 2}}
  - {{type: fullyConnected, OutputSize: 3}}
  - {{type: softmax}}
  - {{type: classification}}
data: {{train: {data}/train, validation: {data}/test}}
training:
  InitialLearnRate: 0.01
  MaxEpochs: 4
  MiniBatchSize: 16
  ValidationFrequency: 5
  Metrics: [fscore, precision, recall, auc]
  ObjectiveMetricName: fscore
  OutputNetwork: best-validation
  TensorBoard: true
  PlotIntervalSeconds: 0.5
  Verbose: false
"""


def train(dltrain, tmp):
    data, run = os.path.join(tmp, "data"), os.path.join(tmp, "run")
    subprocess.run([dltrain, "make-dataset", "shapes", data, "--classes", "3", "--per-class", "60",
                    "--size", "16x16", "--seed", "4"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(tmp, "run.yaml"), "w") as f:
        f.write(CONFIG.format(data=data))
    subprocess.run([dltrain, "train", os.path.join(tmp, "run.yaml"), "--quiet", "--output-dir", run], check=True)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", help="a finished run's output folder (default: train one)")
    ap.add_argument("--dltrain", default=os.environ.get("DLTRAIN", "build/dltrain"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or train(args.dltrain, tmp)
        folder = os.path.join(run, "tensorboard")
        acc = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.SCALARS: 0,
                                                                        event_accumulator.IMAGES: 0})
        acc.Reload()
        tags = acc.Tags()
        files = sorted(f for f in os.listdir(folder) if "tfevents" in f)
        print(f"event file: {', '.join(files)}")
        print(f"{'tag':28} {'steps':>6} {'first':>6} {'last':>6} {'last value':>12}  equals log.csv")
        rows = list(csv.DictReader(open(os.path.join(run, "log.csv"))))
        columns = {TAG_OF.get(c, "validation/" + c[len("validation_"):] if c.startswith("validation_") else None): c
                   for c in rows[0]}
        bad = 0
        for tag in sorted(tags["scalars"]):
            events = acc.Scalars(tag)
            column = columns.get(tag)
            verdict = "(not in log.csv)"
            if column:
                want = {int(r["iteration"]): float(r[column]) for r in rows if r[column] != ""}
                have = {e.step: e.value for e in events}
                same = set(want) == set(have) and all(
                    math.isclose(have[s], v, rel_tol=2e-5, abs_tol=1e-12) for s, v in want.items())
                verdict = f"yes ({len(want)} values)" if same else "NO"
                bad += not same
            print(f"{tag:28} {len(events):6} {events[0].step:6} {events[-1].step:6} {events[-1].value:12.6g}  {verdict}")
        for tag in sorted(tags["images"]):
            images = acc.Images(tag)
            print(f"image {tag}: {len(images)} images at steps {[i.step for i in images][:8]}"
                  f"{' ...' if len(images) > 8 else ''}, {images[-1].width}x{images[-1].height}, "
                  f"last {len(images[-1].encoded_image_string)} bytes")
        if not tags["scalars"] or bad:
            sys.exit(1)


if __name__ == "__main__":
    main()

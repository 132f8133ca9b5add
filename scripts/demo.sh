#!/usr/bin/env bash
# The demo: set-up, build, generate the shapes dataset, train configs/shapes.yaml, classify
# the held-out images and print the accuracy. A few minutes on 2 cores. Prints each stage's
# wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$SECONDS
scripts/setup.sh
echo "== set-up: $((SECONDS - t)) s"; t=$SECONDS
scripts/build.sh
echo "== build: $((SECONDS - t)) s"; t=$SECONDS
dltrain=${DLTRAIN_BUILD_DIR:-build}/dltrain
data=data/shapes
out=runs/demo

if [[ ! -d $data/train ]]; then
  echo "== Generating the shapes dataset in $data"
  "$dltrain" make-dataset shapes "$data" --classes 4 --size 32x32 --seed 1
fi

echo "== Training configs/shapes.yaml (outputs in $out)"
"$dltrain" train configs/shapes.yaml --output-dir "$out" --overwrite  # a second demo replaces the first
echo "== dataset + train: $((SECONDS - t)) s"; t=$SECONDS

echo "== Classifying the held-out images in $data/test"
"$dltrain" classify "$out/model.bin" "$data/test" --output "$out/predictions.csv"
echo "== classify: $((SECONDS - t)) s"

echo
echo "Model:       $out/model.bin"
echo "Summary:     $out/summary.json"
echo "Plot:        $out/progress.png"
echo "Predictions: $out/predictions.csv"

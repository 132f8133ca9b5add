#!/usr/bin/env bash
# The demo: set-up, build, generate the shapes dataset, train configs/shapes.yaml, classify
# the held-out images and print the accuracy. A few minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
dltrain=${DLTRAIN_BUILD_DIR:-build}/dltrain
data=data/shapes
out=runs/demo

if [[ ! -d $data/train ]]; then
  echo "== Generating the shapes dataset in $data"
  "$dltrain" make-dataset shapes "$data" --classes 4 --size 32x32 --seed 1
fi

echo "== Training configs/shapes.yaml (outputs in $out)"
"$dltrain" train configs/shapes.yaml --output-dir "$out"

echo "== Classifying the held-out images in $data/test"
"$dltrain" classify "$out/model.bin" "$data/test" --output "$out/predictions.csv"

echo
echo "Model:       $out/model.bin"
echo "Summary:     $out/summary.json"
echo "Plot:        $out/progress.png"
echo "Predictions: $out/predictions.csv"

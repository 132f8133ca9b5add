#!/usr/bin/env bash
# Builds each fuzz target's seed corpus from the project's own files, in OUT/<target>/:
#   fuzz_config        configs/*.yaml, some with --set override lines after "#--set"
#   fuzz_model_file    model.bin of a tiny classifier trained 1 epoch (dltrain make-dataset + train)
#                      and of a tiny segmentation network
#   fuzz_onnx_import   the same models through dltrain export
#   fuzz_image_decode  PNG, JPEG, BMP, TGA, GIF, PNM (grey and RGB) and label images (make_seeds)
#   fuzz_report        the training runs' summary.json and the model metadata
#   fuzz_tcp_store     rendezvous store messages (make_seeds)
# Usage: tests/fuzz/make_corpus.sh DLTRAIN MAKE_SEEDS OUT
#   DLTRAIN is a built dltrain (e.g. build/dltrain), MAKE_SEEDS the fuzz build's fuzz_make_seeds.
# Takes about a minute on 2 cores; nothing large is written (the models are a few KiB).
set -euo pipefail
[[ $# -eq 3 ]] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
dltrain=$(realpath "$1") seeds=$(realpath "$2") out=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}  # when DLTRAIN is a sanitizer build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
for t in fuzz_config fuzz_model_file fuzz_onnx_import fuzz_image_decode fuzz_report fuzz_tcp_store; do
  mkdir -p "$out/$t"
done

# Configs, as they are and with overrides.
cp "$src"/configs/*.yaml "$out/fuzz_config/"
printf '\n#--set\ntraining.MaxEpochs=2\nlayers.conv1.NumFilters=8\ndata.train=x\n' |
  cat "$src/configs/shapes.yaml" - > "$out/fuzz_config/shapes-set.yaml"
printf '\n#--set\ntraining.InitialLearnRate=[1, 2]\nlayers.fc.OutputSize=3\n' |
  cat "$src/configs/digits.yaml" - > "$out/fuzz_config/digits-set.yaml"
printf '\n#--set\nlayers.segnetLayers.EncoderDepth=2\ndata.LabelIDs=[0, 1, 2, 3, 255]\n' |
  cat "$src/configs/shapes-seg.yaml" - > "$out/fuzz_config/shapes-seg-set.yaml"

# A tiny classifier and a tiny segmentation network, trained one epoch on generated data.
cat > "$work/tiny.yaml" <<'YAML'
layers:
  - {type: imageInput, Name: input, InputSize: [8, 8, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data: {train: data/train, validation: data/test}
training: {Solver: sgdm, MaxEpochs: 1, MiniBatchSize: 4, ExecutionEnvironment: cpu, Verbose: false}
YAML
cat > "$work/tiny-seg.yaml" <<'YAML'
layers:
  segnetLayers: {ImageSize: [16, 16, 3], NumClasses: 3, EncoderDepth: 1, NumConvolutionLayers: 1, NumOutputChannels: [4]}
data:
  train: {images: seg/images, labels: seg/labels}
  ClassNames: [background, circle, square]
  LabelIDs: [0, 1, 2]
training: {Solver: adam, MaxEpochs: 1, MiniBatchSize: 4, ExecutionEnvironment: cpu, Verbose: false}
YAML
cp "$work/tiny.yaml" "$work/tiny-seg.yaml" "$out/fuzz_config/"
"$dltrain" make-dataset shapes "$work/data" --classes 2 --per-class 6 --size 8x8 --seed 1 > /dev/null
"$dltrain" train "$work/tiny.yaml" --quiet --output-dir "$work/run" \
  --set data.train="$work/data/train" --set data.validation="$work/data/test" > /dev/null
"$dltrain" make-dataset shapes-seg "$work/seg" --classes 2 --count 8 --size 16x16 --seed 1 > /dev/null
"$dltrain" train "$work/tiny-seg.yaml" --quiet --output-dir "$work/segrun" \
  --set data.train.images="$work/seg/train/images" --set data.train.labels="$work/seg/train/labels" > /dev/null
for run in run segrun; do
  cp "$work/$run/model.bin" "$out/fuzz_model_file/$run.bin"
  "$dltrain" export "$work/$run/model.bin" --output "$out/fuzz_onnx_import/$run.onnx" > /dev/null
  cp "$work/$run/summary.json" "$out/fuzz_report/$run-summary.json"
  cp "$work/$run/config.yaml" "$out/fuzz_config/$run-resolved.yaml"
done
printf '{"imported_from": "onnx"}' > "$out/fuzz_report/metadata.json"
printf '{"status":"failed","validation_accuracy":null,"memory_bytes":1e308,"nested":{"a":[1,2,{"b":"\\u00e9"}]}}' \
  > "$out/fuzz_report/odd.json"

# Images in every format, label images, store messages.
"$seeds" "$out"
# Generated label images (values 0..2 and 255 edges) as integer-LabelID label inputs (mode 3).
n=0
for f in "$work"/seg/train/labels/*; do
  { printf '\003'; cat "$f"; } > "$out/fuzz_image_decode/3-shapes-seg-$n"
  n=$((n + 1))
  [[ $n -lt 3 ]] || break
done
for t in "$out"/*/; do echo "$(basename "$t"): $(ls "$t" | wc -l) files, $(du -sk "$t" | cut -f1) KiB"; done

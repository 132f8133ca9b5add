#!/usr/bin/env bash
# A segmentation network through ONNX and back: configs/shapes-seg.yaml (SegNet: max pooling
# with indices, unpooling) trained briefly, `dltrain export` (output (N, K, H, W), the softmax per
# pixel), `dltrain import` of that file (softmax + pixelClassification, the class names from the
# file), and `dltrain segment` of both on the same labelled images: the same predictions, so the
# same metrics. Then the imported network fine-tunes from a config (base: the import, its
# output layer replaced) and keeps what it learnt: its validation mean IoU stays within 0.05 of
# the original's. Then base: Replace on an imported LR-ASPP and its run's resolved config; last,
# an imported SegFormer fine-tuned.
source "$(dirname "$0")/common.sh" "$@"
skip_without_onnx
data="$TMP/data"
"$DLTRAIN" make-dataset shapes-seg "$data" --classes 4 --count 600 --seed 3 >/dev/null 2>&1
classes="  ClassNames: [background, circle, square, triangle, cross]
  LabelIDs: [0, 1, 2, 3, 4]"  # make-dataset's, for the configs below
sets=(--set "data.train.images=$data/train/images" --set "data.train.labels=$data/train/labels"
      --set "data.validation.images=$data/test/images" --set "data.validation.labels=$data/test/labels")
"$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/run" "${sets[@]}" \
  --set training.Seed=1 --set training.MaxEpochs=4 > "$TMP/train.out" 2>&1 || fail "training: $(tail -3 "$TMP/train.out")"
miou=$(json_number "$TMP/run/summary.json" validation_mean_iou)
echo "trained: validation mean IoU $miou"

"$DLTRAIN" export "$TMP/run/model.bin" --output "$TMP/seg.onnx" >/dev/null || fail "export"
"$DLTRAIN" import "$TMP/seg.onnx" --output "$TMP/back.bin" >/dev/null || fail "import of the export"
"$DLTRAIN" info "$TMP/back.bin" > "$TMP/info.txt"
grep -q "pixelLabels  *pixelClassification  *32x32x5" "$TMP/info.txt" || fail "import: $(tail -12 "$TMP/info.txt")"
for m in run/model back; do
  "$DLTRAIN" segment "$TMP/$m.bin" "$data/test/images" --labels "$data/test/labels" --output "$TMP/seg-${m%%/*}" \
    --json > "$TMP/${m%%/*}.json" || fail "segment $m.bin"
done
/usr/bin/python3 - "$TMP/seg-run/metrics.json" "$TMP/seg-back/metrics.json" <<'PYEOF' || fail "metrics differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["DataSetMetrics"] == b["DataSetMetrics"], (a["DataSetMetrics"], b["DataSetMetrics"])
assert a["ClassMetrics"] == b["ClassMetrics"], "per-class metrics differ"
print("same metrics after export and import:", a["DataSetMetrics"])
PYEOF
grep -q '"triangle"' "$TMP/back.json" || fail "the class names did not travel: $(head -c 400 "$TMP/back.json")"
# The label images themselves are the same.
for f in "$TMP"/seg-run/*.png; do
  cmp -s "$f" "$TMP/seg-back/$(basename "$f")" || fail "$(basename "$f") differs after export and import"
done

# Fine-tuning the import: its softmax and output layer replaced by new ones.
cat > "$TMP/finetune.yaml" <<EOF
base: {Model: $TMP/back.bin, RemoveLast: 2}
layers:
  - {type: softmax, Name: softmax_new}
  - {type: pixelClassification, Name: labels}
data:
  train: {images: $data/train/images, labels: $data/train/labels}
  validation: {images: $data/test/images, labels: $data/test/labels}
$classes
training: {Solver: adam, InitialLearnRate: 0.0005, MaxEpochs: 1, MiniBatchSize: 32, Seed: 1}
EOF
"$DLTRAIN" train "$TMP/finetune.yaml" --quiet --output-dir "$TMP/tuned" > "$TMP/tune.out" 2>&1 \
  || fail "fine-tuning the import: $(tail -3 "$TMP/tune.out")"
tuned=$(json_number "$TMP/tuned/summary.json" validation_mean_iou)
echo "fine-tuned import: validation mean IoU $tuned"
at_least "$tuned" "$(awk -v m="$miou" 'BEGIN { print m - 0.05 }')" || fail "fine-tuned mean IoU $tuned < $miou - 0.05"

# base: Replace on an imported LR-ASPP (the fixture tests/data/onnx_zoo/lraspp_seg-torchscript.onnx:
# 3 classes at 32x32): its two classifier convolutions, which sit before the addition, the resize,
# the softmax and the output, replaced for the data's 5 classes, the other layers in place; the
# run's resolved config.yaml trains again to the same layers.
"$DLTRAIN" import "$SRC/tests/data/onnx_zoo/lraspp_seg-torchscript.onnx" --output "$TMP/lraspp.bin" >/dev/null \
  || fail "import of the LR-ASPP fixture"
"$DLTRAIN" info "$TMP/lraspp.bin" > "$TMP/lraspp.txt"
low=$(awk '$2 ~ /low_classifier/ { print $2 }' "$TMP/lraspp.txt")
high=$(awk '$2 ~ /high_classifier/ { print $2 }' "$TMP/lraspp.txt")
[[ -n $low && -n $high ]] || fail "no classifier convolutions in: $(tail -15 "$TMP/lraspp.txt")"
cat > "$TMP/replace.yaml" <<EOF
base: {Model: $TMP/lraspp.bin, Replace: [$low, $high]}
layers:
  - {type: convolution2d, Name: $low, FilterSize: 1, NumFilters: 5}
  - {type: convolution2d, Name: $high, FilterSize: 1, NumFilters: 5}
data:
  train: {images: $data/train/images, labels: $data/train/labels}
$classes
training: {Solver: adam, InitialLearnRate: 0.001, MaxEpochs: 1, MiniBatchSize: 32, Seed: 1}
EOF
"$DLTRAIN" train "$TMP/replace.yaml" --quiet --output-dir "$TMP/replaced" > "$TMP/replace.out" 2>&1 \
  || fail "training with Replace: $(tail -3 "$TMP/replace.out")"
"$DLTRAIN" info "$TMP/replaced/model.bin" > "$TMP/replaced.txt"
grep -q "pixelLabels  *pixelClassification  *32x32x5" "$TMP/replaced.txt" || fail "not 5 classes: $(tail -12 "$TMP/replaced.txt")"
# The same layers in the same places (names and types), the classifiers 5 wide.
diff <(awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3 }' "$TMP/lraspp.txt") \
     <(awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3 }' "$TMP/replaced.txt") > /dev/null || fail "Replace moved layers"
grep -q "$low  *convolution2d  *8x8x5 " "$TMP/replaced.txt" || fail "$low: $(grep "$low" "$TMP/replaced.txt")"
grep -q "Replace: \[$low, $high\]" "$TMP/replaced/config.yaml" || fail "resolved config: $(grep -A4 '^base' "$TMP/replaced/config.yaml")"
"$DLTRAIN" train "$TMP/replaced/config.yaml" --quiet --output-dir "$TMP/again" > "$TMP/again.out" 2>&1 \
  || fail "the resolved config does not train: $(tail -3 "$TMP/again.out")"
"$DLTRAIN" info "$TMP/again/model.bin" | diff - "$TMP/replaced.txt" > /dev/null || fail "the resolved config built another network"

# An imported SegFormer (the fixture segformer_seg-torchscript.onnx: PVT v2's attention on images,
# the all-MLP decoder; random weights, 3 classes) fine-tuned from its classifier replaced for the
# data's 5 classes: it learns the shapes. A mean IoU over 0.2 = 1/5 is more than any prediction of
# one class everywhere can reach (the other four classes' IoU 0).
"$DLTRAIN" import "$SRC/tests/data/onnx_zoo/segformer_seg-torchscript.onnx" --output "$TMP/segformer.bin" >/dev/null \
  || fail "import of the SegFormer fixture"
cls=$("$DLTRAIN" info "$TMP/segformer.bin" | awk '$2 ~ /classifier_Conv/ { print $2 }')
[[ -n $cls ]] || fail "no classifier convolution in the imported SegFormer"
cat > "$TMP/segformer.yaml" <<EOF
base: {Model: $TMP/segformer.bin, Replace: [$cls]}
layers:
  - {type: convolution2d, Name: $cls, FilterSize: 1, NumFilters: 5}
data:
  train: {images: $data/train/images, labels: $data/train/labels}
  validation: {images: $data/test/images, labels: $data/test/labels}
$classes
training: {Solver: adam, InitialLearnRate: 0.003, MaxEpochs: 4, MiniBatchSize: 32, Seed: 1}
EOF
"$DLTRAIN" train "$TMP/segformer.yaml" --quiet --output-dir "$TMP/segformer" > "$TMP/segformer.out" 2>&1 \
  || fail "fine-tuning the imported SegFormer: $(tail -3 "$TMP/segformer.out")"
sf=$(json_number "$TMP/segformer/summary.json" validation_mean_iou)
echo "fine-tuned SegFormer import: validation mean IoU $sf"
at_least "$sf" 0.201 || fail "the fine-tuned SegFormer's mean IoU $sf is not over 0.2"
echo PASS

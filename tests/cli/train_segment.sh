#!/usr/bin/env bash
# Segmentation end to end: make-dataset shapes-seg, train configs/shapes-seg.yaml with
# median-frequency class weights to a mean IoU bar, the outputs (validation pixel accuracy and
# mean IoU in summary.json, the weights as numbers in config.yaml, LabelIDs in the model),
# dltrain segment on the validation pairs agreeing with the run's validation, and bad pixel-label
# data: one line, its exit code, no model or summary left behind.
source "$(dirname "$0")/common.sh" "$@"
data="$TMP/data"
"$DLTRAIN" make-dataset shapes-seg "$data" --classes 4 --count 1000 --seed 1 >/dev/null 2>&1
sets=(--set "data.train.images=$data/train/images" --set "data.train.labels=$data/train/labels"
      --set "data.validation.images=$data/test/images" --set "data.validation.labels=$data/test/labels")
run="$TMP/run"
"$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$run" "${sets[@]}" \
  --set training.Seed=2 --set training.MaxEpochs=8 --set training.LearnRateDropPeriod=5 \
  --set layers.pixelLabels.ClassWeights=median-frequency > "$TMP/train.out" 2> "$TMP/train.err"

for f in model.bin summary.json log.csv config.yaml progress.png; do
  [[ -s "$run/$f" ]] || fail "missing $run/$f"
done
miou=$(json_number "$run/summary.json" validation_mean_iou)
acc=$(json_number "$run/summary.json" validation_accuracy)
echo "validation mean IoU $miou, pixel accuracy $acc%"
at_least "$miou" 0.6 || fail "validation mean IoU $miou < 0.6"
at_least "$acc" 85 || fail "validation pixel accuracy $acc% < 85%"
grep -q "mean IoU" "$TMP/train.out" || fail "the final line does not report mean IoU: $(cat "$TMP/train.out")"
grep -q "countEachLabel: 800 training label images" "$TMP/train.err" || fail "no countEachLabel line: $(cat "$TMP/train.err")"
grep -q "pixelClassification, Name: pixelLabels, ClassWeights: \[[0-9.]*, " "$run/config.yaml" \
  || fail "config.yaml lacks the median-frequency numbers: $(grep pixelClassification "$run/config.yaml")"

# dltrain segment on the same pairs at their own size (32x32 = InputSize): the same pixels
# as the run's last validation, so the same pixel accuracy and mean IoU.
"$DLTRAIN" segment "$run/model.bin" "$data/test/images" --labels "$data/test/labels" --output "$TMP/seg" \
  > "$TMP/seg.txt" 2>&1
seg_miou=$(json_number "$TMP/seg/metrics.json" MeanIoU)
seg_acc=$(json_number "$TMP/seg/metrics.json" GlobalAccuracy)
awk -v a="$seg_miou" -v b="$miou" 'BEGIN { d = a - b; exit !(d < 1e-6 && d > -1e-6) }' \
  || fail "segment MeanIoU $seg_miou != the run's validation mean IoU $miou"
awk -v a="$seg_acc" -v b="$acc" 'BEGIN { d = 100 * a - b; exit !(d < 1e-4 && d > -1e-4) }' \
  || fail "segment GlobalAccuracy $seg_acc != the run's validation pixel accuracy $acc%"
[[ $(ls "$TMP/seg" | grep -c '_overlay.png$') -eq 200 ]] || fail "expected 200 overlays in $TMP/seg"

expect_error "classify on a segmentation model" 2 "use dltrain segment" -- \
  "$DLTRAIN" classify "$run/model.bin" "$data/test/images"

# Bad pixel-label data: one line, exit 1 (data) or 2 (config), and no model or summary.
bad="$TMP/bad"
mkdir -p "$bad"
cp -r "$data/train" "$bad/train"
# (make-dataset numbers the pairs from 00000; no `ls | head`, whose SIGPIPE fails under pipefail)
small="$bad/train/labels/00000.png"
"$DLTRAIN" make-dataset shapes-seg "$TMP/other" --size 48x48 --count 2 --seed 1 >/dev/null 2>&1
cp "$TMP/other/train/labels/00000.png" "$small"
badsets=(--set "data.train.images=$bad/train/images" --set "data.train.labels=$bad/train/labels"
         --set "data.validation.images=$data/test/images" --set "data.validation.labels=$data/test/labels"
         --set training.MaxEpochs=1)
expect_error "label size differs from its image" 1 "48x48" -- \
  "$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/out1" "${badsets[@]}"
[[ ! -e "$TMP/out1/model.bin" && ! -e "$TMP/out1/summary.json" ]] || fail "outputs left after a bad label image"
cp "$data/train/labels/$(basename "$small")" "$small"
rm "$bad/train/labels/00799.png"
expect_error "missing label image" 1 "no label image" -- \
  "$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/out2" "${badsets[@]}"
[[ ! -e "$TMP/out2/model.bin" && ! -e "$TMP/out2/summary.json" ]] || fail "outputs left after a missing label"
expect_error "more classes than LabelIDs" 2 "shapes-seg.yaml:.*6 classes but LabelIDs has 5" -- \
  "$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/out3" "${sets[@]}" \
  --set "data.ClassNames=[a, b, c, d, e, f]"
expect_error "RGB LabelIDs for grey label images" 1 "greyscale but LabelIDs are RGB" -- \
  "$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/out4" "${sets[@]}" \
  --set "data.LabelIDs=[[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4]]"
make_shapes "$TMP/classes" 20
expect_error "class folders for a per-pixel network" 2 "per-pixel output but data.train is a folder" -- \
  "$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/out5" \
  --set "data.train=$TMP/classes/train" --set "data.validation=" --set "data.ClassNames=" --set "data.LabelIDs="
echo "train_segment: ok"

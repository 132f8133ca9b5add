#!/usr/bin/env bash
# Trainer options end to end on a tiny network: a diverging run stops with the iteration
# named and exit 1; ValidationPatience stops early; OutputNetwork best-validation-loss;
# OnBadImage skip counts the skipped file; ValidationSplit holds out a fraction per label.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 60 --size 16x16 --seed 2 > /dev/null
cat > "$TMP/tiny.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 8, Padding: same}
  - {type: relu}
  - {type: maxPooling2d, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax}
  - {type: classification}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  Solver: sgdm
  InitialLearnRate: 0.01
  MaxEpochs: 6
  MiniBatchSize: 16
  ValidationFrequency: 2
  Verbose: false
YAML
train() { "$DLTRAIN" train "$TMP/tiny.yaml" --quiet "$@"; }

# Divergence: a huge learning rate turns the loss non-finite.
rc=0
err=$(train --output-dir "$TMP/div" --set training.InitialLearnRate=1e12 2>&1 >/dev/null) || rc=$?
[[ $rc -eq 1 ]] || fail "diverging run: exit code $rc, expected 1 ($err)"
echo "$err" | grep -q "training diverged: the mini-batch loss is .* at iteration [0-9]" || fail "divergence message: $err"
grep -q '"status":"diverged"' "$TMP/div/summary.json" || fail "diverged run's summary status"
[[ -f "$TMP/div/model.bin" ]] && fail "a diverged run must not write model.bin"
echo "ok: divergence -> $(echo "$err" | grep diverged)"

# ValidationPatience 1 with every layer frozen (learn-rate factors 0): the validation loss
# never improves on the first one, so training stops at the second validation.
frozen=()
for l in conv1 fc; do frozen+=(--set layers.$l.WeightLearnRateFactor=0 --set layers.$l.BiasLearnRateFactor=0); done
train --output-dir "$TMP/pat" --set training.ValidationPatience=1 --set training.ValidationFrequency=3 "${frozen[@]}" > /dev/null
grep -q '"status":"stopped-early"' "$TMP/pat/summary.json" || fail "ValidationPatience: $(cat "$TMP/pat/summary.json")"
iters=$(json_number "$TMP/pat/summary.json" iterations)
[[ $iters -eq 3 ]] || fail "ValidationPatience: stopped after $iters iterations, expected 3"
echo "ok: ValidationPatience stopped after $iters iterations"

# OutputNetwork best-validation-loss: the saved model's loss equals the best one in the log.
train --output-dir "$TMP/best" --set training.OutputNetwork=best-validation-loss --set training.InitialLearnRate=0.002 > /dev/null
best=$(awk -F, 'NR > 1 && $7 != "" { if (min == "" || $7 < min) min = $7 } END { print min }' "$TMP/best/log.csv")
final=$(json_number "$TMP/best/summary.json" validation_loss)
awk -v a="$best" -v b="$final" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-4 * (1 + a)) }' \
  || fail "best-validation-loss: summary loss $final, best logged $best"
echo "ok: OutputNetwork best-validation-loss ($final)"

# OnBadImage skip: a corrupt file is skipped and counted.
echo "garbage" > "$TMP/data/train/circle/zz_bad.png"
train --output-dir "$TMP/skip" --set data.OnBadImage=skip --set training.MaxEpochs=1 > /dev/null
[[ $(json_number "$TMP/skip/summary.json" skipped_images) -eq 1 ]] || fail "skipped_images: $(cat "$TMP/skip/summary.json")"
rm "$TMP/data/train/circle/zz_bad.png"
echo "ok: OnBadImage skip counted 1"

# ValidationSplit: 25% of each label held out, no validation folder.
train --output-dir "$TMP/split" --set data.validation= --set data.ValidationSplit=0.25 --set training.MaxEpochs=1 > /dev/null
n_train=$(json_number "$TMP/split/summary.json" train_images)
n_val=$(json_number "$TMP/split/summary.json" validation_images)
total=$(find "$TMP/data/train" -name '*.png' | wc -l)
[[ $((n_train + n_val)) -eq $total && $n_val -gt 0 ]] || fail "ValidationSplit: $n_train + $n_val != $total"
awk -v v="$n_val" -v t="$total" 'BEGIN { exit !(v / t > 0.2 && v / t < 0.3) }' || fail "ValidationSplit fraction $n_val/$total"
echo "train_options: ok"

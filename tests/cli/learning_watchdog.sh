#!/usr/bin/env bash
# The learning watchdog end to end: a network that cannot learn (every weight zero, so the
# softmax stays uniform: loss ln 4 for 4 classes) completes with exit 0, but prints one
# warning line naming the causes after the first epoch, and records it in summary.json's
# "warnings"; the same network with its default initializer learns and gets no warning.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 4 --per-class 100 --size 16x16 --seed 3 > /dev/null
net() {  # net INITIALIZER-OPTION [DATA]
  cat <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 8, Padding: same$1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 4$1}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data: {${2:-train: $TMP/data/train, validation: $TMP/data/test}}
training: {Solver: sgdm, InitialLearnRate: 0.01, MaxEpochs: 4, MiniBatchSize: 16, Shuffle: every-epoch, ValidationFrequency: 25, Seed: 2}
YAML
}
net ", WeightsInitializer: zeros" "train: $TMP/data/train" > "$TMP/zeros.yaml"  # the loss symptom
net ", WeightsInitializer: zeros" > "$TMP/zeros_val.yaml"                        # the accuracy one
net "" > "$TMP/glorot.yaml"
"$DLTRAIN" train "$TMP/zeros.yaml" --quiet --output-dir "$TMP/zeros" > "$TMP/zeros.out" 2> "$TMP/zeros.err" \
  || fail "a run that does not learn must still complete: $(cat "$TMP/zeros.err")"
grep -q '"status":"completed"' "$TMP/zeros/summary.json" || fail "status: $(cat "$TMP/zeros/summary.json")"
want="the network is not learning: the mini-batch loss has stayed at ln(4) = 1.3863 (chance for 4 classes; mean "
[[ $(grep -c "not learning" "$TMP/zeros.err") -eq 1 ]] || fail "expected one warning line: $(cat "$TMP/zeros.err")"
grep "not learning" "$TMP/zeros.err" | grep "^warning: $want" | grep -q "after epoch 1. Likely causes: the weights initializer (zeros;" \
  || fail "warning text: $(grep "not learning" "$TMP/zeros.err")"
grep -q "\"warnings\":\[\"$want" "$TMP/zeros/summary.json" || fail "summary.json lacks the warning: $(cat "$TMP/zeros/summary.json")"
echo "ok: $(grep -o "not learning: the mini-batch loss.*after epoch 1" "$TMP/zeros.err")"
# With validation every 25 iterations (one epoch), checks 50 and 75 are the two after epoch 1.
"$DLTRAIN" train "$TMP/zeros_val.yaml" --quiet --output-dir "$TMP/zeros_val" > /dev/null 2> "$TMP/zeros_val.err" \
  || fail "zeros with validation: $(cat "$TMP/zeros_val.err")"
grep -q "^warning: the network is not learning: the validation accuracy is 25.00% (chance for 4 classes: 25.00%) at 2 checks in a row after epoch 1" \
  "$TMP/zeros_val.err" || fail "validation symptom: $(cat "$TMP/zeros_val.err")"
[[ $(grep -c "not learning" "$TMP/zeros_val.err") -eq 1 ]] || fail "more than one warning: $(cat "$TMP/zeros_val.err")"
echo "ok: validation accuracy at chance warned once"
"$DLTRAIN" train "$TMP/glorot.yaml" --quiet --set training.MaxEpochs=15 --output-dir "$TMP/glorot" > /dev/null 2> "$TMP/glorot.err" || fail "glorot run: $(cat "$TMP/glorot.err")"
grep -q "not learning" "$TMP/glorot.err" && fail "a learning run was warned: $(cat "$TMP/glorot.err")"
grep -q '"warnings":\[\]' "$TMP/glorot/summary.json" || fail "learning run's warnings: $(cat "$TMP/glorot/summary.json")"
acc=$(json_number "$TMP/glorot/summary.json" validation_accuracy)
at_least "$acc" 50 || fail "the learning run reached only $acc% (chance: 25%)"  # 60% here; twice chance required
echo "ok: no warning for the run that learns ($acc%)"
echo "learning watchdog: ok"

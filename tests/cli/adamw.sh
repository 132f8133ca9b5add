#!/usr/bin/env bash
# Solver: adamw (dltrain's AdamW) end to end: config.yaml writes WeightDecay and adamw's
# L2Regularization 0 and trains the same weights again; WeightDecay changes the weights; a
# --resume from a mid-run checkpoint (Adam's moments and the step count) ends bit-identical to
# the uninterrupted run; WeightDecay with sgdm and a negative WeightDecay exit 2 with one line.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/d" --classes 4 --per-class 16 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" << EOF
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: none}
  - {type: convolution2d, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu}
  - {type: fullyConnected, OutputSize: 4}
  - {type: softmax}
  - {type: classification}
data:
  train: $TMP/d/train
training:
  Solver: adamw
  WeightDecay: 0.05
  InitialLearnRate: 0.003
  LearnRateSchedule: cosine
  MaxEpochs: 3
  MiniBatchSize: 16
  Seed: 5
  ExecutionEnvironment: cpu
  Verbose: false
  Plots: none
  CheckpointPath: $TMP/ck
  CheckpointFrequency: 2
  CheckpointFrequencyUnit: iteration
EOF
train() { "$DLTRAIN" train "$TMP/net.yaml" --threads 2 "$@"; }

train --output-dir "$TMP/full" > /dev/null 2> "$TMP/full.err" || fail "adamw run failed: $(cat "$TMP/full.err")"
grep -qx "  Solver: adamw" "$TMP/full/config.yaml" || fail "config.yaml: $(cat "$TMP/full/config.yaml")"
grep -qx "  WeightDecay: 0.05" "$TMP/full/config.yaml" || fail "config.yaml has no WeightDecay 0.05"
grep -qx "  L2Regularization: 0" "$TMP/full/config.yaml" || fail "config.yaml: adamw's L2Regularization is not 0"
if grep -q "Momentum:" "$TMP/full/config.yaml"; then fail "config.yaml writes sgdm's Momentum"; fi
echo "ok: config.yaml: $(grep -E 'Solver|WeightDecay|L2Regularization' "$TMP/full/config.yaml" | tr -s ' ' | tr '\n' ';')"

# The resolved config trains the same weights again.
"$DLTRAIN" train "$TMP/full/config.yaml" --threads 2 --output-dir "$TMP/again" > /dev/null 2>&1 \
  || fail "config.yaml does not train"
cmp -s "$TMP/full/model.bin" "$TMP/again/model.bin" || fail "config.yaml trained other weights"

# WeightDecay acts: without it the weights differ.
train --set training.WeightDecay=0 --set training.CheckpointPath= --output-dir "$TMP/nowd" > /dev/null 2>&1 \
  || fail "WeightDecay 0 failed"
if cmp -s "$TMP/full/model.bin" "$TMP/nowd/model.bin"; then fail "WeightDecay 0 gave the same weights"; fi
echo "ok: WeightDecay 0 trains other weights"

# Resume from checkpoint 4 (mid-run): the same final weights, bit for bit.
[[ -f "$TMP/ck/checkpoint-iteration-4.bin" ]] || fail "no checkpoint 4: $(ls "$TMP/ck")"
train --resume "$TMP/ck/checkpoint-iteration-4.bin" --output-dir "$TMP/resumed" > /dev/null 2> "$TMP/resumed.err" \
  || fail "resume failed: $(cat "$TMP/resumed.err")"
cmp "$TMP/full/model.bin" "$TMP/resumed/model.bin" || fail "resumed adamw weights differ from the uninterrupted run"
echo "ok: resumed from iteration 4: identical model.bin"

expect_error "WeightDecay with sgdm" 2 \
  "training.WeightDecay is read by Solver adamw only, but Solver is sgdm (remove WeightDecay, or change Solver)" \
  -- train --set training.Solver=sgdm --output-dir "$TMP/s"
[[ ! -e "$TMP/s" ]] || fail "a refused config wrote $TMP/s"
expect_error "negative WeightDecay" 2 "training.WeightDecay must be a number >= 0, got '-0.1'" \
  -- train --set training.WeightDecay=-0.1 --output-dir "$TMP/n"
echo "adamw: ok"

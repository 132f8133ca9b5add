#!/usr/bin/env bash
# Training options the run would not use, end to end: an option of another solver and
# OutputNetwork best-validation without validation data exit 2 with one line before anything is
# written; a validation option without validation data trains with one warning line; a --resume
# of a checkpoint at MaxEpochs writes the outputs, one past it exits 2 with the fix; images that
# do not have InputSize's size or channels get one info line per datastore saying what is done.
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
  Solver: adam
  MaxEpochs: 1
  MiniBatchSize: 16
  ExecutionEnvironment: cpu
  Verbose: false
  Plots: none
EOF
train() { "$DLTRAIN" train "$TMP/net.yaml" --threads 2 "$@"; }
n_train=$(find "$TMP/d/train" -type f | wc -l)
per_epoch=$((n_train / 16))

# Refused before any work: nothing is written.
expect_error "Momentum with adam" 2 \
  "error: --set training.Momentum=0.9: training.Momentum is read by Solver sgdm only, but Solver is adam (remove Momentum, or change Solver)" \
  -- train --set training.Momentum=0.9 --output-dir "$TMP/m"
[[ ! -e "$TMP/m" ]] || fail "a refused config wrote $TMP/m"
expect_error "GradientDecayFactor with rmsprop" 2 \
  "training.GradientDecayFactor is read by Solver adam and adamw only, but Solver is rmsprop" \
  -- train --set training.Solver=rmsprop --set training.GradientDecayFactor=0.8 --output-dir "$TMP/g"
expect_error "best-validation without validation data" 2 \
  "training.OutputNetwork is best-validation but there is no validation data (give data.validation or data.ValidationSplit, or write OutputNetwork: last-iteration)" \
  -- train --set training.OutputNetwork=best-validation --output-dir "$TMP/b"
[[ ! -e "$TMP/b" ]] || fail "a refused config wrote $TMP/b"

# Warned: trains, one warning line per option. InputSize matches: no fit line.
train --set training.ValidationPatience=2 --output-dir "$TMP/w" > /dev/null 2> "$TMP/w.err" \
  || fail "ValidationPatience without validation data failed: $(cat "$TMP/w.err")"
grep -qx "warning: --set training.ValidationPatience=2: training.ValidationPatience has no effect: there is no validation data (give data.validation or data.ValidationSplit)" "$TMP/w.err" \
  || fail "no ValidationPatience warning: $(cat "$TMP/w.err")"
[[ $(grep -c "^warning" "$TMP/w.err") -eq 1 ]] || fail "expected one warning: $(cat "$TMP/w.err")"
if grep -q "images are" "$TMP/w.err"; then fail "a fit line for matching images: $(cat "$TMP/w.err")"; fi
echo "ok: $(grep '^warning' "$TMP/w.err")"

# InputSize that does not match: one line per datastore, whatever the number of images.
fit() {  # fit NAME EXPECTED-LINE... -- train arguments
  local name=$1; shift
  local want=()
  while [[ $1 != -- ]]; do want+=("$1"); shift; done
  shift
  train --output-dir "$TMP/$name" "$@" > /dev/null 2> "$TMP/$name.err" || fail "$name: $(cat "$TMP/$name.err")"
  for line in "${want[@]}"; do
    [[ $(grep -cxF "info: $line" "$TMP/$name.err") -eq 1 ]] || fail "$name: not once: '$line' in: $(cat "$TMP/$name.err")"
  done
  [[ $(grep -c "images are\|images have" "$TMP/$name.err") -eq ${#want[@]} ]] || fail "$name: $(cat "$TMP/$name.err")"
  echo "ok: $name: ${want[*]}"
}
fit resized "training images are 16x16x3, InputSize is 32x32x3: resized (data.OutputSizeMode: resize; InputSize [16 16 3] keeps the images' size)" \
  "validation images are 16x16x3, InputSize is 32x32x3: resized (data.OutputSizeMode: resize; InputSize [16 16 3] keeps the images' size)" \
  -- --set "layers.input.InputSize=[32,32,3]" --set data.validation="$TMP/d/test"
fit grey "training images are 16x16x3, InputSize is 16x16x1: turned grey (rgb2gray) (InputSize's third value sets the channels)" \
  -- --set "layers.input.InputSize=[16,16,1]"
fit cropped "training images are 16x16x3, InputSize is 12x12x3: cropped at random positions (data.OutputSizeMode: randcrop; InputSize [16 16 3] keeps the images' size)" \
  "validation images are 16x16x3, InputSize is 12x12x3: centre-cropped (data.OutputSizeMode: randcrop; InputSize [16 16 3] keeps the images' size)" \
  -- --set "layers.input.InputSize=[12,12,3]" --set data.OutputSizeMode=randcrop --set data.validation="$TMP/d/test"

# A checkpoint at MaxEpochs (a run killed after its last checkpoint): the resumed run trains
# nothing, says so once and writes the run's outputs, model.bin identical to the first run's.
train --set training.CheckpointPath="$TMP/ck" --output-dir "$TMP/first" > /dev/null 2>&1 || fail "checkpointed run failed"
[[ -f "$TMP/ck/latest.bin" ]] || fail "no checkpoint in $TMP/ck: $(ls "$TMP/ck")"
train --resume "$TMP/ck/latest.bin" --set training.CheckpointPath="$TMP/ck" --output-dir "$TMP/again" > /dev/null 2> "$TMP/again.err" \
  || fail "resume at MaxEpochs failed: $(cat "$TMP/again.err")"
line="info: --resume $TMP/ck/latest.bin: the checkpoint has finished all 1 epoch (iteration $per_epoch): nothing is left to train, the run's outputs are written from it (to train on, give --set training.MaxEpochs=2)"
[[ $(grep -cxF "$line" "$TMP/again.err") -eq 1 ]] || fail "resume at MaxEpochs: no '$line' in: $(cat "$TMP/again.err")"
cmp -s "$TMP/first/model.bin" "$TMP/again/model.bin" || fail "resume at MaxEpochs: model.bin differs from the first run's"
grep -q '"status":"completed"' "$TMP/again/summary.json" || fail "resume at MaxEpochs: $(cat "$TMP/again/summary.json")"
echo "ok: resume at MaxEpochs writes the outputs"
# The hint it names trains the second epoch on from the checkpoint.
train --resume "$TMP/ck/latest.bin" --set training.MaxEpochs=2 --set training.CheckpointPath="$TMP/ck2" \
  --output-dir "$TMP/more" > /dev/null 2> "$TMP/more.err" || fail "resume with MaxEpochs 2 failed: $(cat "$TMP/more.err")"
rows=$(($(wc -l < "$TMP/more/log.csv") - 1))
[[ $rows -eq $((2 * per_epoch)) ]] || fail "log.csv has $rows rows, expected $((2 * per_epoch))"
[[ $(tail -1 "$TMP/more/log.csv" | cut -d, -f1,2) == "2,$((2 * per_epoch))" ]] || fail "last row: $(tail -1 "$TMP/more/log.csv")"
# A checkpoint past MaxEpochs (2 epochs done, MaxEpochs 1): refused with its position and the fix.
expect_error "resume past MaxEpochs" 2 \
  "error: --resume $TMP/ck2/latest.bin: the checkpoint has finished 2 epochs (iteration $((2 * per_epoch))) and training.MaxEpochs is 1: nothing is left to train (MaxEpochs counts from the start: for 1 more epoch give --set training.MaxEpochs=3)" \
  -- train --resume "$TMP/ck2/latest.bin" --output-dir "$TMP/past"
echo "option_use: ok"

#!/usr/bin/env bash
# The segmentation twin (scripts/bench/pytorch_segment.py) trains from the config.yaml today's
# `dltrain train` writes (every option resolved, each augmentation key at its value), with each
# loss of its own (Tversky, Dice, focal): one epoch of a small SegNet on shapes-seg each side, the
# twin's predictions of every validation image, its JSON line naming the loss; options it does not
# implement (another solver) are one error line.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
$PY -c "import torch, yaml, PIL, numpy" 2>/dev/null || skip "/usr/bin/python3 lacks torch/yaml/PIL/numpy (apt-get install python3-torch python3-yaml python3-pil; scripts/setup.sh does)"
data="$TMP/data"
"$DLTRAIN" make-dataset shapes-seg "$data" --classes 4 --count 120 --seed 3 >/dev/null 2>&1
ln -s "$data/test" "$data/val"
sets=(--set "data.train.images=$data/train/images" --set "data.train.labels=$data/train/labels"
      --set "data.validation.images=$data/test/images" --set "data.validation.labels=$data/test/labels"
      --set training.Solver=sgdm --set training.MaxEpochs=1 --set training.MiniBatchSize=16)
for loss in tversky generalized-dice focal-crossentropy; do
  run="$TMP/run-$loss"
  "$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$run" "${sets[@]}" \
    --set "training.Loss=$loss" > "$TMP/train.out" 2>&1 || fail "dltrain train with $loss: $(tail -3 "$TMP/train.out")"
  $PY "$SRC/scripts/bench/pytorch_segment.py" "$run/config.yaml" --data "$data" --seed 1 --threads 1 \
    --predictions "$TMP/pred-$loss" > "$TMP/twin.json" 2> "$TMP/twin.err" \
    || fail "the twin failed on dltrain's config.yaml with $loss: $(tail -3 "$TMP/twin.err")"
  grep -q "\"loss\": \"$loss\"" "$TMP/twin.json" || fail "the twin's line does not name $loss: $(cat "$TMP/twin.json")"
  want=$(ls "$data/test/images" | wc -l)
  got=$(ls "$TMP/pred-$loss" | grep -c '\.png$')
  [[ $got -eq $want ]] || fail "$got predictions for $want validation images ($loss)"
  echo "$loss: dltrain and the twin trained one epoch; $got predictions"
done
sed 's/Solver: sgdm/Solver: adam/' "$TMP/run-tversky/config.yaml" > "$TMP/adam.yaml"
if $PY "$SRC/scripts/bench/pytorch_segment.py" "$TMP/adam.yaml" --data "$data" --predictions "$TMP/p" \
  > /dev/null 2> "$TMP/adam.err"; then
  fail "the twin trained a config whose Solver it does not implement"
fi
grep -q "Solver 'adam' not implemented here" "$TMP/adam.err" || fail "no solver error line: $(cat "$TMP/adam.err")"
echo "pytorch_segment_twin: ok"

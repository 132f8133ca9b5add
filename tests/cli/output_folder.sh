#!/usr/bin/env bash
# One run per output folder: a new run into a folder holding an earlier run's outputs refuses
# with one line naming the folder, what it found and --overwrite (exit 2), and leaves them as
# they were; with --overwrite the earlier outputs go first, TensorBoard events included (one
# event file, its steps exactly the new run's log.csv rows); --resume continues into the folder;
# a folder holding other files only is trained into. Data parallel (2 local workers): the
# launcher judges the folder once, so a first run is not refused by its own rank 0's files.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 30 --size 16x16 --seed 2 > /dev/null
cat > "$TMP/tiny.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3]}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax}
  - {type: classification}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  MaxEpochs: 3
  MiniBatchSize: 16
  ValidationFrequency: 2
  TensorBoard: true
  Verbose: false
YAML
train() { "$DLTRAIN" train "$TMP/tiny.yaml" --quiet --threads 1 "$@"; }
rows() { echo $(($(wc -l < "$1/log.csv") - 1)); }
events() { find "$1/tensorboard" -name 'events.out.tfevents.*' | wc -l; }
run="$TMP/run"

train --output-dir "$run" > /dev/null || fail "first run"
first_rows=$(rows "$run")
cp "$run/model.bin" "$TMP/first.bin"
[[ $(events "$run") -eq 1 ]] || fail "first run: $(events "$run") event files"

expect_error "a second run into the same folder" 2 \
  "$run: holds an earlier run's outputs (model.bin, log.csv, summary.json, config.yaml, progress.png, 1 TensorBoard event file in $run/tensorboard); .*--overwrite" \
  -- train --output-dir "$run" --set training.MaxEpochs=1
cmp -s "$run/model.bin" "$TMP/first.bin" || fail "the refused run changed model.bin"
[[ $(rows "$run") -eq $first_rows && $(events "$run") -eq 1 ]] || fail "the refused run changed log.csv or tensorboard/"

sleep 1  # the event file is named by the second it was made: the new one gets another name
train --output-dir "$run" --overwrite --set training.MaxEpochs=1 > /dev/null || fail "--overwrite run"
second_rows=$(rows "$run")
((second_rows > 0 && second_rows < first_rows)) || fail "--overwrite: log.csv has $second_rows rows (first run: $first_rows)"
[[ $(events "$run") -eq 1 ]] || fail "--overwrite: $(events "$run") event files, expected the new run's only"
python3 "$SRC/tests/cli/tfevents_check.py" "$run/tensorboard" "$run/log.csv" || fail "--overwrite: TensorBoard"
echo "ok: --overwrite: $second_rows iterations in log.csv and in the one event file (the first run had $first_rows)"

# --resume continues into the folder its run wrote.
train --output-dir "$TMP/ck-run" --set training.MaxEpochs=1 --set training.CheckpointPath="$TMP/ck" > /dev/null \
  || fail "checkpointed run"
train --output-dir "$TMP/ck-run" --set training.MaxEpochs=2 --set training.CheckpointPath="$TMP/ck" \
  --resume "$TMP/ck/latest.bin" > /dev/null || fail "--resume into its own folder was refused"
[[ $(rows "$TMP/ck-run") -eq $((2 * $(rows "$TMP/run"))) ]] || fail "--resume: log.csv has $(rows "$TMP/ck-run") rows"
echo "ok: --resume continues into its folder ($(rows "$TMP/ck-run") rows)"

# Other files (notes, a dataset) are no earlier run.
mkdir -p "$TMP/notes"
echo "my notes" > "$TMP/notes/README.txt"
train --output-dir "$TMP/notes" --set training.MaxEpochs=1 > /dev/null || fail "a folder with other files was refused"
[[ $(cat "$TMP/notes/README.txt") == "my notes" ]] || fail "README.txt changed"

# Two local workers: the first run completes, the second is refused before any worker starts.
par=(--set training.ExecutionEnvironment=parallel --set training.MaxEpochs=1)
train --output-dir "$TMP/par" "${par[@]}" > "$TMP/par.log" 2>&1 || fail "2 workers, first run: $(cat "$TMP/par.log")"
expect_error "2 workers, a second run" 2 "$TMP/par: holds an earlier run's outputs" -- train --output-dir "$TMP/par" "${par[@]}"
train --output-dir "$TMP/par" "${par[@]}" --overwrite > "$TMP/par.log" 2>&1 \
  || fail "2 workers, --overwrite: $(cat "$TMP/par.log")"
[[ $(events "$TMP/par") -eq 1 ]] || fail "2 workers, --overwrite: $(events "$TMP/par") event files"
echo "output_folder: ok"

#!/usr/bin/env bash
# LearnRateSchedule end to end: a warmup-then-cosine run's log.csv rates equal the formulas of
# docs/config.md at every iteration; a run resumed from a mid-run checkpoint continues the
# schedule with the same rates; a bad schedule property stops with one line naming it.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 40 --size 16x16 --seed 2 > /dev/null
cat > "$TMP/tiny.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax}
  - {type: classification}
data:
  train: $TMP/data/train
training:
  Solver: sgdm
  InitialLearnRate: 0.01
  MaxEpochs: 4
  MiniBatchSize: 8
  Verbose: false
  Seed: 5
  LearnRateSchedule:
    - {type: warmupLearnRate, InitialFactor: 0.2, NumSteps: 3}
    - {type: cosineLearnRate, FinalFactor: 0.1, Period: 4, PeriodGrowthFactor: 2, FrequencyUnit: iteration}
YAML
train() { "$DLTRAIN" train "$TMP/tiny.yaml" --quiet --threads 2 "$@"; }

# The rates of log.csv (column 8) against 0.01 x the factor of iteration i - 1, to 1e-5 relative
# (log.csv writes 6 significant digits).
check_rates() {
  awk -F, 'NR > 1 {
    k = $2 - 1
    if (k < 3) f = 0.2 + 0.8 * k / 3
    else {
      t = k - 3; T = 4                       # cycles of 4, 8, 16, ... iterations
      while (t >= T) { t -= T; T *= 2 }
      f = 0.1 + 0.9 * (1 + cos(3.141592653589793 * t / T)) / 2
    }
    want = 0.01 * f
    d = $8 - want; if (d < 0) d = -d
    if (d > 1e-5 * want) { printf "iteration %d: log.csv rate %s, formula %.8g\n", $2, $8, want; bad = 1 }
    n++
  } END { if (n < 12) { print "only " n " rows"; bad = 1 } exit bad }' "$1"
}

train --output-dir "$TMP/full" --set training.CheckpointPath="$TMP/ck" \
  --set training.CheckpointFrequency=5 --set training.CheckpointFrequencyUnit=iteration
check_rates "$TMP/full/log.csv" || fail "the warmup-then-cosine rates in log.csv differ from the formula"
grep -q "cosineLearnRate" "$TMP/full/config.yaml" || fail "config.yaml does not write the schedule back"

# Resume from iteration 5 (within the first cosine cycle): the same rates at every iteration.
[[ -f "$TMP/ck/checkpoint-iteration-5.bin" ]] || fail "no checkpoint at iteration 5: $(ls "$TMP/ck")"
train --output-dir "$TMP/resumed" --set training.CheckpointPath="$TMP/ck2" --resume "$TMP/ck/checkpoint-iteration-5.bin"
cmp <(cut -d, -f1,2,8 "$TMP/full/log.csv") <(cut -d, -f1,2,8 "$TMP/resumed/log.csv") \
  || fail "the resumed run's rates differ from the uninterrupted run's"

expect_error "a bad schedule property" 2 "training.LearnRateSchedule\[1\].Period must be a positive integer" \
  -- train --output-dir "$TMP/bad" --set \
  "training.LearnRateSchedule=[warmup, {type: cosineLearnRate, Period: 0}]"
echo "learn_rate_schedule: ok"

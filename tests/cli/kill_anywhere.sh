#!/usr/bin/env bash
# kill -9 anywhere: a small run that writes a checkpoint (two files of ~1 MB, fsync'ed) after
# every iteration is killed at N random moments spread over its duration (stratified: one in
# each N-th of the uninterrupted run's wall time, process start included; every other kill
# waits, from its moment, for a checkpoint write in progress, so that many land inside one,
# and the last one, from 75 % of the run on, for the write of model.bin).
# After each kill every *.bin under the checkpoint folder and the output folder must load
# (dltrain info) and temporary files must not carry a final name; the run is then resumed from
# latest.bin (or started again when none was written yet) and its
# model.bin must equal the uninterrupted run's, bit for bit.
#
# A kill must hit the running process: one whose moment comes after the run ended is drawn
# again earlier (up to 5 times); a point none of whose moments hit fails the test.
#
#   N: DLTRAIN_KILL_POINTS (CI: 4; the 20-point run for docs/reliability.md:
#      DLTRAIN_KILL_POINTS=20 ctest -R cli.kill_anywhere -V). The moments come from a fixed seed
#      (475192699, so every run of CI kills at the same fractions of the run);
#      DLTRAIN_KILL_SEED=N picks another, DLTRAIN_KILL_SEED=random a new one (printed).
source "$(dirname "$0")/common.sh" "$@"
points=${DLTRAIN_KILL_POINTS:-4}
seed=${DLTRAIN_KILL_SEED:-475192699}
[[ $seed == random ]] && seed=$((RANDOM * 32768 + RANDOM))
RANDOM=$seed
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 16 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 8, Padding: same}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: fullyConnected, Name: fc1, OutputSize: 64}
  - {type: relu, Name: relu2}
  - {type: fullyConnected, Name: fc2, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  Solver: sgdm
  InitialLearnRate: 0.01
  MaxEpochs: 16
  MiniBatchSize: 8
  Shuffle: every-epoch
  ValidationFrequency: 10
  Verbose: false
  Seed: 7
  ExecutionEnvironment: cpu
  CheckpointPath: $TMP/ck
  CheckpointFrequency: 1
  CheckpointFrequencyUnit: iteration
YAML
train() {  # train OUT [args...]
  local out=$1
  shift
  "$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 1 --output-dir "$TMP/$out" "$@" > "$TMP/$out.log" 2>&1
}
now() { date +%s%N; }

# The uninterrupted run, twice: both must give the same model.bin, and the shorter wall time
# spreads the moments (the first run also pays for cold caches). Every run uses the same
# CheckpointPath (it is part of the config stored in the model).
duration_ms=0
for run in full full2; do
  t=$(now)
  train $run || fail "uninterrupted run: $(cat "$TMP/$run.log")"
  ms=$((($(now) - t) / 1000000))
  ((duration_ms == 0 || ms < duration_ms)) && duration_ms=$ms
  rm -rf "$TMP/ck"
done
cmp -s "$TMP/full/model.bin" "$TMP/full2/model.bin" || fail "two uninterrupted runs gave different model.bin"
iterations=$(($(wc -l < "$TMP/full/log.csv") - 1))
echo "uninterrupted (twice, identical): ${duration_ms} ms, $iterations log rows; $points kills, seed $seed"

# every *.bin under the folders loads; temporary files (NAME.tmp-PID) never end in .bin
check_files() {
  local f n=0
  while IFS= read -r -d '' f; do
    "$DLTRAIN" info "$f" > /dev/null 2> "$TMP/info.err" || fail "kill $i: $f does not load: $(cat "$TMP/info.err")"
    n=$((n + 1))
  done < <(find "$TMP/ck" "$TMP/cut" -name '*.bin' -print0 2> /dev/null)
  loaded=$n
}

in_write=0 hits=0 retries=0
# kill_at MS PATTERN: starts the run, kills it MS ms later (after waiting, at most 5 s, for a
# file matching PATTERN when one is given); rc 137 when the kill hit the running process.
kill_at() {
  rm -rf "$TMP/ck" "$TMP/cut"
  "$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 1 --output-dir "$TMP/cut" > "$TMP/cut.log" 2>&1 &
  pid=$!  # dltrain itself, not a subshell
  sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }')"
  if [[ -n $2 ]]; then
    SECONDS=0
    while ((SECONDS < 5)) && kill -0 $pid 2> /dev/null; do
      compgen -G "$2" > /dev/null && break
    done
  fi
  rc=0
  kill -9 $pid 2> /dev/null || true
  wait $pid 2> /dev/null || rc=$?
}
for ((i = 0; i < points; i++)); do
  at_ms=$(((i * duration_ms + RANDOM % duration_ms) / points))
  # Every other kill waits until a checkpoint is being written; the last one until model.bin
  # is (the run's final write), from 75 % of the run on.
  pattern=""
  ((i % 2 == 1)) && pattern="$TMP/ck/*.tmp-*"
  ((i == points - 1)) && pattern="$TMP/cut/model.bin.tmp-*"
  ((i == points - 1 && at_ms > duration_ms * 3 / 4)) && at_ms=$((duration_ms * 3 / 4))
  # A run faster than the uninterrupted ones may end before the moment: an earlier one then.
  for attempt in 1 2 3 4 5; do
    kill_at "$at_ms" "$pattern"
    ((rc == 137)) && break
    at_ms=$((at_ms * 3 / 4))
    retries=$((retries + 1))
  done
  ((rc == 137)) || fail "kill $i: every moment tried (the last at ${at_ms} ms) came after the run ended (exit $rc)"
  hits=$((hits + 1))
  temps=$( (find "$TMP/ck" "$TMP/cut" -name "*.tmp*" 2> /dev/null || true) | wc -l)
  ((temps > 0)) && in_write=$((in_write + 1))
  check_files
  where="no latest.bin yet"
  if [[ -f $TMP/cut/model.bin ]]; then
    where="model.bin written"
  elif [[ -f $TMP/ck/latest.bin ]]; then
    where="after checkpoint $(last_checkpoint "$TMP/ck")"
    compgen -G "$TMP/cut/model.bin.tmp-*" > /dev/null && where="in model.bin's write"
    train cut --resume "$TMP/ck/latest.bin" || fail "kill $i: resume: $(cat "$TMP/cut.log")"
  else
    train cut --overwrite || fail "kill $i: fresh start: $(cat "$TMP/cut.log")"
  fi
  cmp -s "$TMP/full/model.bin" "$TMP/cut/model.bin" \
    || fail "kill $i at ${at_ms} ms ($where): resumed model.bin differs from the uninterrupted run's"
  # The finished run removed what the killed one left half-written (it rewrote those files).
  left=$( (find "$TMP/ck" "$TMP/cut" -name "*.tmp-*" 2> /dev/null || true) | wc -l)
  ((left == 0)) || fail "kill $i ($where): $left temporary file(s) still there after the run finished"
  printf 'kill %2d at %5d ms: %-22s %d temp file(s) left, %3d *.bin load; resumed model.bin identical\n' \
    "$i" "$at_ms" "$where" "$temps" "$loaded"
done
echo "kill -9 anywhere: ok ($points of $points identical; $hits kill(s), all of the running process," \
  "$in_write inside a write, $retries moment(s) drawn again; seed $seed)"

#!/usr/bin/env bash
# kill -9 mid-run, then --resume from the last checkpoint: the final weights equal those of
# an uninterrupted run with the same Seed, bit for bit.
source "$(dirname "$0")/common.sh" "$@"
make_shapes "$TMP/data" 100
common=(--quiet --threads 2 --set data.train="$TMP/data/train" --set data.validation="$TMP/data/test"
        --set training.MaxEpochs=4 --set training.Seed=11 --set training.ValidationFrequency=1000
        --set training.CheckpointFrequency=3 --set training.CheckpointFrequencyUnit=iteration)
# Both runs use the same CheckpointPath so that their resolved configs (stored in the
# model) are the same.
"$DLTRAIN" train "$SRC/configs/shapes.yaml" "${common[@]}" --output-dir "$TMP/full" \
  --set training.CheckpointPath="$TMP/ck" > /dev/null
rm -rf "$TMP/ck"

# The kill comes once checkpoint 9 exists. A run that ends inside one poll of 50 ms (a loaded
# machine can stall this shell that long) was not killed: it is started again, up to 3 times.
killed=0
for attempt in 1 2 3; do
  rm -rf "$TMP/cut" "$TMP/ck"
  "$DLTRAIN" train "$SRC/configs/shapes.yaml" "${common[@]}" --output-dir "$TMP/cut" \
    --set training.CheckpointPath="$TMP/ck" > /dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 6000); do  # a hang guard of 300 s
    [[ -f "$TMP/ck/checkpoint-iteration-9.bin" ]] && break
    sleep 0.05
  done
  rc=0
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || rc=$?
  if ((rc == 137)); then killed=1; break; fi
  echo "attempt $attempt: the run ended (exit $rc) before the kill; again"
done
((killed == 1)) || fail "the run ended before it could be killed, 3 times"
[[ -f "$TMP/ck/latest.bin" ]] || fail "no checkpoint survived kill -9"
if [[ -f "$TMP/cut/model.bin" ]]; then fail "the killed run left a model.bin"; fi
# The killed run's live files: its config and whole log rows up to the kill, no summary.
[[ -s "$TMP/cut/config.yaml" && ! -e "$TMP/cut/summary.json" ]] || fail "killed run's folder: $(ls "$TMP/cut")"
killed_rows=$(($(wc -l < "$TMP/cut/log.csv") - 1))
[[ $killed_rows -ge 9 ]] || fail "the killed run's log.csv has $killed_rows rows, expected >= 9"
ls "$TMP/ck"
"$DLTRAIN" train "$SRC/configs/shapes.yaml" "${common[@]}" --output-dir "$TMP/cut" \
  --set training.CheckpointPath="$TMP/ck" --resume "$TMP/ck/latest.bin" > /dev/null
cmp "$TMP/full/model.bin" "$TMP/cut/model.bin" || fail "resumed weights differ from the uninterrupted run"
[[ $(wc -l < "$TMP/full/log.csv") -eq $(wc -l < "$TMP/cut/log.csv") ]] || fail "resumed log.csv has a different length"
# Complete: every row of the uninterrupted run, the same but for the elapsed time (column 3).
cmp <(cut -d, -f1,2,4- "$TMP/full/log.csv") <(cut -d, -f1,2,4- "$TMP/cut/log.csv") \
  || fail "the resumed log.csv differs from the uninterrupted run's"
echo "resume: ok (identical model.bin)"

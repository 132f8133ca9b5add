#!/usr/bin/env bash
# Faults in data-parallel CPU training: a worker killed with kill -9 (or stopped with
# SIGSTOP) ends the whole run with exit code 3 and one line naming the rank and the cause,
# within the 60 s bound, with no orphan process; Ctrl-C to the launcher stops every worker;
# a failing worker's own message reaches the launcher's line; multi-gpu without CUDA is one
# clear device error.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 8 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
training:
  InitialLearnRate: 0.001
  MaxEpochs: 1000000
  MiniBatchSize: 8
  Verbose: false
  ExecutionEnvironment: parallel
YAML
# start NAME [--set ...]: a long 2-worker run in the background; $launcher, $workers
start() {
  local name=$1
  shift
  "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/$name" "$@" > "$TMP/$name.out" 2> "$TMP/$name.err" &
  launcher=$!
  for _ in $(seq 1 200); do
    workers=$(pgrep -P "$launcher" | tr '\n' ' ' || true)
    [[ $(wc -w <<< "$workers") -eq 2 ]] && grep -q "data parallel" "$TMP/$name.err" && break
    sleep 0.05
  done
  [[ $(wc -w <<< "$workers") -eq 2 ]] || fail "$name: 2 workers did not start: $(cat "$TMP/$name.err")"
  sleep 0.3  # training, inside the collectives
}
# finish NAME EXPECTED_CODE PATTERN: the launcher's exit code, time, one line, no orphans
finish() {
  local name=$1 code=$2 pattern=$3 t0=$SECONDS rc=0
  wait "$launcher" || rc=$?
  local took=$((SECONDS - t0))
  [[ $rc -eq $code ]] || fail "$name: exit code $rc, expected $code: $(cat "$TMP/$name.err")"
  [[ $took -le 300 ]] || fail "$name: the run took $took s to end (a hang guard: it should end within seconds)"
  local lines
  lines=$(grep -v '^\[rank 0\] info' "$TMP/$name.err" | grep -c . || true)
  [[ $lines -eq 1 ]] || fail "$name: expected one line, got: $(cat "$TMP/$name.err")"
  grep -q -- "$pattern" "$TMP/$name.err" || fail "$name: no '$pattern' in: $(cat "$TMP/$name.err")"
  sleep 0.2
  for p in $workers; do
    if kill -0 "$p" 2>/dev/null; then fail "$name: worker $p is still running"; fi
  done
  if pgrep -f "$TMP/$name" > /dev/null; then fail "$name: orphan: $(pgrep -af "$TMP/$name")"; fi
  echo "ok: $name -> exit $rc in ${took}s: $(grep -v info "$TMP/$name.err")"
}

start kill9
kill -9 "$(cut -d' ' -f2 <<< "$workers")"
finish kill9 3 "rank 1 of 2 was killed by signal 9"

start kill9_rank0
kill -9 "$(cut -d' ' -f1 <<< "$workers")"
finish kill9_rank0 3 "rank 0 of 2 was killed by signal 9"

DLT_COMM_TIMEOUT=2 start stopped
kill -STOP "$(cut -d' ' -f2 <<< "$workers")"
finish stopped 3 "Timed out"

start interrupt
kill -INT "$launcher"
finish interrupt 130 "interrupted by signal 2"

# A worker's own error (a missing data folder) is the launcher's one line, with its message.
rc=0
"$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/nodata" --set data.train="$TMP/missing" \
  > /dev/null 2> "$TMP/nodata.err" || rc=$?
[[ $rc -eq 3 ]] || fail "missing data: exit code $rc: $(cat "$TMP/nodata.err")"
[[ $(grep -c . "$TMP/nodata.err") -eq 1 ]] || fail "missing data: not one line: $(cat "$TMP/nodata.err")"
grep -q "rank [01] of 2 exited with code 1: $TMP/missing" "$TMP/nodata.err" || fail "missing data: $(cat "$TMP/nodata.err")"
echo "ok: missing data -> $(cat "$TMP/nodata.err")"

out=$("$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/gpu" --set training.ExecutionEnvironment=multi-gpu 2>&1 >/dev/null) \
  && fail "multi-gpu without CUDA succeeded"
grep -q "device error: ExecutionEnvironment 'multi-gpu' needs" <<< "$out" || fail "multi-gpu: $out"
[[ $(grep -c . <<< "$out") -eq 1 ]] || fail "multi-gpu: more than one line: $out"
echo "ok: multi-gpu -> $out"
echo "parallel faults: ok"

#!/usr/bin/env bash
# CLI flags and options checked by an effect a dltrain that ignored them would not have:
#   make-dataset --split: the test share per class; report --metric: which accuracy it ranks by;
#   time --repeats: oneDNN's own count of executed conv forwards (DNNL_VERBOSE) grows by
#   2 x --iterations per repeat (each repeat times --iterations training steps and as many
#   inference passes); training.FusedBatchNormPooling false: oneDNN's batch normalization runs (fused: none does);
#   training.CommunicationTiming: each rank logs its collectives' time.
source "$(dirname "$0")/common.sh" "$@"
# make-dataset --split
"$DLTRAIN" make-dataset shapes "$TMP/d20" --classes 2 --per-class 40 --size 16x16 --seed 3 > /dev/null
"$DLTRAIN" make-dataset shapes "$TMP/d25" --classes 2 --per-class 40 --size 16x16 --seed 3 --split 0.25 > /dev/null
for c in circle square; do
  t20=$(find "$TMP/d20/test/$c" -name '*.png' | wc -l) t25=$(find "$TMP/d25/test/$c" -name '*.png' | wc -l)
  r25=$(find "$TMP/d25/train/$c" -name '*.png' | wc -l)
  [[ $t20 -eq 8 && $t25 -eq 10 && $r25 -eq 30 ]] || fail "make-dataset --split: $c test $t20 (default), $t25 and train $r25 (0.25)"
done
echo "ok: make-dataset --split 0.25: 10 of 40 per class in test/ (default 0.2: 8)"

cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: none}
  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 8, Padding: same}
  - {type: batchNormalization, Name: bn}
  - {type: relu, Name: relu}
  - {type: maxPooling2d, Name: pool, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data: {train: $TMP/d20/train, validation: $TMP/d20/test}
training: {Solver: sgdm, InitialLearnRate: 0.01, MaxEpochs: 2, MiniBatchSize: 8, Verbose: false, ExecutionEnvironment: cpu, Seed: 1}
YAML
# report --metric: each run's accuracy is the one asked for. The run's two accuracies may be
# equal, so a copy of it whose summary.json has them apart (minibatch_accuracy moved by 25
# points) is reported too: there only the right one matches.
"$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 1 --output-dir "$TMP/run" > /dev/null 2>&1 || fail "training failed"
cp -r "$TMP/run" "$TMP/run_apart"
python3 - "$TMP/run_apart/summary.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
v = s["validation_accuracy"]
s["minibatch_accuracy"] = v - 25 if v >= 50 else v + 25
json.dump(s, open(sys.argv[1], "w"))
PYEOF
for run in run run_apart; do
  for m in validation minibatch; do
    got=$("$DLTRAIN" report "$TMP/$run" --json --metric $m | python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["accuracy"])')
    want=$(python3 -c "import json; print(json.load(open('$TMP/$run/summary.json'))['${m}_accuracy'])")
    other=$(python3 -c "import json; s = json.load(open('$TMP/$run/summary.json')); print(s['minibatch_accuracy' if '$m' == 'validation' else 'validation_accuracy'])")
    python3 -c "import sys; sys.exit(abs(float('$got') - float('$want')) > 1e-3)" ||
      fail "report --metric $m ($run): accuracy $got, summary.json's ${m}_accuracy $want"
    echo "ok: report --metric $m ranks $run by $got (summary.json's ${m}_accuracy; the other is $other)"
  done
done

# time --repeats: conv forward executions counted by oneDNN itself (DNNL_VERBOSE)
convs() {
  DNNL_VERBOSE=1 "$DLTRAIN" time "$TMP/net.yaml" --iterations 4 --warmup 1 --threads 1 --batch 8 --repeats "$1" |
    grep -c '^onednn_verbose,exec,cpu,convolution,.*forward_training\|^dnnl_verbose,exec,cpu,convolution,.*forward_training'
}
c1=$(convs 1) c3=$(convs 3)
echo "time: conv forward executions with --repeats 1: $c1, 3: $c3"
((c3 - c1 == 2 * 2 * 4)) || fail "time --repeats 3 ran $((c3 - c1)) more conv forwards than --repeats 1, expected 16 (2 x (4 steps + 4 inference passes))"

# FusedBatchNormPooling: oneDNN batch normalization primitives executed in dltrain time
bn_execs() {
  DNNL_VERBOSE=1 "$DLTRAIN" time "$TMP/net.yaml" --iterations 2 --warmup 1 --repeats 1 --threads 1 --batch 8 \
    --set training.FusedBatchNormPooling="$1" | grep -c ',exec,cpu,batch_normalization,' || true
}
fused=$(bn_execs true) unfused=$(bn_execs false)
echo "FusedBatchNormPooling: oneDNN batch normalizations executed: true $fused, false $unfused"
((fused == 0 && unfused > 0)) || fail "FusedBatchNormPooling false did not run the layers one by one"

# CommunicationTiming: two CPU workers log their collectives' time only when it is on
for timing in true false; do
  "$DLTRAIN" train "$TMP/net.yaml" --threads 1 --output-dir "$TMP/par-$timing" --set training.ExecutionEnvironment=parallel \
    --set training.NumWorkers=2 --set training.MaxEpochs=1 --set training.CommunicationTiming=$timing \
    > "$TMP/par-$timing.log" 2>&1 || fail "parallel run: $(cat "$TMP/par-$timing.log")"
done
n_true=$(grep -c "collectives, .* ms busy" "$TMP/par-true.log" || true)
n_false=$(grep -c "collectives, .* ms busy" "$TMP/par-false.log" || true)
echo "CommunicationTiming: timing lines true $n_true, false $n_false"
((n_true >= 2 && n_false == 0)) || fail "CommunicationTiming: $n_true lines when on (want one per rank), $n_false when off"
echo "flags: ok"

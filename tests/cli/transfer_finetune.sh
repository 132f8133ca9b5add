#!/usr/bin/env bash
# Transfer learning end to end: train a small network on 4 generated shape classes, then a
# config with base: (RemoveLast 3, FreezeUntil relu2) adds a new fullyConnected head for a
# different 3-class dataset and fine-tunes. Asserts: frozen weights bit-identical to the base
# model, test accuracy >= 70%, and no backward work in the frozen layers (dltrain time's
# per-layer backward times: zero for each frozen layer, non-zero for the same layers unfrozen;
# a count, not a speed ratio, so it holds on a loaded machine).
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/a" --classes 4 --per-class 400 --size 32x32 --seed 3 >/dev/null
"$DLTRAIN" make-dataset shapes "$TMP/b" --classes 3 --per-class 100 --size 32x32 --seed 7 >/dev/null
training="training: {Solver: adam, InitialLearnRate: 0.003, MaxEpochs: 4, MiniBatchSize: 32, Shuffle: every-epoch, Verbose: false, ExecutionEnvironment: cpu, Seed: 1}"
cat > "$TMP/base.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [32, 32, 3], Normalization: none}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 16, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: convolution2d, Name: conv2, FilterSize: 3, NumFilters: 32, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization, Name: bn2}
  - {type: relu, Name: relu2}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 4}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data: {train: $TMP/a/train}
$training
YAML
"$DLTRAIN" train "$TMP/base.yaml" --quiet --output-dir "$TMP/base" --set training.MaxEpochs=8 >/dev/null
# seed 000: layers(1:end-3) + fullyConnected(K, WeightLearnRateFactor 10, BiasLearnRateFactor 20)
for freeze in frozen unfrozen; do
  {
    echo "base: {Model: $TMP/base/model.bin, RemoveLast: 3$([[ $freeze == frozen ]] && echo ", FreezeUntil: relu2")}"
    echo "layers:"
    echo "  - {type: fullyConnected, Name: fc_new, OutputSize: 3, WeightLearnRateFactor: 10, BiasLearnRateFactor: 20}"
    echo "  - {type: softmax, Name: softmax_new}"
    echo "  - {type: classification, Name: output_new}"
    echo "data: {train: $TMP/b/train}"
    echo "$training"
  } > "$TMP/$freeze.yaml"
done
"$DLTRAIN" train "$TMP/frozen.yaml" --quiet --set training.MaxEpochs=20 --set training.InitialLearnRate=0.0005 --output-dir "$TMP/tuned" >/dev/null
# 1. frozen layers bit-identical (CRC-32 of every learnable of conv1, bn1, conv2, bn2)
"$DLTRAIN" export "$TMP/base/model.bin" --debug-params | grep -E '^(conv|bn)[12]/' > "$TMP/before.txt"
"$DLTRAIN" export "$TMP/tuned/model.bin" --debug-params | grep -E '^(conv|bn)[12]/' > "$TMP/after.txt"
[[ $(wc -l < "$TMP/before.txt") -eq 8 ]] || fail "expected 8 frozen learnables: $(cat "$TMP/before.txt")"
diff -q "$TMP/before.txt" "$TMP/after.txt" >/dev/null || fail "frozen weights changed during fine-tuning"
"$DLTRAIN" export "$TMP/tuned/model.bin" --debug-params | grep -q '^fc_new/Weights 96 ' || fail "no new 3x32 head"
echo "ok: 8 frozen learnables bit-identical"
# 2. accuracy on the new task's test images
"$DLTRAIN" classify "$TMP/tuned/model.bin" "$TMP/b/test" --json > "$TMP/preds.json"
acc=$(json_number "$TMP/preds.json" accuracy)
at_least "$acc" 70 || fail "fine-tuned accuracy $acc% < 70%"
echo "ok: fine-tuned test accuracy $acc% (bar 70%)"
# 3. frozen layers skip backward work: the layers up to relu2 run no backward pass when frozen
# (0 ms in dltrain time's per-layer profile) and do when not
for freeze in frozen unfrozen; do
  "$DLTRAIN" time "$TMP/$freeze.yaml" --json --batch 32 --iterations 3 --warmup 1 --threads 1 > "$TMP/$freeze.time.json"
done
python3 - "$TMP/frozen.time.json" "$TMP/unfrozen.time.json" <<'PY' || fail "frozen layers' backward passes (above)"
import json, sys
frozen, unfrozen = ({l["name"]: l["backward_ms"] for l in json.load(open(f))["layers"]} for f in sys.argv[1:])
base = ["conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "relu2"]
ran = [n for n in base if n in frozen and frozen[n] != 0]
print("backward ms, frozen:", {n: frozen.get(n) for n in base}, "unfrozen:", {n: unfrozen.get(n) for n in base})
assert all(n in frozen for n in base) and not ran, f"frozen layers ran backward: {ran}"
assert unfrozen["conv2"] > 0 and unfrozen["fc_new"] > 0 and frozen["fc_new"] > 0, "no backward where it must run"
PY
echo "ok: no backward pass in the 7 frozen layers"
echo "PASS"

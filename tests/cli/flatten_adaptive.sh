#!/usr/bin/env bash
# MATLAB's spatialDropoutLayer, adaptiveAveragePooling2dLayer and flattenLayer and imageInputLayer's
# rescale-symmetric normalization in a config: a small network on generated 24x24 shapes (4
# classes, 400 each) pools 12x12 to 5x5 (regions that overlap), flattens it into the classifier
# and learns (validation accuracy >= 85%; 89-94% with seeds 1-3); classify agrees with
# summary.json; the model exports to ONNX (Sub and Mul for the rescaling, two averaging MatMul
# for the pooling, Transpose + Flatten) and imports back as the same layers with the same
# accuracy.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 4 --per-class 400 --size 24x24 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [24, 24, 3], Normalization: rescale-symmetric}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 16, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: convolution2d, Name: conv2, FilterSize: 3, NumFilters: 32, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization, Name: bn2}
  - {type: relu, Name: relu2}
  - {type: spatialDropout, Name: sdrop, Probability: 0.1}
  - {type: adaptiveAveragePooling2d, Name: adapt, OutputSize: 5}
  - {type: flatten, Name: flat}
  - {type: fullyConnected, Name: fc, OutputSize: 4}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  Solver: adam
  InitialLearnRate: 0.003
  MaxEpochs: 12
  MiniBatchSize: 32
  Seed: 1
  Plots: none
  ExecutionEnvironment: cpu
YAML
"$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 2 --output-dir "$TMP/run" > "$TMP/train.log" 2>&1 ||
  { cat "$TMP/train.log" >&2; fail "training failed"; }
acc=$(json_number "$TMP/run/summary.json" validation_accuracy)
at_least "$acc" 85 || fail "validation accuracy $acc%, expected >= 85%"
echo "ok: trained to $acc% validation accuracy"
classify_matches_summary "$TMP/run" "$TMP/data/test"

"$DLTRAIN" export "$TMP/run/model.bin" --output "$TMP/m.onnx" > /dev/null
"$DLTRAIN" import "$TMP/m.onnx" --output "$TMP/back.bin" > /dev/null
"$DLTRAIN" info "$TMP/back.bin" > "$TMP/info.txt"
row() { grep -E "^[0-9]+ +$1 " "$TMP/info.txt" | tr -s ' ' | cut -d' ' -f2-4; }
[[ "$(row adapt_width)" == "adapt_width adaptiveAveragePooling2d 12x5x32" ]] || fail "adapt_width row: $(row adapt_width)"
[[ "$(row adapt)" == "adapt adaptiveAveragePooling2d 5x5x32" ]] || fail "adapt row: $(row adapt)"
[[ "$(row flat)" == "flat flatten 800" ]] || fail "flat row: $(row flat)"
! grep -q spatialDropout "$TMP/info.txt" || fail "spatialDropout, the identity in inference, came back from ONNX"
"$DLTRAIN" classify "$TMP/back.bin" "$TMP/data/test" --output "$TMP/back.csv" > "$TMP/back.txt"
pct=$(grep 'Accuracy:' "$TMP/back.txt" | grep -o '[0-9.]*%' | tr -d '%')
awk -v a="$acc" -v p="$pct" 'BEGIN { d = a - p; exit !(d < 0.01 && d > -0.01) }' ||
  fail "the imported export classifies at $pct%, the model at $acc%"
echo "ok: exported to ONNX and imported back: adaptive pooling as two layers, flatten, $pct%"

#!/usr/bin/env bash
# A small Swin-style network end to end: a patch convolution, two pre-norm blocks of window
# attention (the second with shifted windows) with a per-pixel MLP, Swin's patch merging
# (spaceToDepth, layerNormalization, a 1x1 convolution), global pooling; trained with adamw on the generated shapes: validation accuracy well
# above chance; `dltrain info` shows the layer; model.bin classifies the validation images with
# summary.json's accuracy; a shift as large as the window is refused with one line.
source "$(dirname "$0")/common.sh" "$@"
make_shapes "$TMP/data" 150
cat > "$TMP/swin.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [32, 32, 3], Normalization: zscore}
  - {type: convolution2d, Name: patch, FilterSize: 4, Stride: 4, NumFilters: 32}
  - {type: layerNormalization, Name: ln1, OperationDimension: channel-only}
  - {type: windowAttention, Name: wa1, NumHeads: 4, WindowSize: 4}
  - {type: addition, Name: add1, Inputs: [wa1, patch]}
  - {type: layerNormalization, Name: ln2, OperationDimension: channel-only}
  - {type: windowAttention, Name: wa2, NumHeads: 4, WindowSize: 4, ShiftSize: 2}
  - {type: addition, Name: add2, Inputs: [wa2, add1]}
  - {type: layerNormalization, Name: ln3, OperationDimension: channel-only}
  - {type: convolution2d, Name: mlp1, FilterSize: 1, NumFilters: 64}
  - {type: gelu, Name: gelu}
  - {type: convolution2d, Name: mlp2, FilterSize: 1, NumFilters: 32}
  - {type: addition, Name: add3, Inputs: [mlp2, add2]}
  - {type: spaceToDepth, Name: merge, BlockSize: 2}
  - {type: layerNormalization, Name: ln4, OperationDimension: channel-only}
  - {type: convolution2d, Name: reduce, FilterSize: 1, NumFilters: 64}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 4}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  Solver: adamw
  InitialLearnRate: 0.003
  MaxEpochs: 25
  MiniBatchSize: 32
  Shuffle: every-epoch
  ValidationFrequency: 1000
  Seed: 1
  Verbose: false
YAML
"$DLTRAIN" info "$TMP/swin.yaml" > "$TMP/info.out"
grep -Eq "^7 +wa2 +windowAttention +8x8x32 +SSCB +4420 *$" "$TMP/info.out" ||
  fail "info: windowAttention row: $(cat "$TMP/info.out")"
echo "ok: dltrain info shows windowAttention (8x8x32 SSCB, 4420 learnables with the 49x4 position table)"

run="$TMP/run"
"$DLTRAIN" train "$TMP/swin.yaml" --output-dir "$run" > "$TMP/train.out"
acc=$(json_number "$run/summary.json" validation_accuracy)
# 4 classes: chance is 25 %.
at_least "$acc" 50 || fail "validation accuracy $acc%: the network did not learn (chance 25%)"
echo "ok: the window attention network learns the shapes: validation accuracy $acc% (chance 25%)"
classify_matches_summary "$run" "$TMP/data/test"

expect_error "a shift of a whole window" 2 "layer 'wa2' (windowAttention): option ShiftSize \[4 4\] must be smaller than WindowSize \[4 4\]" -- \
  "$DLTRAIN" info "$TMP/swin.yaml" --set "layers.wa2.ShiftSize=4"
expect_error "heads that do not divide the channels" 2 "NumKeyChannels (32) must be a multiple of NumHeads (3)" -- \
  "$DLTRAIN" info "$TMP/swin.yaml" --set "layers.wa1.NumHeads=3"

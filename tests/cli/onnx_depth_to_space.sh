#!/usr/bin/env bash
# depthToSpace2d against PyTorch (Debian's python3-torch 1.13) and OpenCV: a network with
# F.pixel_shuffle (exported as DepthToSpace, mode CRD; scripts/onnx/shuffle_models.py) imports
# as a depthToSpace2d layer in CRD mode and gives PyTorch's class probabilities within 1e-4
# relative; dltrain's export (DepthToSpace) imports back to the same outputs and runs in OpenCV's
# dnn with dltrain's outputs. The DCR mode (MATLAB's default): a config with depthToSpace2d,
# trained for a few iterations, exported and run in OpenCV against dltrain's own outputs. And
# the errors: a block that does not divide the channels, a missing BlockSize.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
skip_without_onnx
$PY -c "import torch, numpy" 2>/dev/null || skip "/usr/bin/python3 lacks torch/numpy (apt-get install python3-torch)"
$PY -c "import cv2" 2>/dev/null || skip "/usr/bin/python3 cannot import cv2 (apt-get install python3-opencv; scripts/setup.sh does)"
$PY "$SRC/scripts/onnx/shuffle_models.py" "$TMP" pixel_shuffle >/dev/null 2>&1
n=pixel_shuffle
onnx_round_trip "$n" 6
"$DLTRAIN" info "$TMP/$n.bin" > "$TMP/$n.info"
grep -q "depthToSpace2d" "$TMP/$n.info" || fail "no depthToSpace2d layer in $(cat "$TMP/$n.info")"

# DCR, from a config: train briefly on shapes, then dltrain and OpenCV on the exported file.
"$DLTRAIN" make-dataset shapes "$TMP/shapes" --classes 3 --per-class 12 --size 16x16 --seed 3 >/dev/null
cat > "$TMP/dcr.yaml" <<YAML
layers:
  - {type: imageInput, InputSize: [16, 16, 3], Normalization: none}
  - {type: convolution2d, FilterSize: 3, NumFilters: 12, Padding: same}
  - {type: depthToSpace2d, Name: d2s, BlockSize: 2}
  - {type: convolution2d, FilterSize: 3, NumFilters: 4, Stride: 2}
  - {type: relu}
  - {type: globalAveragePooling2d}
  - {type: fullyConnected, OutputSize: 3}
  - {type: softmax}
  - {type: classification}
data:
  train: $TMP/shapes/train
training: {MaxEpochs: 1, MiniBatchSize: 12, Verbose: false}
YAML
"$DLTRAIN" train "$TMP/dcr.yaml" -o "$TMP/dcr" -q >/dev/null
"$DLTRAIN" info "$TMP/dcr/model.bin" | grep -q "depthToSpace2d" || fail "the trained model has no depthToSpace2d"
$PY -c "import numpy as np; np.random.default_rng(3).uniform(0, 255, (2, 16, 16, 3)).astype(np.float32).tofile('$TMP/dcr.in.f32')"
"$DLTRAIN" export "$TMP/dcr/model.bin" --debug-forward "$TMP/dcr.in.f32" --output "$TMP/dcr.ours.f32"
"$DLTRAIN" export "$TMP/dcr/model.bin" --output "$TMP/dcr.onnx" >/dev/null
$PY -c "import onnx; m = onnx.load('$TMP/dcr.onnx'); a = [x for n in m.graph.node if n.op_type == 'DepthToSpace' for x in n.attribute]; assert {(x.name, x.s or x.i) for x in a} == {('blocksize', 2), ('mode', b'DCR')}, a" ||
  fail "the exported DepthToSpace is not blocksize 2, mode DCR"
$PY "$SRC/scripts/onnx/opencv_run.py" "$TMP/dcr.onnx" "$TMP/dcr.in.f32" 16 16 3 "$TMP/dcr.cv.f32" >/dev/null
compare_f32 "$TMP/dcr.cv.f32" "$TMP/dcr.ours.f32" 1e-4 || fail "DCR: OpenCV dnn disagrees with dltrain on the exported file"

# Errors: one line naming the layer and what to change.
sed 's/BlockSize: 2/BlockSize: 4/' "$TMP/dcr.yaml" > "$TMP/bad.yaml"
expect_error "block of 4x4 on 12 channels" 2 "12 channels do not divide into blocks of 4x4" -- "$DLTRAIN" train "$TMP/bad.yaml" -o "$TMP/bad"
sed 's/, BlockSize: 2//' "$TMP/dcr.yaml" > "$TMP/bad2.yaml"
expect_error "no BlockSize" 2 "option BlockSize is required" -- "$DLTRAIN" train "$TMP/bad2.yaml" -o "$TMP/bad2"
echo "PASS"

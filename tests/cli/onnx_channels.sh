#!/usr/bin/env bash
# ShuffleNet v2's channel operations against PyTorch (Debian's python3-torch 1.13): small
# networks exported with torch.onnx.export at opset 13 (scripts/onnx/shuffle_models.py) with
# Split (torch.split), Slice (x[:, a:b], x[:, a:]), ReduceMax over H, W (amax, keepdim and not),
# and two ShuffleNet v2 units as torchvision writes them (x.chunk(2, 1): Slices whose ends are
# computed from Shape(x); channel_shuffle: Reshape - Transpose - Reshape) import as
# channelSlice, globalMaxPooling2d and channelShuffle and must give PyTorch's class
# probabilities within 1e-4 relative; dltrain's export of each (Slice, GlobalMaxPool,
# Reshape - Transpose - Reshape) imports back to the same outputs and runs in OpenCV's dnn with
# dltrain's outputs.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
skip_without_onnx
$PY -c "import torch, numpy" 2>/dev/null || skip "/usr/bin/python3 lacks torch/numpy (apt-get install python3-torch)"
MODELS="channel_ops:12 reducemax:10 shuffle_block:12"
names=""
for net in $MODELS; do names="$names ${net%%:*}"; done
# shellcheck disable=SC2086
$PY "$SRC/scripts/onnx/shuffle_models.py" "$TMP" $names 2>/dev/null
$PY -c "import cv2" 2>/dev/null || skip "/usr/bin/python3 cannot import cv2, which the OpenCV half needs (apt-get install python3-opencv; scripts/setup.sh does)"
for net in $MODELS; do
  n=${net%%:*} s=${net##*:}
  "$DLTRAIN" import "$TMP/$n.onnx" --output "$TMP/$n.bin" >/dev/null
  "$DLTRAIN" info "$TMP/$n.bin" > "$TMP/$n.info"
  "$DLTRAIN" export "$TMP/$n.bin" --debug-forward "$TMP/$n.in.f32" --output "$TMP/$n.ours.f32"
  compare_f32 "$TMP/$n.ours.f32" "$TMP/$n.probs.f32" 1e-4 || fail "$n: dltrain's import differs from PyTorch"
  "$DLTRAIN" export "$TMP/$n.bin" --output "$TMP/$n.out.onnx" >/dev/null
  "$DLTRAIN" import "$TMP/$n.out.onnx" --output "$TMP/$n.re.bin" >/dev/null
  "$DLTRAIN" export "$TMP/$n.re.bin" --debug-forward "$TMP/$n.in.f32" --output "$TMP/$n.re.f32"
  compare_f32 "$TMP/$n.re.f32" "$TMP/$n.ours.f32" 1e-6 || fail "$n: export + import changed the outputs"
  $PY "$SRC/scripts/onnx/opencv_run.py" "$TMP/$n.out.onnx" "$TMP/$n.in.f32" "$s" "$s" 3 "$TMP/$n.cv.f32" >/dev/null
  compare_f32 "$TMP/$n.cv.f32" "$TMP/$n.ours.f32" 1e-4 || fail "$n: OpenCV dnn disagrees with dltrain on the exported file"
done
# The layers the imports made.
grep -q "channelSlice" "$TMP/channel_ops.info" || fail "channel_ops: no channelSlice in $(cat "$TMP/channel_ops.info")"
grep -q "globalMaxPooling2d" "$TMP/reducemax.info" || fail "reducemax: no globalMaxPooling2d"
[[ $(grep -c "channelShuffle" "$TMP/shuffle_block.info") == 2 ]] || fail "shuffle_block: not 2 channelShuffle layers"
[[ $(grep -c "channelSlice" "$TMP/shuffle_block.info") == 4 ]] || fail "shuffle_block: not 4 channelSlice layers"
echo "PASS"

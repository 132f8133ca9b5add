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
  onnx_round_trip "$n" "$s"
  "$DLTRAIN" info "$TMP/$n.bin" > "$TMP/$n.info"
done
# The layers the imports made.
grep -q "channelSlice" "$TMP/channel_ops.info" || fail "channel_ops: no channelSlice in $(cat "$TMP/channel_ops.info")"
grep -q "globalMaxPooling2d" "$TMP/reducemax.info" || fail "reducemax: no globalMaxPooling2d"
[[ $(grep -c "channelShuffle" "$TMP/shuffle_block.info") == 2 ]] || fail "shuffle_block: not 2 channelShuffle layers"
[[ $(grep -c "channelSlice" "$TMP/shuffle_block.info") == 4 ]] || fail "shuffle_block: not 4 channelSlice layers"
echo "PASS"

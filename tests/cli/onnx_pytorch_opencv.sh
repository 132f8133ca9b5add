#!/usr/bin/env bash
# ONNX against other implementations: torchvision-style AlexNet (64x64, with LRN, ceil-mode
# max pooling, padded average pooling, LeakyReLU, ELU, dropout), ResNet-18 (32x32), a small
# up-convolution network (16x16, ConvTranspose2d with output_padding and stride 2), a network
# of grouped and depthwise convolutions (32x32, nn.Conv2d with groups) and a segmentation network
# (16x16, scores per pixel upsampled by interpolate: imported as softmax + pixelClassification) built
# in PyTorch with random weights are exported with torch.onnx.export (and a MaxPool-with-
# Indices + MaxUnpool graph written with onnx.helper, computed by torch.nn.functional), imported, and must give
# PyTorch's class probabilities within 1e-4 relative; dltrain's export of each must run in
# OpenCV's dnn with dltrain's outputs. Also: unsupported operators, a Conv group that does not
# divide the channels and a grouped ConvTranspose are one line.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
"$DLTRAIN" export --help >/dev/null
skip_without_onnx
$PY -c "import torch, numpy" 2>/dev/null || skip "/usr/bin/python3 lacks torch/numpy (apt-get install python3-torch)"
$PY "$SRC/scripts/onnx/torch_models.py" "$TMP" 2>/dev/null
$PY "$SRC/scripts/onnx/unpool_model.py" "$TMP" 2>/dev/null
$PY -c "import cv2" 2>/dev/null || skip "/usr/bin/python3 lacks cv2, which the OpenCV half needs (apt-get install python3-opencv)"
for net in alexnet:64 resnet18:32 upconv:16 unpool:16 grouped:32 segfcn:16; do
  n=${net%%:*} s=${net##*:}
  onnx_round_trip "$n" "$s"
done
# Errors: one line naming the operator and the node; nothing written.
$PY - "$TMP" <<'PYEOF'
import sys, torch, torch.nn as nn
class Odd(nn.Module):
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(3, 4, 3)
    def forward(self, x): return nn.functional.softplus(self.c(x))
class GroupedUp(Odd):
    def __init__(self):
        super().__init__(); self.u = nn.ConvTranspose2d(4, 4, 2, stride=2, groups=2)
    def forward(self, x): return self.u(self.c(x))
x = torch.rand(1, 3, 8, 8)
torch.onnx.export(Odd().eval(), x, sys.argv[1] + "/softplus.onnx", opset_version=13)
torch.onnx.export(GroupedUp().eval(), x, sys.argv[1] + "/grouped_up.onnx", opset_version=13)
PYEOF
expect_error "unsupported operator" 1 "operator 'Softplus'" -- "$DLTRAIN" import "$TMP/softplus.onnx" --output "$TMP/bad.bin"
# A Conv whose group (3) does not divide its 4 input channels (no exporter writes one; a hostile file may).
$PY - "$TMP" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = numpy_helper.from_array(np.zeros((6, 1, 3, 3), np.float32), "w")
node = helper.make_node("Conv", ["data", "w"], ["y"], name="dw", kernel_shape=[3, 3], group=3)
g = helper.make_graph([node], "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 4, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 6, 6])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1] + "/bad_group.onnx")
PYEOF
expect_error "Conv group not dividing the channels" 1 "node 'dw' (Conv): group is 3 but the input has 4 channels" \
  -- "$DLTRAIN" import "$TMP/bad_group.onnx" --output "$TMP/bad.bin"
expect_error "grouped transposed convolution" 1 "ConvTranspose): group is not 1" -- "$DLTRAIN" import "$TMP/grouped_up.onnx" --output "$TMP/bad.bin"
# MaxUnpool whose default output size is not its MaxPool's input (15x15 pooled to 7x7 -> 14x14)
$PY - "$TMP" <<'PYEOF'
import sys, onnx
from onnx import helper, TensorProto
nodes = [helper.make_node("MaxPool", ["data"], ["p", "i"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("MaxUnpool", ["p", "i"], ["u"], name="unpool", kernel_shape=[2, 2], strides=[2, 2])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 15, 15])],
                      [helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 3, 14, 14])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1] + "/odd_unpool.onnx")
PYEOF
expect_error "MaxUnpool of an odd size" 1 "pooled a 15x15 input" -- "$DLTRAIN" import "$TMP/odd_unpool.onnx" --output "$TMP/bad.bin"
[[ ! -e "$TMP/bad.bin" ]] || fail "a failed import left a file"
echo "PASS"

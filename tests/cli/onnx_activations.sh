#!/usr/bin/env bash
# ONNX activations against PyTorch: a small CNN through ReLU6, clamp(min=0), Hardtanh(0, 1.5),
# SiLU, Hardswish, GELU (exact and tanh), Hardsigmoid, Tanh and Sigmoid with random weights,
# exported by Debian's torch 1.13 at opsets 10, 13 and 14 (scripts/onnx/torch_activations.py),
# imported: PyTorch's class probabilities within 1e-4 relative, the decompositions (x * Sigmoid(x),
# x * HardSigmoid(x), the Erf and Tanh GELU forms) read as single layers; dltrain's export reads
# back to the same outputs, and OpenCV's dnn runs it (the Clip-free "gates" network: OpenCV 4.6
# reads Clip only in its opset < 11 attribute form). Clip with other bounds is one line.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
skip_without_onnx
$PY -c "import torch, numpy, onnx" 2>/dev/null || skip "/usr/bin/python3 lacks torch/numpy/onnx (apt-get install python3-torch python3-onnx)"
$PY "$SRC/scripts/onnx/torch_activations.py" "$TMP" 2>/dev/null
$PY -c "import cv2" 2>/dev/null || skip "/usr/bin/python3 cannot import cv2, which the OpenCV half needs (apt-get install python3-opencv; scripts/setup.sh does)"
for net in acts10:acts acts13:acts acts14:acts gates13:gates; do
  n=${net%%:*} ref=${net##*:}
  "$DLTRAIN" import "$TMP/$n.onnx" --output "$TMP/$n.bin" >/dev/null
  "$DLTRAIN" export "$TMP/$n.bin" --debug-forward "$TMP/$ref.in.f32" --output "$TMP/$n.ours.f32"
  compare_f32 "$TMP/$n.ours.f32" "$TMP/$ref.probs.f32" 1e-4 || fail "$n: dltrain's import differs from PyTorch"
  "$DLTRAIN" export "$TMP/$n.bin" --output "$TMP/$n.out.onnx" >/dev/null
  "$DLTRAIN" import "$TMP/$n.out.onnx" --output "$TMP/$n.re.bin" >/dev/null
  "$DLTRAIN" export "$TMP/$n.re.bin" --debug-forward "$TMP/$ref.in.f32" --output "$TMP/$n.re.f32"
  compare_f32 "$TMP/$n.re.f32" "$TMP/$n.ours.f32" 1e-6 || fail "$n: export + import changed the outputs"
  # Every activation is one layer, in the network's order, after the import and after the round trip.
  for bin in "$TMP/$n.bin" "$TMP/$n.re.bin"; do
    "$DLTRAIN" info "$bin" --json >"$TMP/$n.info.json"
    $PY - "$TMP/$n.info.json" "$ref" <<'PYEOF' || fail "$n: the activations are not one layer each ($bin)"
import json, sys
want = {"acts": "clippedRelu swish hardSwish gelu gelu relu clippedRelu hardSigmoid tanh sigmoid",
        "gates": "relu swish hardSwish gelu gelu relu relu hardSigmoid tanh sigmoid"}[sys.argv[2]]
other = {"imageInput", "convolution2d", "globalAveragePooling2d", "fullyConnected", "softmax", "classification"}
got = " ".join(l["type"] for l in json.load(open(sys.argv[1]))["layers"] if l["type"] not in other)
print(f"  activations: {got}")
sys.exit(0 if got == want else 1)
PYEOF
  done
  if [[ $ref == gates ]]; then
    $PY "$SRC/scripts/onnx/opencv_run.py" "$TMP/$n.out.onnx" "$TMP/$ref.in.f32" 16 16 3 "$TMP/$n.cv.f32" >/dev/null
    compare_f32 "$TMP/$n.cv.f32" "$TMP/$n.ours.f32" 1e-4 || fail "$n: OpenCV dnn disagrees with dltrain on the exported file"
  fi
done
# Clip with bounds dltrain has no layer for: one line naming the node.
$PY - "$TMP" <<'PYEOF'
import sys, torch, torch.nn as nn
class Clamp(nn.Module):
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(3, 4, 3)
    def forward(self, x): return torch.clamp(self.c(x), -1, 1)
torch.onnx.export(Clamp().eval(), torch.rand(1, 3, 8, 8), sys.argv[1] + "/clamp.onnx", opset_version=13)
PYEOF
expect_error "Clip(-1, 1)" 1 "(Clip): dltrain reads Clip with min 0 and a max > 0 (clippedRelu) or no max (relu), not min -1 max 1" -- "$DLTRAIN" import "$TMP/clamp.onnx" --output "$TMP/bad.bin"
[[ ! -e "$TMP/bad.bin" ]] || fail "a failed import left a file"
echo "PASS"

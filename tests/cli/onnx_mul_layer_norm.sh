#!/usr/bin/env bash
# multiplication and layerNormalization through ONNX, against PyTorch (Debian's 1.13 at test
# time, scripts/onnx/mul_norm_models.py: LayerNorm over (C, H, W), ConvNeXt's LayerNorm2d, both
# also at opset 13 where PyTorch writes them as ReduceMean / Sub / Pow / ... / Div / Mul / Add
# (equal scales and offsets as Identity aliases),
# and timm's channels-first LayerNorm2d written by hand) and OpenCV's dnn: each imported network
# gives PyTorch's class probabilities within 1e-4 relative, dltrain's export of it runs in OpenCV
# with dltrain's outputs (layerNormalization exports as InstanceNormalization, which OpenCV 4.6
# reads), and every network imports back from dltrain's export to the same outputs (the
# InstanceNormalization form is read as layerNormalization). Unsupported forms are one line
# naming the node.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
skip_without_onnx
$PY -c "import torch, numpy" 2>/dev/null || skip "/usr/bin/python3 lacks torch/numpy (apt-get install python3-torch)"
MODELS="lnimage lnchannels lnimage13 lnchannels13 lnshared13 lnfirst13 segate se"
$PY "$SRC/scripts/onnx/mul_norm_models.py" "$TMP" $MODELS 2>/dev/null
$PY -c "import cv2" 2>/dev/null || skip "/usr/bin/python3 cannot import cv2, which the OpenCV half needs (apt-get install python3-opencv; scripts/setup.sh does)"
for n in $MODELS; do
  "$DLTRAIN" import "$TMP/$n.onnx" --output "$TMP/$n.bin" >/dev/null
  "$DLTRAIN" export "$TMP/$n.bin" --debug-forward "$TMP/$n.in.f32" --output "$TMP/$n.ours.f32"
  compare_f32 "$TMP/$n.ours.f32" "$TMP/$n.probs.f32" 1e-4 || fail "$n: dltrain's import differs from PyTorch"
  "$DLTRAIN" export "$TMP/$n.bin" --output "$TMP/$n.out.onnx" >/dev/null
  "$DLTRAIN" import "$TMP/$n.out.onnx" --output "$TMP/$n.re.bin" >/dev/null
  if [[ $n == ln* ]]; then
    ln=$("$DLTRAIN" info "$TMP/$n.re.bin" | grep -c ' layerNormalization ' || true)
    [[ $ln -eq $("$DLTRAIN" info "$TMP/$n.bin" | grep -c ' layerNormalization ') && $ln -gt 0 ]] ||
      fail "$n: dltrain's export read back with $ln layerNormalization layers"
  fi
  "$DLTRAIN" export "$TMP/$n.re.bin" --debug-forward "$TMP/$n.in.f32" --output "$TMP/$n.re.f32"
  compare_f32 "$TMP/$n.re.f32" "$TMP/$n.ours.f32" 1e-6 || fail "$n: export + import changed the outputs"
  $PY "$SRC/scripts/onnx/opencv_run.py" "$TMP/$n.out.onnx" "$TMP/$n.in.f32" 12 12 3 "$TMP/$n.cv.f32" >/dev/null
  compare_f32 "$TMP/$n.cv.f32" "$TMP/$n.ours.f32" 1e-4 || fail "$n: OpenCV dnn disagrees with dltrain on the exported file"
done
# Dropout (an inference identity) between ConvNeXt's Transpose and LayerNormalization keeps the
# value channels-last: lnchannels with one inserted imports to lnchannels's outputs.
$PY - "$TMP" <<'PYEOF'
import sys, onnx
m = onnx.load(sys.argv[1] + "/lnchannels.onnx")
g = m.graph
i = next(k for k, n in enumerate(g.node) if n.op_type == "Transpose")
t = g.node[i].output[0]
for n in g.node:
    n.input[:] = [t + "_dropped" if v == t else v for v in n.input]
g.node.insert(i + 1, onnx.helper.make_node("Dropout", [t], [t + "_dropped"], name="drop_nhwc"))
onnx.save(m, sys.argv[1] + "/lndrop.onnx")
PYEOF
"$DLTRAIN" import "$TMP/lndrop.onnx" --output "$TMP/lndrop.bin" >/dev/null
"$DLTRAIN" info "$TMP/lndrop.bin" | grep -q ' dropout ' || fail "lndrop: no dropout layer"
"$DLTRAIN" export "$TMP/lndrop.bin" --debug-forward "$TMP/lnchannels.in.f32" --output "$TMP/lndrop.ours.f32"
compare_f32 "$TMP/lndrop.ours.f32" "$TMP/lnchannels.ours.f32" 1e-6 || fail "lndrop: Dropout on channels-last data changed the outputs"
# A network of dltrain's own: layerNormalization channel-only and spatial-channel and a
# squeeze-and-excitation block, trained on generated shapes (it learns: above the 25% of
# chance), exported, and run in OpenCV's dnn.
cat > "$TMP/se.yaml" <<'YAML'
layers:
  - {type: imageInput, Name: input, InputSize: [32, 32, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 16, Padding: same, WeightsInitializer: he}
  - {type: layerNormalization, Name: ln1, OperationDimension: channel-only}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: convolution2d, Name: conv2, FilterSize: 3, NumFilters: 32, Padding: same, WeightsInitializer: he}
  - {type: layerNormalization, Name: ln2}
  - {type: relu, Name: relu2}
  - {type: globalAveragePooling2d, Name: se_pool}
  - {type: convolution2d, Name: se_fc1, FilterSize: 1, NumFilters: 8}
  - {type: relu, Name: se_relu}
  - {type: convolution2d, Name: se_fc2, FilterSize: 1, NumFilters: 32}
  - {type: sigmoid, Name: se_gate}
  - {type: multiplication, Name: se_mul, Inputs: [se_gate, relu2]}
  - {type: maxPooling2d, Name: pool2, PoolSize: 2, Stride: 2}
  - {type: globalAveragePooling2d, Name: gap}
  - {type: fullyConnected, Name: fc, OutputSize: 4}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
training: {Solver: adam, InitialLearnRate: 0.003, MaxEpochs: 6, MiniBatchSize: 64, ExecutionEnvironment: cpu}
YAML
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 4 --per-class 250 --size 32x32 --seed 3 >/dev/null
"$DLTRAIN" train "$TMP/se.yaml" --quiet --output-dir "$TMP/run" --set data.train="$TMP/data/train" \
  --set data.validation="$TMP/data/test" --set training.Seed=5 >/dev/null
acc=$(json_number "$TMP/run/summary.json" validation_accuracy)
echo "  squeeze-and-excitation + layerNormalization on shapes: validation accuracy $acc%"
at_least "$acc" 35 || fail "the network with multiplication and layerNormalization did not learn ($acc%)"
$PY -c "import numpy as np; (np.random.default_rng(2).random((4, 32, 32, 3)) * 255).astype(np.float32).tofile('$TMP/se.in.f32')"
"$DLTRAIN" export "$TMP/run/model.bin" --debug-forward "$TMP/se.in.f32" --output "$TMP/trained.ours.f32"
"$DLTRAIN" export "$TMP/run/model.bin" --output "$TMP/trained.onnx" >/dev/null
$PY "$SRC/scripts/onnx/opencv_run.py" "$TMP/trained.onnx" "$TMP/se.in.f32" 32 32 3 "$TMP/trained.cv.f32" >/dev/null
compare_f32 "$TMP/trained.cv.f32" "$TMP/trained.ours.f32" 1e-4 || fail "OpenCV dnn disagrees with dltrain on the trained network"
# Unsupported forms: one line naming the node; nothing written.
$PY - "$TMP" <<'PYEOF' 2>/dev/null
import sys, torch, torch.nn as nn
class LnWidth(nn.Module):  # LayerNorm over the last axis of an NCHW image: over W only
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(3, 4, 3); self.ln = nn.LayerNorm(6)
    def forward(self, x): return self.ln(self.c(x))
class LnPixels(nn.Module):  # a scale that varies over the pixels
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(3, 4, 3); self.ln = nn.LayerNorm([4, 6, 6])
        with torch.no_grad(): self.ln.weight.copy_(torch.rand(4, 6, 6))
    def forward(self, x): return self.ln(self.c(x))
x = torch.rand(1, 3, 8, 8)
torch.onnx.export(LnWidth().eval(), x, sys.argv[1] + "/ln_width.onnx", opset_version=17)
torch.onnx.export(LnPixels().eval(), x, sys.argv[1] + "/ln_pixels.onnx", opset_version=17)
PYEOF
expect_error "LayerNormalization over W" 1 "axis -1 of an (N, C, H, W) image is not supported" -- \
  "$DLTRAIN" import "$TMP/ln_width.onnx" --output "$TMP/bad.bin"
expect_error "LayerNormalization scale per pixel" 1 "scale varies over height and width" -- \
  "$DLTRAIN" import "$TMP/ln_pixels.onnx" --output "$TMP/bad.bin"
[[ ! -e "$TMP/bad.bin" ]] || fail "a failed import left a file"
echo "PASS"

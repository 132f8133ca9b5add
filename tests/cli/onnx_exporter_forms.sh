#!/usr/bin/env bash
# ONNX forms written by PyTorch's exporters (Debian's PyTorch 1.13, TorchScript exporter, opset
# 13), imported and compared with PyTorch's class probabilities on the same random weights
# (max relative difference 1e-4): x.view(x.size(0), -1) with a symbolic batch (Shape / Gather /
# Unsqueeze / Concat folded to a Reshape target), x.mean((2, 3)) (ReduceMean), ConvNeXt's
# permute - Linear - ReLU - Linear - permute inside a residual block (Transpose to channels-last,
# MatMul as a 1x1 convolution), and the same models saved with their weights in an external
# data file beside the model (onnx.save_model(save_as_external_data=True)), read from there.
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
skip_without_onnx
$PY -c "import torch, numpy, onnx" 2>/dev/null || skip "/usr/bin/python3 lacks torch/numpy/onnx"
$PY - "$TMP" <<'PYEOF' 2>/dev/null
import os, sys, numpy as np, onnx, torch, torch.nn as nn
out = sys.argv[1]
torch.manual_seed(0)

class ViewNet(nn.Module):
    def __init__(s):
        super().__init__(); s.c = nn.Conv2d(3, 6, 3); s.fc = nn.Linear(6 * 6 * 6, 5)
    def forward(s, x):
        y = torch.relu(s.c(x)); return s.fc(y.view(y.size(0), -1))

class MeanNet(nn.Module):
    def __init__(s):
        super().__init__(); s.c = nn.Conv2d(3, 6, 3); s.fc = nn.Linear(6, 5)
    def forward(s, x):
        return s.fc(torch.relu(s.c(x)).mean((2, 3)))

class Block(nn.Module):  # ConvNeXt's inner Linear layers on channels-last data
    def __init__(s):
        super().__init__(); s.c = nn.Conv2d(3, 8, 3); s.l1 = nn.Linear(8, 16); s.l2 = nn.Linear(16, 8)
        s.fc = nn.Linear(8, 5)
    def forward(s, x):
        y = s.c(x)
        z = y.permute(0, 2, 3, 1)
        z = s.l2(torch.relu(s.l1(z)))
        y = y + z.permute(0, 3, 1, 2)
        return s.fc(y.mean((2, 3)))

x = torch.rand(2, 3, 8, 8) * 2 - 1
for name, net in (("viewnet", ViewNet()), ("meannet", MeanNet()), ("block", Block())):
    net.eval()
    for p in net.parameters():
        p.data.uniform_(-0.5, 0.5)
    path = f"{out}/{name}.onnx"
    torch.onnx.export(net, x[:1], path, opset_version=13, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
    with torch.no_grad():
        torch.softmax(net(x), 1).numpy().astype(np.float32).tofile(f"{out}/{name}.probs.f32")
    x.permute(0, 2, 3, 1).numpy().astype(np.float32).tofile(f"{out}/{name}.in.f32")
    # The same model with every weight in an external file in its own folder.
    os.makedirs(f"{out}/ext_{name}")
    m = onnx.load(path)
    onnx.save_model(m, f"{out}/ext_{name}/{name}.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location=f"{name}.onnx.data", size_threshold=0)
PYEOF
for n in viewnet meannet block; do
  grep -q "$n.onnx.data" "$TMP/ext_$n/$n.onnx" || fail "$n: the external-data copy holds no location"
  [[ -s "$TMP/ext_$n/$n.onnx.data" ]] || fail "$n: no external data file was written"
  for src in "$TMP/$n.onnx" "$TMP/ext_$n/$n.onnx"; do
    "$DLTRAIN" import "$src" --output "$TMP/$n.bin" >/dev/null || fail "$n: $src does not import"
    "$DLTRAIN" export "$TMP/$n.bin" --debug-forward "$TMP/$n.in.f32" --output "$TMP/$n.ours.f32"
    compare_f32 "$TMP/$n.ours.f32" "$TMP/$n.probs.f32" 1e-4 || fail "$n: dltrain's import of $src differs from PyTorch"
  done
done
# The data file moved out of the model's folder and linked back: refused, nothing written.
mv "$TMP/ext_meannet/meannet.onnx.data" "$TMP/meannet.onnx.data"
ln -s "$TMP/meannet.onnx.data" "$TMP/ext_meannet/meannet.onnx.data"
expect_error "external data through a link out of the folder" 1 "which is a link to '.*outside the model's folder" -- \
  "$DLTRAIN" import "$TMP/ext_meannet/meannet.onnx" --output "$TMP/bad.bin"
[[ ! -e "$TMP/bad.bin" ]] || fail "a failed import left a file"
echo "PASS"

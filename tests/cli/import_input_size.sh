#!/usr/bin/env bash
# dltrain import --input-size: an ONNX file whose input has symbolic sizes (N, 3, H, W) is
# refused with one line asking for it, and imports with it at that size.
source "$(dirname "$0")/common.sh" "$@"
skip_without_onnx
/usr/bin/python3 -c "import onnx" 2> /dev/null || skip "/usr/bin/python3 has no onnx module (apt-get install python3-onnx)"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 10 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: none}
  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu, Name: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data: {train: $TMP/data/train}
training: {MaxEpochs: 1, MiniBatchSize: 8, Verbose: false, ExecutionEnvironment: cpu, Seed: 1}
YAML
"$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 1 --output-dir "$TMP/run" > /dev/null 2>&1 || fail "training failed"
"$DLTRAIN" export "$TMP/run/model.bin" --output "$TMP/m.onnx" > /dev/null
/usr/bin/python3 - "$TMP/m.onnx" "$TMP/sym.onnx" <<'PY'
import onnx, sys
m = onnx.load(sys.argv[1])
dims = m.graph.input[0].type.tensor_type.shape.dim
for d, name in zip(list(dims)[2:], ["H", "W"]):
    d.ClearField("dim_value"); d.dim_param = name
onnx.save(m, sys.argv[2])
PY
expect_error "import, symbolic H and W, no --input-size" 1 "has symbolic sizes (give --input-size HxWxC)" -- \
  "$DLTRAIN" import "$TMP/sym.onnx" --output "$TMP/sym.bin"
"$DLTRAIN" import "$TMP/sym.onnx" --input-size 16x16x3 --output "$TMP/sym.bin" > /dev/null || fail "import --input-size failed"
"$DLTRAIN" info "$TMP/sym.bin" | grep -q 'imageInput *16x16x3' || fail "import --input-size 16x16x3: $("$DLTRAIN" info "$TMP/sym.bin" | head -3)"
echo "ok: import --input-size 16x16x3 gives a 16x16x3 input"

#!/usr/bin/env bash
# dltrain info (table and --json, from a config, a model and an ONNX file) and dltrain time; --json
# prints only JSON on stdout.
source "$(dirname "$0")/common.sh" "$@"
cfg="$SRC/configs/cifar10.yaml"
"$DLTRAIN" info "$cfg" --json > "$TMP/info.json"
# Seed 001's network: conv (5*5*3+1)*32 + (5*5*32+1)*32 + (5*5*32+1)*64, fc (3*3*64+1)*64 + (64+1)*10
learn=$(( (5*5*3+1)*32 + (5*5*32+1)*32 + (5*5*32+1)*64 + (3*3*64+1)*64 + (64+1)*10 ))
[[ $(json_number "$TMP/info.json" total_learnables) -eq $learn ]] || fail "total_learnables != $learn: $(cat "$TMP/info.json")"
[[ $(json_number "$TMP/info.json" memory_bytes) -eq $(( 4 * (learn + 32*32*3) )) ]] || fail "memory_bytes"
grep -q '"layers":\[{"name":"input","type":"imageInput","output_shape":"32x32x3","format":"SSCB","learnables":0}' "$TMP/info.json" \
  || fail "layers array format: $(head -c 200 "$TMP/info.json")"
grep -q '"flops_per_image":[1-9]' "$TMP/info.json" || fail "flops_per_image"
# stdout is data: --json prints one JSON object and nothing else (logs go to stderr).
json_only() { [[ $(wc -l < "$1") -eq 1 && $(head -c 1 "$1") == "{" && $(tail -c 2 "$1") == "}" ]] || fail "$2 --json printed more than JSON: $(head -c 300 "$1")"; }
json_only "$TMP/info.json" info
"$DLTRAIN" info "$cfg" > "$TMP/info.txt"
grep -q "Memory footprint:  $(( 4 * (learn + 32*32*3) )) bytes" "$TMP/info.txt" || fail "table: $(cat "$TMP/info.txt")"
# An ONNX file: the network its import makes (the SegFormer fixture: attention layers on images),
# nothing written; the same table as the imported model's.
if ! "$DLTRAIN" import /nonexistent.onnx --output "$TMP/x.bin" 2>&1 | grep -q "built without ONNX"; then
  sf="$SRC/tests/data/onnx_zoo/segformer_seg-torchscript.onnx"
  "$DLTRAIN" info "$sf" > "$TMP/onnx-info.txt" || fail "info of an ONNX file: $(tail -3 "$TMP/onnx-info.txt")"
  grep -q "attention  *8x8x16  *SSCB" "$TMP/onnx-info.txt" || fail "info of an ONNX file: $(head -20 "$TMP/onnx-info.txt")"
  "$DLTRAIN" import "$sf" --output "$TMP/sf.bin" > /dev/null || fail "import of the SegFormer fixture"
  "$DLTRAIN" info "$TMP/sf.bin" | diff - "$TMP/onnx-info.txt" > /dev/null || fail "info of the ONNX file differs from its import's"
fi

"$DLTRAIN" time "$cfg" --batch 8 --iterations 2 --warmup 1 --json > "$TMP/time.json"
json_only "$TMP/time.json" time
for key in train_images_per_second inference_images_per_second flops_per_image; do
  at_least "$(json_number "$TMP/time.json" $key)" 0.001 || fail "time: $key missing or zero: $(cat "$TMP/time.json")"
done
grep -q '"name":"conv2","type":"convolution2d","fused":false,"forward_ms":' "$TMP/time.json" || fail "time: per-layer rows"
# The GPU switches a benchmark reports, after the DLT_* overrides.
grep -q '"cudnn_engines":"auto","batch_norm_kernels":"cudnn","allow_reduced_precision_reduction":false,"cudnn_runtime_compiled":true' "$TMP/time.json" ||
  fail "time: switches: $(head -c 300 "$TMP/time.json")"
DLT_CUDNN_ENGINES=exhaustive DLT_BN_KERNELS=dltrain DLT_ALLOW_REDUCED_PRECISION_REDUCTION=1 DLT_CUDNN_RUNTIME_COMPILED=0 \
  "$DLTRAIN" time "$cfg" \
  --batch 2 --iterations 1 --warmup 0 --json > "$TMP/time-env.json"
grep -q '"cudnn_engines":"exhaustive","batch_norm_kernels":"dltrain","allow_reduced_precision_reduction":true,"cudnn_runtime_compiled":false' \
  "$TMP/time-env.json" || fail "time: switches from the environment: $(head -c 300 "$TMP/time-env.json")"
grep -q '"name":"relu2","type":"relu","fused":true' "$TMP/time.json" || fail "time: relu2 should be fused into conv2"
grep -q '"name":"conv2","type":"convolution2d","fused":false,"forward_ms":[0-9.e-]*,"backward_ms":[0-9.e-]*,"inference_ms":[0-9.e-]*}' \
  "$TMP/time.json" || fail "time: conv2's inference_ms: $(cat "$TMP/time.json")"
# In inference a convolution folds its batchNormalization and the ReLU after it: their rows
# name the convolution, in the table too.
"$DLTRAIN" time "$SRC/configs/cifar10-bn.yaml" --batch 4 --iterations 1 --warmup 0 --json > "$TMP/time-bn.json"
grep -q '"name":"bn2","type":"batchNormalization","fused":false,"forward_ms":[0-9.e-]*,"backward_ms":[0-9.e-]*,"inference_ms":0,"inference_in":"conv2"}' \
  "$TMP/time-bn.json" || fail "time: bn2 in conv2's inference step: $(cat "$TMP/time-bn.json")"
grep -q '"name":"relu2","type":"relu","fused":true,.*"inference_in":"conv2"}' "$TMP/time-bn.json" || fail "time: relu2's inference step"
"$DLTRAIN" time "$SRC/configs/cifar10-bn.yaml" --batch 4 --iterations 1 --warmup 0 > "$TMP/time-bn.txt"
grep -q "^bn2 .*(inference: in conv2)$" "$TMP/time-bn.txt" || fail "time table: bn2: $(cat "$TMP/time-bn.txt")"
grep -q "^conv2 .* [0-9.]*$" "$TMP/time-bn.txt" || fail "time table: conv2: $(cat "$TMP/time-bn.txt")"
# --gpu on a machine without a usable GPU: one line naming the problem, exit 3 (device error).
if ! "$DLTRAIN" time "$cfg" --batch 2 --iterations 1 --warmup 0 --gpu 0 >/dev/null 2>&1; then
  expect_error "time --gpu without a GPU" 3 "GPU\|CUDA" -- "$DLTRAIN" time "$cfg" --batch 2 --iterations 1 --gpu 0
fi
# A segmentation network from segnetLayers: info lists the generated layers, time trains it
# on per-pixel labels (pixelClassification with class weights).
cat > "$TMP/segnet.yaml" <<'YAML'
layers:
  segnetLayers: {ImageSize: [24, 32, 3], NumClasses: 4, EncoderDepth: 2, NumOutputChannels: 8, ClassWeights: [1, 2, 0.5, 1]}
YAML
"$DLTRAIN" info "$TMP/segnet.yaml" > "$TMP/segnet.txt" || fail "info on segnetLayers: $(cat "$TMP/segnet.txt")"
grep -q "decoder1_unpool *maxUnpooling2d *24x32x8" "$TMP/segnet.txt" || fail "segnet info: $(cat "$TMP/segnet.txt")"
grep -q "pixelLabels *pixelClassification *24x32x4" "$TMP/segnet.txt" || fail "segnet info: output layer"
"$DLTRAIN" time "$TMP/segnet.yaml" --batch 2 --iterations 2 --warmup 1 --json > "$TMP/segnet-time.json" ||
  fail "time on segnetLayers"
at_least "$(json_number "$TMP/segnet-time.json" train_images_per_second)" 0.001 || fail "segnet time: $(cat "$TMP/segnet-time.json")"
grep -q '"name":"encoder2_maxpool","type":"maxPooling2d"' "$TMP/segnet-time.json" || fail "segnet time: per-layer rows"
# unetLayers: MATLAB's names (the name column widens for the long ones), the up-convolutions
# double the size, the concatenations join the encoder's maps; time trains it.
cat > "$TMP/unet.yaml" <<'YAML'
layers:
  unetLayers: {ImageSize: [32, 48, 3], NumClasses: 4, EncoderDepth: 2, NumFirstEncoderFilters: 8}
YAML
"$DLTRAIN" info "$TMP/unet.yaml" > "$TMP/unet.txt" || fail "info on unetLayers: $(cat "$TMP/unet.txt")"
grep -q "Decoder-Stage-1-UpConv  *transposedConv2d  *16x24x16  *SSCB  *2064$" "$TMP/unet.txt" || fail "unet info: $(cat "$TMP/unet.txt")"
grep -q "Decoder-Stage-2-DepthConcatenation depthConcatenation  *32x48x16 " "$TMP/unet.txt" || fail "unet info: concatenation"
grep -q "Segmentation-Layer  *pixelClassification  *32x48x4 " "$TMP/unet.txt" || fail "unet info: output layer"
grep -q "Total learnables:  29492$" "$TMP/unet.txt" || fail "unet info: learnables"
"$DLTRAIN" time "$TMP/unet.yaml" --batch 2 --iterations 2 --warmup 1 --json > "$TMP/unet-time.json" ||
  fail "time on unetLayers"
at_least "$(json_number "$TMP/unet-time.json" train_images_per_second)" 0.001 || fail "unet time: $(cat "$TMP/unet-time.json")"
grep -q '"name":"Decoder-Stage-1-UpConv","type":"transposedConv2d"' "$TMP/unet-time.json" || fail "unet time: per-layer rows"
echo "info_time: ok"

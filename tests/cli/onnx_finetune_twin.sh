#!/usr/bin/env bash
# Fine-tuning an imported network matches PyTorch fine-tuning the same weights, step by step.
# scripts/onnx/finetune_twin.py (Debian's PyTorch 1.13 at test time) exports small MobileNetV2-
# and EfficientNet-like networks (batch norm kept, ReLU6 / SiLU, squeeze-and-excitation,
# residual additions) and a small vision transformer (class token, position table, a joint qkv
# projection split into heads, softmax attention written out, LayerNorm decomposed at opset 13,
# GELU) and trains them as dltrain's seed-000 config does: base: RemoveLast 3, a new
# zero-initialised fullyConnected with learn-rate factors 10 / 20, sgdm with momentum and L2,
# one full mini-batch per step. Asserts: the imported CNNs keep their batchNormalization
# layers, the ViT's attention is one selfAttention layer, the loss moves, and dltrain's loss at
# each step is PyTorch's within 1e-4 relative (the steps after the first two depend on the
# backbone's gradients: through batch norm in training mode, through the attention).
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
skip_without_onnx
$PY -c "import torch, numpy, cv2" 2>/dev/null || skip "/usr/bin/python3 lacks torch/numpy/cv2 (apt-get install python3-torch python3-opencv)"
for run in mobilenet:6:0.01 efficientnet:6:0.01 vit:8:0.03; do
  IFS=: read -r n STEPS LR <<< "$run"
  $PY "$SRC/scripts/onnx/finetune_twin.py" export "$TMP" $n 2>/dev/null
  $PY "$SRC/scripts/onnx/finetune_twin.py" train "$TMP" $n $STEPS $LR 2>/dev/null
  cat > "$TMP/$n.yaml" <<YAML
base: {Model: $TMP/$n.onnx, RemoveLast: 3}
layers:
  - {type: fullyConnected, Name: fc_new, OutputSize: 3, WeightsInitializer: zeros, WeightLearnRateFactor: 10, BiasLearnRateFactor: 20}
  - {type: softmax, Name: prob_new}
  - {type: classification, Name: output_new}
data: {train: $TMP/data/train}
training: {Solver: sgdm, Momentum: 0.9, L2Regularization: 0.0001, MiniBatchSize: 12, MaxEpochs: $STEPS,
           InitialLearnRate: $LR, Shuffle: never, ExecutionEnvironment: cpu, Plots: none}
YAML
  if [[ $n == vit ]]; then
    attn=$("$DLTRAIN" info "$TMP/$n.yaml" | grep -c ' selfAttention ' || true)
    [[ $attn -eq 1 ]] || fail "$n: the imported network has $attn selfAttention layers, PyTorch's block has 1"
  else
    bn=$("$DLTRAIN" info "$TMP/$n.yaml" | grep -c ' batchNormalization ' || true)
    [[ $bn -eq 8 ]] || fail "$n: the imported network has $bn batchNormalization layers, PyTorch's has 8"
  fi
  "$DLTRAIN" train "$TMP/$n.yaml" --output-dir "$TMP/run-$n" --quiet --threads 1 >/dev/null 2>&1
  tail -n +2 "$TMP/run-$n/log.csv" | cut -d, -f6 > "$TMP/$n.ours.txt"
  $PY - "$TMP/$n.ours.txt" "$TMP/$n.losses.txt" $n $STEPS <<'PYEOF' || fail "$n: dltrain's fine-tuning losses differ from PyTorch's"
import sys
ours = [float(v) for v in open(sys.argv[1]).read().split()]
torch_ = [float(v) for v in open(sys.argv[2]).read().split()]
assert len(ours) == len(torch_) == int(sys.argv[4]), (ours, torch_)
rel = max(abs(a - b) / b for a, b in zip(ours, torch_))
print(f"  {sys.argv[3]}: losses dltrain {' '.join(f'{v:.5f}' for v in ours)}; PyTorch {' '.join(f'{v:.5f}' for v in torch_)}; "
      f"max relative difference {rel:.1e}")
assert torch_[-1] < 0.8 * torch_[0], "the loss did not move: the twin is not a fine-tuning test"
sys.exit(0 if rel <= 1e-4 else 1)
PYEOF
done
echo "PASS"

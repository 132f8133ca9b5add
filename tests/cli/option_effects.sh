#!/usr/bin/env bash
# Options that change the step, each checked by what it must do to the weights (a run that
# ignored the option fails). Every run trains ONE iteration (the whole training set in one
# batch, Seed fixed, so every run starts from the same weights and sees the same gradient g at
# them); two runs whose learning rates are a and 2a then differ by exactly the step of rate a:
#   sgdm:     W(2a) - W(a) = -a g                                (magnitudes vary with g)
#   rmsprop:  first step a g / (sqrt((1 - b) g^2) + eps): every |difference| is a / sqrt(1 - b)
#             where |g| is far above Epsilon (g from the sgdm runs; at most that elsewhere)
#             (b = SquaredGradientDecayFactor; 0.9 by default, 0.99 set here: 10 a)
#   GradientThreshold T with l2norm: each learnable's difference has L2 norm a T; with
#             global-l2norm all of them together; with absolute-value no |difference| over a T
#   Augmentation (RandXReflection, PadCrop): another gradient, other weights than without.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 10 --size 8x8 --seed 4 > /dev/null
n=$(find "$TMP/data/train" -name '*.png' | wc -l)
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [8, 8, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu, Name: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
training:
  Solver: sgdm
  InitialLearnRate: 0.001
  L2Regularization: 0
  MaxEpochs: 1
  MiniBatchSize: $n
  Shuffle: never
  Verbose: false
  ExecutionEnvironment: cpu
  Seed: 9
YAML
one_step() {  # one_step NAME [--set ...]: one iteration into $TMP/NAME
  local name=$1
  shift
  "$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 1 --output-dir "$TMP/$name" "$@" > "$TMP/$name.log" 2>&1 \
    || fail "$name: training failed: $(cat "$TMP/$name.log")"
}
# step_check KIND A.bin B.bin VALUE: checks B - A (python below) and prints what it measured
step_check() {
  python3 - "$SRC/tests/dist" "$@" <<'PY'
import math, sys
sys.path.insert(0, sys.argv[1])
from compare_models import read_tensors
kind, a, b, value = sys.argv[2], read_tensors(sys.argv[3]), read_tensors(sys.argv[4]), float(sys.argv[5])
d = {k: [y - x for x, y in zip(a[k], b[k])] for k in a if k.startswith("PARM:")}
flat = [v for k in d for v in d[k]]
if kind == "rmsprop":        # |difference| = value where a sgdm's g is far above eps (sgdm's files follow)
    sa, sb, a_rate = read_tensors(sys.argv[6]), read_tensors(sys.argv[7]), float(sys.argv[8])
    g = [abs(y - x) / a_rate for k in d for x, y in zip(sa[k], sb[k])]
    big = [abs(v) for v, gi in zip(flat, g) if gi > 1e-3]  # sqrt(1 - b) |g| >= 10^4 eps (1e-8)
    worst = max(abs(m - value) / value for m in big)
    over = sum(abs(v) > value * (1 + 1e-3) for v in flat)
    print(f"  {len(big)} of {len(flat)} with |g| > 1e-3: |difference| / {value:.6g} in [{min(big) / value:.6f}, {max(big) / value:.6f}]; {over} above")
    sys.exit(0 if worst < 1e-3 and over == 0 and len(big) > len(flat) // 2 else 1)
if kind == "not-all-equal":  # the magnitudes vary (the control: the check above can fail)
    lo, hi = min(map(abs, flat)), max(map(abs, flat))
    print(f"  {len(flat)} differences, |difference| from {lo:.3g} to {hi:.3g}")
    sys.exit(0 if hi > 2 * lo else 1)
if kind == "norm-each":      # each learnable's difference has L2 norm value
    norms = {k: math.sqrt(sum(v * v for v in d[k])) for k in d}
    print("  " + ", ".join(f"{k[5:]} {n / value:.6f}" for k, n in norms.items()) + f" (x {value:.6g})")
    sys.exit(0 if all(abs(n - value) / value < 1e-3 for n in norms.values()) else 1)
if kind == "norm-all":       # all differences together have L2 norm value
    n = math.sqrt(sum(v * v for v in flat))
    print(f"  global L2 norm {n / value:.6f} x {value:.6g}")
    sys.exit(0 if abs(n - value) / value < 1e-3 else 1)
if kind == "max-abs":        # no |difference| above value, and some at it (clipped)
    at = sum(abs(abs(v) - value) / value < 1e-3 for v in flat)
    over = sum(abs(v) > value * (1 + 1e-3) for v in flat)
    print(f"  {len(flat)} differences, {at} at the threshold x rate, {over} above it")
    sys.exit(0 if over == 0 and at > 0 else 1)
if kind == "differ":         # some weight differs
    worst = max(abs(v) for v in flat)
    print(f"  largest difference {worst:.3g}")
    sys.exit(0 if worst > value else 1)
sys.exit(f"unknown kind {kind}")
PY
}
a=0.001
lr() { echo "--set training.InitialLearnRate=$1"; }
# shellcheck disable=SC2046  # lr's words
{
  one_step sgdm_a $(lr $a); one_step sgdm_2a $(lr 0.002)
  echo "sgdm, W(2a) - W(a) = -a g:"
  step_check not-all-equal "$TMP/sgdm_a/model.bin" "$TMP/sgdm_2a/model.bin" 0 || fail "sgdm: step magnitudes all equal"

  rms=(--set training.Solver=rmsprop --set training.SquaredGradientDecayFactor=0.99)
  one_step rms_a $(lr $a) "${rms[@]}"; one_step rms_2a $(lr 0.002) "${rms[@]}"
  echo "rmsprop (SquaredGradientDecayFactor 0.99), every |W(2a) - W(a)| = a / sqrt(0.01) = 10 a:"
  step_check rmsprop "$TMP/rms_a/model.bin" "$TMP/rms_2a/model.bin" 0.01 "$TMP/sgdm_a/model.bin" \
    "$TMP/sgdm_2a/model.bin" $a || fail "rmsprop: not the first rmsprop step"

  for method in l2norm global-l2norm absolute-value; do
    gt=(--set training.GradientThreshold=0.05 --set training.GradientThresholdMethod=$method)
    one_step "gt_${method}_a" $(lr $a) "${gt[@]}"; one_step "gt_${method}_2a" $(lr 0.002) "${gt[@]}"
    kind=norm-each
    [[ $method == global-l2norm ]] && kind=norm-all
    [[ $method == absolute-value ]] && kind=max-abs
    echo "GradientThreshold 0.05, $method: a x 0.05 = 5e-05:"
    step_check $kind "$TMP/gt_${method}_a/model.bin" "$TMP/gt_${method}_2a/model.bin" 5e-05 \
      || fail "GradientThreshold ($method): the step is not clipped to the threshold"
  done

  for aug in "Augmentation={RandXReflection: true}" "Augmentation={PadCrop: 2}"; do
    one_step aug "--set" "data.$aug"
    echo "data.$aug against none, from the same weights:"
    step_check differ "$TMP/sgdm_a/model.bin" "$TMP/aug/model.bin" 1e-7 || fail "data.$aug changed nothing"
    rm -rf "$TMP/aug"
  done
}
echo "option effects: ok"

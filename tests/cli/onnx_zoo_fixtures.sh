#!/usr/bin/env bash
# Today's torchvision architectures as today's PyTorch exports them: the fixtures in
# tests/data/onnx_zoo (scripts/onnx/make_zoo_fixtures.py: shrunk networks at 32x32, both
# exporters, the dynamo ones with their weights in NAME.onnx.data) are imported, run on their
# stored input (dltrain export --debug-forward) and compared with onnxruntime's stored class
# probabilities: largest absolute difference <= 1e-4; each then exports back to ONNX. Every
# fixture must pass (a fixture that does not import fails the test).
source "$(dirname "$0")/common.sh" "$@"
if "$DLTRAIN" import /nonexistent.onnx --output "$TMP/x.bin" 2>&1 | grep -q "built without ONNX"; then
  skip "this dltrain was built without ONNX support"
fi
DIR="$SRC/tests/data/onnx_zoo"
TOL=1e-4

# max_diff OUT.f32 EXPECTED.txt: the largest absolute difference (fails on a count mismatch)
max_diff() {
  paste <(od -An -v -tf4 "$1" | tr -s ' ' '\n' | sed '/^$/d') <(tr -s ' ' '\n' < "$2" | sed '/^$/d') |
    awk -F'\t' '$1 == "" || $2 == "" { bad = 1 } { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++ }
                END { if (bad || n == 0) { print "count-mismatch"; exit 1 } printf "%.3g\n", m }'
}

# check NAME: imports, agrees with onnxruntime, exports back; prints the difference, or
# returns 1 with the reason on stdout
check() {
  local n=$1 out diff
  if ! out=$("$DLTRAIN" import "$DIR/$n.onnx" --output "$TMP/$n.bin" 2>&1 >/dev/null); then
    echo "import: $(printf '%s\n' "$out" | grep -m1 error | sed "s|^dltrain: error: $DIR/||")"; return 1
  fi
  if ! out=$("$DLTRAIN" export "$TMP/$n.bin" --debug-forward "$DIR/$n.input.f32" --output "$TMP/$n.f32" 2>&1); then
    echo "forward: $(printf '%s\n' "$out" | grep -m1 error)"; return 1
  fi
  diff=$(max_diff "$TMP/$n.f32" "$DIR/$n.expected.txt") || { echo "output: $diff"; return 1; }
  if ! awk -v d="$diff" -v t="$TOL" 'BEGIN { exit !(d <= t) }'; then
    echo "probabilities differ from onnxruntime's by $diff (over $TOL)"; return 1
  fi
  if ! out=$("$DLTRAIN" export "$TMP/$n.bin" --output "$TMP/$n.out.onnx" 2>&1 >/dev/null); then
    echo "export: $(printf '%s\n' "$out" | grep -m1 error)"; return 1
  fi
  [[ -s "$TMP/$n.out.onnx" ]] || { echo "export wrote no file"; return 1; }
  echo "$diff"
}

# Every fixture is complete (model, input, expected output; the dynamo ones' external data).
fixtures=()
for f in "$DIR"/*.onnx; do
  n=$(basename "$f" .onnx)
  fixtures+=("$n")
  [[ -s "$DIR/$n.input.f32" && -s "$DIR/$n.expected.txt" ]] || fail "$n: no $n.input.f32 or $n.expected.txt beside it"
  [[ $n != *-dynamo || -s "$DIR/$n.onnx.data" ]] || fail "$n: the dynamo fixture has no $n.onnx.data"
done
[[ ${#fixtures[@]} -ge 128 ]] ||
  fail "only ${#fixtures[@]} fixtures in $DIR (scripts/onnx/make_zoo_fixtures.py writes 128)"
for n in beit_timm cait_timm convit_timm eva_timm eva_half_timm caformer_timm xcit_timm edgenext_timm levit_timm coatnet_timm convnext cross_attention crossvit_timm davit_timm deeplabv3_seg deit3 deit_distilled densenet efficientformer_timm efficientformerv2_timm efficientnet_b0 efficientvit_timm fastvit_timm fcn_seg focalnet_timm gcvit_timm flatten_max group_norm interpolate lraspp_seg \
  mambaout_timm maxvit maxvit_timm maxvit_timm_rw mnasnet mobilenet_v2 mobilenet_v3_small mobilevit mobilevitv2_timm mobilenetv4_timm nextvit_timm pit_distilled_timm pit_timm poolformer_timm prelu pvt_v2_timm regnet_y \
  resnet_basic resnext_bottleneck segformer_seg shufflenet_v2 shvit_timm swin swin_timm swin_v2 swin_v2_timm swin_v2_cr_timm tinyvit_timm twins_timm visformer_timm twins_pcpvt_timm vit vit_timm; do
  for e in dynamo torchscript; do
    [[ -e "$DIR/$n-$e.onnx" ]] || fail "fixture $n-$e.onnx is missing from $DIR"
  done
done

# Written by one exporter only (make_zoo_fixtures.py's SKIP_EXPORTERS).
for f in eva_mixed_timm-dynamo nest_timm-torchscript; do
  [[ -e "$DIR/$f.onnx" ]] || fail "fixture $f.onnx is missing from $DIR"
done

for n in "${fixtures[@]}"; do
  r=$(check "$n") || fail "$n: $r"
  echo "ok: $n (largest difference $r)"
done
echo "PASS (${#fixtures[@]} fixtures)"

#!/usr/bin/env bash
# The CLI's messages name the problem and the fix: a mistyped subcommand, a MATLAB option
# dltrain does not have, a --set key without its section, a YAML config or an ONNX file given
# as the model, one skip warning per bad image, precision and recall as fractions.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 40 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/c.yaml" <<YAML
layers:
  - {type: imageInput, InputSize: [16, 16, 3]}
  - {type: convolution2d, FilterSize: 3, NumFilters: 4}
  - {type: relu}
  - {type: fullyConnected, OutputSize: 3}
  - {type: softmax}
  - {type: classification}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  MaxEpochs: 2
  MiniBatchSize: 16
  Verbose: false
  Plots: none
YAML

# expect_exact "what" CODE "the whole stderr" -- command...
expect_exact() {
  local what=$1 code=$2 want=$3
  shift 4
  local out rc=0
  out=$("$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq $code ]] || fail "$what: exit code $rc, expected $code (stderr: $out)"
  [[ $out == "$want" ]] || fail "$what: stderr is '$out', expected '$want'"
  echo "ok: $what -> $out"
}

expect_exact "subcommand typo" 2 \
  "dltrain: error: unknown subcommand 'trian'; did you mean 'train'? (see dltrain --help)" -- \
  "$DLTRAIN" trian "$TMP/c.yaml"
expect_exact "subcommand typo before --help" 2 \
  "dltrain: error: unknown subcommand 'clasify'; did you mean 'classify'? (see dltrain --help)" -- \
  "$DLTRAIN" clasify --help
expect_exact "a config in place of the subcommand" 2 \
  "dltrain: error: unknown subcommand '$TMP/c.yaml'; to train from this config: dltrain train $TMP/c.yaml (see dltrain --help)" -- \
  "$DLTRAIN" "$TMP/c.yaml"
expect_exact "unknown subcommand" 2 \
  "dltrain: error: unknown subcommand 'fly'; the subcommands are train, classify, predict, segment, info, time, make-dataset, report, import, export (see dltrain --help)" -- \
  "$DLTRAIN" fly

sed 's/^  Plots: none$/  Plots: none\n  Acceleration: auto/' "$TMP/c.yaml" > "$TMP/accel.yaml"
expect_exact "a MATLAB option dltrain does not have" 2 \
  "dltrain: error: $TMP/accel.yaml:16: training.Acceleration is a MATLAB option dltrain does not have (remove it; docs/matlab.md lists them)" -- \
  "$DLTRAIN" train "$TMP/accel.yaml" --output-dir "$TMP/no"
expect_exact "--set key without its section" 2 \
  "dltrain: error: --set MaxEpochs=1: unknown section 'MaxEpochs' (did you mean training.MaxEpochs=1?)" -- \
  "$DLTRAIN" train "$TMP/c.yaml" --set MaxEpochs=1 --output-dir "$TMP/no"
[[ ! -e $TMP/no ]] || fail "a refused config left $TMP/no"

"$DLTRAIN" train "$TMP/c.yaml" --output-dir "$TMP/run" > /dev/null 2>&1 || fail "training failed"
expect_exact "classify given the config" 2 \
  "dltrain: error: $TMP/c.yaml is a YAML config, not a model: train it first (dltrain train $TMP/c.yaml), then give dltrain classify the model.bin it writes" -- \
  "$DLTRAIN" classify "$TMP/c.yaml" "$TMP/data/test"
cp "$TMP/c.yaml" "$TMP/config.txt"
expect_exact "segment given a config without .yaml" 2 \
  "dltrain: error: $TMP/config.txt is a YAML config, not a model: train it first (dltrain train $TMP/config.txt), then give dltrain segment the model.bin it writes" -- \
  "$DLTRAIN" segment "$TMP/config.txt" "$TMP/data/test"
# ONNX ModelProto's first bytes (ir_version 7, producer_name "pytorch"), named .bin.
printf '\x08\x07\x12\x07pytorch' > "$TMP/net.bin"
expect_exact "classify given an ONNX file" 2 \
  "dltrain: error: $TMP/net.bin is an ONNX model; dltrain classify takes a dltrain model: import it first (dltrain import $TMP/net.bin --output model.bin)" -- \
  "$DLTRAIN" classify "$TMP/net.bin" "$TMP/data/test"
printf '\x00\x01\x02\x03 neither a model nor text' > "$TMP/junk.bin"
expect_exact "classify given other bytes" 1 "dltrain: error: $TMP/junk.bin: not a dltrain model (bad magic)" -- \
  "$DLTRAIN" classify "$TMP/junk.bin" "$TMP/data/test"

# One warning per bad image (the normalization pass and training read it both), with the
# advice that fits OnBadImage: skip.
echo garbage > "$TMP/data/train/circle/zz_bad.png"
"$DLTRAIN" train "$TMP/c.yaml" --output-dir "$TMP/skip" --set data.OnBadImage=skip > /dev/null 2> "$TMP/skip.err" ||
  fail "OnBadImage skip: $(cat "$TMP/skip.err")"
grep warning "$TMP/skip.err" > "$TMP/warnings" || true
want="warning: skipping bad image: $TMP/data/train/circle/zz_bad.png: cannot decode image: stb_image: unknown image type (not a PNG, JPEG, BMP, TGA, GIF or PNM image?) (OnBadImage: skip leaves it out; replace the file to use it)"
[[ $(cat "$TMP/warnings") == "$want" ]] || fail "OnBadImage skip warnings: $(cat "$TMP/warnings")"
[[ $(json_number "$TMP/skip/summary.json" skipped_images) -eq 1 ]] || fail "skipped_images: $(cat "$TMP/skip/summary.json")"
echo "ok: one skip warning -> $want"
rm "$TMP/data/train/circle/zz_bad.png"

# classify: accuracy in percent, precision and recall as fractions 0..1 (as training's Metrics).
"$DLTRAIN" classify "$TMP/run/model.bin" "$TMP/data/test" --output "$TMP/p.csv" > "$TMP/report.txt"
"$DLTRAIN" classify "$TMP/run/model.bin" "$TMP/data/test" --json > "$TMP/p.json"
grep -Eq '^Accuracy: [0-9]+\.[0-9]{2}% \(24 images\)$' "$TMP/report.txt" || fail "accuracy line: $(cat "$TMP/report.txt")"
rows=$(grep -cE '^(circle|square|triangle) +(-|[01]\.[0-9]{4}) +(-|[01]\.[0-9]{4}) +8$' "$TMP/report.txt" || true)
[[ $rows -eq 3 ]] || fail "per-class rows are not fractions: $(cat "$TMP/report.txt")"
! grep -q '%.*%' "$TMP/report.txt" || fail "a percent in the per-class table: $(cat "$TMP/report.txt")"
python3 - "$TMP/p.json" <<'PY' || fail "classify --json precision/recall not in 0..1"
import json, sys
j = json.load(open(sys.argv[1]))
assert 0 <= j["accuracy"] <= 100
preds = j["predictions"]
for c in j["per_class"]:  # the fractions recomputed from the predictions
    tp = sum(1 for p in preds if p["label"] == c["class"] and p["true_label"] == c["class"])
    predicted = sum(1 for p in preds if p["label"] == c["class"])
    true = sum(1 for p in preds if p["true_label"] == c["class"])
    assert c["precision"] is None if predicted == 0 else abs(c["precision"] - tp / predicted) < 1e-9, c
    assert abs(c["recall"] - tp / true) < 1e-9, c
right = sum(1 for p in preds if p["label"] == p["true_label"])
assert abs(j["accuracy"] - 100.0 * right / len(preds)) < 1e-9
PY
echo "ok: classify reports accuracy in percent, precision and recall as fractions"

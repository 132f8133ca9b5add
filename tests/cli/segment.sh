#!/usr/bin/env bash
# dltrain segment: label and overlay PNGs at each image's size, metrics.json equal to the
# metrics recomputed independently (tests/cli/seg_check.py: numpy, its own PNG codec) from the
# written predictions and the truth, --colour and --label-ids with RGB label images, and bad
# input (a missing partner, a size mismatch, a label colour the LabelIDs cannot read, bad
# --label-ids): one line, non-zero exit, no outputs left behind. The model is a real per-pixel
# network with fixed weights written by the test binary (tests/net/test_seg_model.cpp).
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
CHECK="$SRC/tests/cli/seg_check.py"
TESTS="$(dirname "$DLTRAIN")/tests/dltrain_tests"
[[ -x "$TESTS" ]] || fail "$TESTS not built (it writes the fixture model)"
$PY -c "import numpy" 2>/dev/null || skip "/usr/bin/python3 has no numpy"
DLT_SEG_MODEL="$TMP/seg.bin" DLT_CLASS_MODEL="$TMP/class.bin" "$TESTS" "[make_seg_model]" > "$TMP/make.log" || fail "writing the model: $(cat "$TMP/make.log")"
$PY "$CHECK" make "$TMP/data"
img="$TMP/data/img"

# Index labels (the model stores no LabelIDs: class c is value c), --json prints only JSON.
"$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/data/lab" --output "$TMP/out" --json --batch 2 > "$TMP/seg.json" \
  || fail "segment --json"
[[ $(wc -l < "$TMP/seg.json") -eq 1 && $(head -c 1 "$TMP/seg.json") == "{" ]] || fail "--json printed more than JSON"
grep -q '"label_ids":"index"' "$TMP/seg.json" || fail "label_ids source: $(head -c 300 "$TMP/seg.json")"
$PY -c "import json, sys; j = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
assert j['DataSetMetrics'] == m['DataSetMetrics'] and j['ClassMetrics'] == m['ClassMetrics'], 'metrics differ'
assert [f['labels'] for f in j['files']] == ['a.png', 'b.png', 'c.png', 'd.png', 'e.png'], j['files']" \
  "$TMP/seg.json" "$TMP/out/metrics.json" || fail "--json is not metrics.json's metrics: $(head -c 300 "$TMP/seg.json")"
[[ $(ls "$TMP/out" | wc -l) -eq 11 ]] || fail "expected 5 label PNGs, 5 overlays, metrics.json: $(ls -a "$TMP/out")"
[[ -z $(ls -A "$TMP/out" | grep '^\.') ]] || fail "temporary files left: $(ls -A "$TMP/out")"
$PY "$CHECK" check "$TMP/out" "$img" "$TMP/data/lab" || fail "metrics or outputs disagree"
# The fixed network labels red, blue and green pixels right except near edges.
at_least "$(json_number "$TMP/out/metrics.json" GlobalAccuracy)" 0.9 || fail "GlobalAccuracy: $(cat "$TMP/out/metrics.json")"

# The report for people on stdout.
"$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/data/lab" --output "$TMP/out-text" > "$TMP/report.txt"
grep -q "GlobalAccuracy *MeanAccuracy *MeanIoU *WeightedIoU *MeanBFScore" "$TMP/report.txt" || fail "report: $(cat "$TMP/report.txt")"
grep -q "^background " "$TMP/report.txt" || fail "report class rows: $(cat "$TMP/report.txt")"
cmp -s "$TMP/out/metrics.json" "$TMP/out-text/metrics.json" || fail "--batch changed the metrics"

# Without labels: predictions and overlays only.
"$DLTRAIN" segment "$TMP/seg.bin" "$img/b.png" --output "$TMP/out-nolab" > /dev/null
[[ $(ls "$TMP/out-nolab") == $'b.png\nb_overlay.png' ]] || fail "no-label outputs: $(ls "$TMP/out-nolab")"

# RGB label images read through --label-ids; --colour writes those colours.
ids='[[0,255,0], [255,0,0], [0,0,255]]'
"$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/data/labrgb" --label-ids "$ids" --colour \
  --output "$TMP/out-rgb" --json > "$TMP/rgb.json" || fail "segment --label-ids --colour"
$PY "$CHECK" check "$TMP/out-rgb" "$img" "$TMP/data/labrgb" --colour --label-rgb || fail "RGB labels"
# The same truth in another form: the same metrics as the index labels, to the byte.
cmp -s "$TMP/out-rgb/metrics.json" "$TMP/out/metrics.json" || fail "RGB and index labels disagree"

# Bad input: one line, exit code, nothing written (an existing output folder keeps its files).
no_outputs() { [[ ! -e "$TMP/bad" ]] || fail "$1: left $(ls -A "$TMP/bad")"; }
cp -r "$TMP/data/lab" "$TMP/lab-missing"; rm "$TMP/lab-missing/c.png"
expect_error "missing label partner" 1 "c.png: no label image named c" -- \
  "$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/lab-missing" --output "$TMP/bad"
no_outputs "missing partner"
cp -r "$TMP/data/lab" "$TMP/lab-size"; cp "$TMP/data/lab/a.png" "$TMP/lab-size/d.png"
expect_error "label size mismatch" 1 "lab-size/d.png is 16x12.*d.png is 20x30" -- \
  "$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/lab-size" --output "$TMP/bad"
no_outputs "size mismatch"
# RGB label images with integer (index) LabelIDs: found while decoding the first pair, after
# outputs were written to the temporary folder; a pre-existing folder keeps just its own file.
mkdir -p "$TMP/keep" && echo keep > "$TMP/keep/notes.txt"
expect_error "colour labels with integer LabelIDs" 1 "labrgb/a.png: label image is in colour" -- \
  "$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/data/labrgb" --output "$TMP/keep"
[[ $(ls -A "$TMP/keep") == "notes.txt" ]] || fail "failure left outputs: $(ls -A "$TMP/keep")"
expect_error "colour labels, fresh folder" 1 "label image is in colour" -- \
  "$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/data/labrgb" --output "$TMP/bad"
no_outputs "colour labels"
expect_error "bad --label-ids" 2 "label-ids" -- \
  "$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/data/lab" --label-ids "[0, 1" --output "$TMP/bad"
expect_error "--label-ids for too few classes" 2 "ClassNames has 3 classes but LabelIDs has 2" -- \
  "$DLTRAIN" segment "$TMP/seg.bin" "$img" --labels "$TMP/data/lab" --label-ids "0, 1" --output "$TMP/bad"
no_outputs "bad --label-ids"
mkdir -p "$TMP/twins/x" && cp "$img/a.png" "$TMP/twins/a.png" && cp "$img/b.png" "$TMP/twins/x/a.png"
expect_error "two images with one stem" 1 "would overwrite" -- \
  "$DLTRAIN" segment "$TMP/seg.bin" "$TMP/twins" --output "$TMP/bad"
no_outputs "two images with one stem"
expect_error "an image classifier" 2 "class.bin: the network does not end in pixelClassification" -- \
  "$DLTRAIN" segment "$TMP/class.bin" "$img" --output "$TMP/bad"
no_outputs "an image classifier"
expect_error "not a model" 1 "notes.txt" -- "$DLTRAIN" segment "$TMP/keep/notes.txt" "$img" --output "$TMP/bad"
expect_error "no such image" 1 "missing.png: no such file" -- "$DLTRAIN" segment "$TMP/seg.bin" "$TMP/missing.png" --output "$TMP/bad"
no_outputs "bad paths"
echo "segment: ok"

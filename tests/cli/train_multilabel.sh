#!/usr/bin/env bash
# Multi-label classification end to end: make-dataset shapes-multi (1-3 kinds of shape per
# image), a network ending in a sigmoid trained with training.Loss binary-crossentropy; the
# validation F1 (micro, threshold 0.5) ends well above what labelling every image with every
# kind gives; log.csv and summary.json carry f1; `dltrain classify --table` on the validation
# table gives counts from which F1 is recomputed here in awk, equal to summary.json's.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes-multi "$TMP/data" --classes 3 --count 400 --size 16x16 --seed 2 > /dev/null
cat > "$TMP/multi.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 16, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization}
  - {type: relu}
  - {type: maxPooling2d, PoolSize: 2, Stride: 2}
  - {type: convolution2d, Name: conv2, FilterSize: 3, NumFilters: 16, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization}
  - {type: relu}
  - {type: globalAveragePooling2d}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: sigmoid, Name: sigmoid}
data:
  train: $TMP/data/train.csv
  validation: $TMP/data/test.csv
training:
  Loss: binary-crossentropy
  Solver: adam
  InitialLearnRate: 0.01
  MaxEpochs: 15
  MiniBatchSize: 32
  ValidationFrequency: 10
  Metrics: [fscore, precision, recall, iou]
  Seed: 1
  Verbose: false
YAML
run="$TMP/run"
"$DLTRAIN" train "$TMP/multi.yaml" --output-dir "$run" > "$TMP/train.out"
grep -q "validation F1" "$TMP/train.out" || fail "the final line names no F1: $(cat "$TMP/train.out")"
head -1 "$run/log.csv" | grep -q "^epoch,iteration,time_elapsed_seconds,minibatch_f1,validation_f1,minibatch_loss,validation_loss,base_learning_rate,validation_fscore,validation_precision,validation_recall,validation_iou$" ||
  fail "log.csv header: $(head -1 "$run/log.csv")"
grep -q '"task":"multilabel"' "$run/summary.json" || fail "summary.json names no task"
f1=$(json_number "$run/summary.json" validation_f1)
# Every kind on every image: precision = the share of (image, kind) pairs that are true.
base=$(awk -F, 'NR > 1 { n++; k += split($2, a, ";") } END { p = k / (3 * n); printf "%.4f", 2 * p / (1 + p) }' "$TMP/data/test.csv")
awk -v f="$f1" -v b="$base" 'BEGIN { exit !(f > b + 0.15) }' || fail "validation F1 $f1: not learned (every kind everywhere: $base)"
echo "ok: multi-label trains: validation F1 $f1 (every kind on every image: $base)"

"$DLTRAIN" classify "$run/model.bin" --table "$TMP/data/test.csv" --output "$TMP/pred.csv" > "$TMP/classify.out" 2>&1
# F1 from the predicted label sets against the table.
f1b=$(awk -F, '
  NR == FNR { if (FNR > 1) truth[$1] = $2; next }
  FNR == 1 { for (i = 1; i <= NF; i++) if ($i == "labels") c = i; next }
  {
    n = split($1, parts, "/"); key = parts[n - 1] "/" parts[n]
    if (!(key in truth)) { print "missing " key > "/dev/stderr"; exit 1 }
    delete t; delete p
    m = split(truth[key], a, ";"); for (j = 1; j <= m; j++) t[a[j]] = 1
    m = split($c, a, ";"); for (j = 1; j <= m; j++) if (a[j] != "") p[a[j]] = 1
    for (x in p) { if (x in t) tp++; else fp++ }
    for (x in t) if (!(x in p)) fn++
  }
  END { printf "%.6f", 2 * tp / (2 * tp + fp + fn) }' "$TMP/data/test.csv" "$TMP/pred.csv")
awk -v a="$f1" -v b="$f1b" 'BEGIN { d = a - b; exit !(d < 1e-3 && d > -1e-3) }' ||
  fail "F1 from classify's labels $f1b, summary.json $f1 (head of predictions: $(head -3 "$TMP/pred.csv"))"
echo "ok: classify --table's labels give summary.json's F1 $f1b"
expect_error "binary-crossentropy on class folders" 2 "needs a label set per image" -- \
  "$DLTRAIN" train "$TMP/multi.yaml" --set "data.train=$TMP/data" --output-dir "$TMP/bad"

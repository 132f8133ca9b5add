#!/usr/bin/env bash
# Metrics, ObjectiveMetricName and TensorBoard end to end on a tiny network:
# - log.csv gets validation_<metric> columns after the fixed ones, summary.json the final values;
# - ObjectiveMetricName fscore + OutputNetwork best-validation saves the best-fscore network: the
#   saved model.bin, classified by `dltrain classify` (all class scores), gives a macro F-score
#   and macro one-vs-rest AUC computed here in Python from the predictions (scikit-learn's
#   definitions) equal to the best fscore in log.csv and that iteration's auc;
# - TensorBoard event files read back by tfevents_check.py (an independent reader written from
#   the TFRecord/Event specs): CRCs right, every scalar at every iteration equal to log.csv's.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 60 --size 16x16 --seed 4 > /dev/null
cat > "$TMP/tiny.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 8, Padding: same}
  - {type: batchNormalization}
  - {type: relu}
  - {type: maxPooling2d, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax}
  - {type: classification}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  Solver: sgdm
  InitialLearnRate: 0.01
  MaxEpochs: 8
  MiniBatchSize: 16
  ValidationFrequency: 3
  Metrics: [accuracy, fscore, precision, recall, auc]
  ObjectiveMetricName: fscore
  OutputNetwork: best-validation
  TensorBoard: true
  PlotIntervalSeconds: 1
  VerboseLayout: wide
  Seed: 7
  VerboseFrequency: 1000
YAML
run="$TMP/run"
"$DLTRAIN" train "$TMP/tiny.yaml" --output-dir "$run" > "$TMP/train.out"

head -1 "$run/log.csv" | grep -q '^epoch,iteration,time_elapsed_seconds,minibatch_accuracy,validation_accuracy,minibatch_loss,validation_loss,base_learning_rate,validation_fscore,validation_precision,validation_recall,validation_auc$' \
  || fail "log.csv header: $(head -1 "$run/log.csv")"
grep -q '|  Validation  fscore [0-9.]*  precision [0-9.]*  recall [0-9.]*  auc [0-9.]* *|$' "$TMP/train.out" \
  || fail "no metric line under the table's rows: $(head -8 "$TMP/train.out")"
awk '/^\|/ && length($0) != 120 { bad = 1 } END { exit bad }' "$TMP/train.out" || fail "a table line is not 120 wide"
grep -q '"validation_metrics":{"accuracy":[0-9.]*,"fscore":[0-9.]*,"precision":[0-9.]*,"recall":[0-9.]*,"auc":[0-9.]*}' \
  "$run/summary.json" || fail "summary.json validation_metrics: $(cat "$run/summary.json")"

# The best fscore in the log, its iteration and that iteration's auc.
read -r best best_it best_auc < <(awk -F, 'NR > 1 && $9 != "" && (b == "" || $9 > b) { b = $9; it = $2; a = $12 }
                                         END { print b, it, a }' "$run/log.csv")
last=$(tail -1 "$run/log.csv" | cut -d, -f9)
echo "best fscore $best at iteration $best_it (last iteration's: $last), auc there $best_auc"
grep -q "\"best_validation\":{\"metric\":\"fscore\",\"value\":[0-9.e-]*,\"iteration\":$best_it}" "$run/summary.json" \
  || fail "summary.json best_validation: $(cat "$run/summary.json")"
sfs=$(grep -o '"validation_metrics":{[^}]*}' "$run/summary.json" | grep -o '"fscore":[0-9.e-]*' | cut -d: -f2)
awk -v a="$best" -v b="$sfs" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-5) }' \
  || fail "summary fscore $sfs is not the best logged $best"

# The saved model, classified on its own, with every class's score.
"$DLTRAIN" classify "$run/model.bin" "$TMP/data/test" --output "$TMP/preds.csv" --top 3 > /dev/null
python3 - "$TMP/preds.csv" "$best" "$best_auc" <<'PY' || fail "the saved model is not the best-fscore network"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
classes = sorted({r["true_label"] for r in rows} | {r["label"] for r in rows})
truth = [r["true_label"] for r in rows]
pred = [r["label"] for r in rows]
scores = [{r["label"]: float(r["score"]), r["label2"]: float(r["score2"]), r["label3"]: float(r["score3"])} for r in rows]
f = []
for c in classes:
    tp = sum(t == c and p == c for t, p in zip(truth, pred))
    fp = sum(t != c and p == c for t, p in zip(truth, pred))
    fn = sum(t == c and p != c for t, p in zip(truth, pred))
    f.append(2 * tp / (2 * tp + fp + fn))
fscore = sum(f) / len(f)
aucs = []
for c in classes:
    pos = [s[c] for s, t in zip(scores, truth) if t == c]
    neg = [s[c] for s, t in zip(scores, truth) if t != c]
    right = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    aucs.append(right / (len(pos) * len(neg)))
auc = sum(aucs) / len(aucs)
best, best_auc = float(sys.argv[2]), float(sys.argv[3])
print(f"saved model on its own: fscore {fscore:.6f} (log.csv best {best}), auc {auc:.6f} (log.csv {best_auc})")
# classify writes scores with 6 decimals: the AUC's ties may differ in the last place.
sys.exit(0 if abs(fscore - best) < 1e-5 and abs(auc - best_auc) < 2e-3 else 1)
PY
echo "ok: ObjectiveMetricName fscore + OutputNetwork best-validation saved the best-fscore network"

python3 "$SRC/tests/cli/tfevents_check.py" "$run/tensorboard" "$run/log.csv" --expect-image \
  || fail "TensorBoard event files"
echo "ok: TensorBoard"

# A resumed run keeps the metric values of the rows its checkpoint carried.
"$DLTRAIN" train "$TMP/tiny.yaml" --quiet --output-dir "$TMP/ck" --set training.MaxEpochs=2 \
  --set training.TensorBoard=false --set "training.CheckpointPath=$TMP/ck/checkpoints" > /dev/null
"$DLTRAIN" train "$TMP/tiny.yaml" --quiet --output-dir "$TMP/resumed" --set training.MaxEpochs=3 \
  --set training.TensorBoard=false --resume "$TMP/ck/checkpoints/checkpoint-iteration-18.bin" > /dev/null
rows=$(awk -F, 'NR > 1 && $2 <= 18' "$TMP/resumed/log.csv" | cut -d, -f9-12)
want=$(awk -F, 'NR > 1 && $2 <= 18' "$TMP/ck/log.csv" | cut -d, -f9-12)
[[ -n $rows && "$rows" == "$want" ]] || fail "resumed metric columns: $rows, before: $want"
[[ $(awk -F, 'NR > 1 && $9 != ""' "$TMP/resumed/log.csv" | wc -l) -gt $(echo "$want" | grep -c '[0-9]') ]] \
  || fail "the resumed run's own validations have no metric values"
echo "ok: a resumed run keeps the earlier rows' metrics"

# Segmentation: the pixel metrics and mean IoU; iou at the last validation is the run's mean IoU
# and dltrain segment's MeanIoU; auc is refused in one line.
"$DLTRAIN" make-dataset shapes-seg "$TMP/seg" --classes 4 --count 60 --seed 1 > /dev/null 2>&1
segsets=(--set "data.train.images=$TMP/seg/train/images" --set "data.train.labels=$TMP/seg/train/labels"
         --set "data.validation.images=$TMP/seg/test/images" --set "data.validation.labels=$TMP/seg/test/labels"
         --set training.MaxEpochs=2 --set training.MiniBatchSize=16)
"$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/segrun" "${segsets[@]}" \
  --set "training.Metrics=[fscore, iou]" --set training.ObjectiveMetricName=iou > /dev/null
head -1 "$TMP/segrun/log.csv" | grep -q ',base_learning_rate,validation_fscore,validation_iou$' \
  || fail "segmentation log.csv header: $(head -1 "$TMP/segrun/log.csv")"
iou=$(tail -1 "$TMP/segrun/log.csv" | cut -d, -f10)
miou=$(json_number "$TMP/segrun/summary.json" validation_mean_iou)
"$DLTRAIN" segment "$TMP/segrun/model.bin" "$TMP/seg/test/images" --labels "$TMP/seg/test/labels" \
  --output "$TMP/segout" > /dev/null 2>&1
seg_miou=$(json_number "$TMP/segout/metrics.json" MeanIoU)
awk -v a="$iou" -v b="$miou" -v c="$seg_miou" 'BEGIN { exit !((a - b)^2 < 1e-10 && (a - c)^2 < 1e-10) }' \
  || fail "segmentation iou $iou, summary mean IoU $miou, segment MeanIoU $seg_miou"
echo "ok: segmentation iou $iou = mean IoU = segment's MeanIoU"
expect_error "auc for segmentation" 2 "auc is for classification" -- \
  "$DLTRAIN" train "$SRC/configs/shapes-seg.yaml" --quiet --output-dir "$TMP/segauc" "${segsets[@]}" \
  --set "training.Metrics=[auc]"

#!/usr/bin/env bash
# Regression end to end (issue: MATLAB's regression example, trainnet's losses):
# - a table of responses (File + two response columns) over generated shapes, whose responses
#   are functions of the shape's class; a regression network (regression layer, and the same
#   network written trainnet's way: no output layer, training.Loss mse) learns them: its
#   validation RMSE ends below 0.8 x the spread of the responses (what predicting the mean gives);
# - log.csv has minibatch_rmse / validation_rmse / validation_mae / validation_mape columns and
#   summary.json the task and validation_rmse;
# - `dltrain predict` on the validation table writes the predictions, from which the RMSE, MAE and
#   MAPE are computed here in awk: equal to summary.json's (the final validation is the saved
#   network's), with ResponseNormalization zscore undone;
# - the wrong losses for the data are one clear error each.
source "$(dirname "$0")/common.sh" "$@"
make_shapes "$TMP/data" 300
# The tables: File relative to the table's folder; Size = 10 x class + 5, Tilt = 2 - class.
for split in train test; do
  {
    echo "File,Size,Tilt"
    k=0
    for class in $(ls "$TMP/data/$split" | sort); do
      for f in $(ls "$TMP/data/$split/$class" | sort); do
        echo "$split/$class/$f,$((10 * k + 5)),$((2 - k))"
      done
      k=$((k + 1))
    done
  } > "$TMP/data/$split.csv"
done
cat > "$TMP/reg.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [32, 32, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 16, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization}
  - {type: relu}
  - {type: maxPooling2d, PoolSize: 2, Stride: 2}
  - {type: convolution2d, Name: conv2, FilterSize: 3, NumFilters: 32, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization}
  - {type: relu}
  - {type: maxPooling2d, PoolSize: 2, Stride: 2}
  - {type: convolution2d, Name: conv3, FilterSize: 3, NumFilters: 32, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization}
  - {type: relu}
  - {type: globalAveragePooling2d}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: regression, Name: output}
data:
  train: $TMP/data/train.csv
  validation: $TMP/data/test.csv
  ResponseNormalization: zscore
training:
  Solver: adam
  InitialLearnRate: 0.003
  LearnRateSchedule: piecewise
  LearnRateDropPeriod: 6
  LearnRateDropFactor: 0.2
  MaxEpochs: 10
  MiniBatchSize: 64
  Shuffle: every-epoch
  ValidationFrequency: 25
  Metrics: [rmse, mae, mape]
  Seed: 3
  Verbose: false
YAML
run="$TMP/run"
"$DLTRAIN" train "$TMP/reg.yaml" --output-dir "$run" > "$TMP/train.out"
grep -q "validation RMSE" "$TMP/train.out" || fail "the final line names no RMSE: $(cat "$TMP/train.out")"
head -1 "$run/log.csv" | grep -q "^epoch,iteration,time_elapsed_seconds,minibatch_rmse,validation_rmse,minibatch_loss,validation_loss,base_learning_rate,validation_mae,validation_mape$" ||
  fail "log.csv header: $(head -1 "$run/log.csv")"
grep -q '"task":"regression"' "$run/summary.json" || fail "summary.json names no task"
rmse=$(json_number "$run/summary.json" validation_rmse)
[[ -n $rmse ]] || fail "summary.json has no validation_rmse"
# Predicting the mean of each response gives the spread: sqrt(mean over both responses of the
# variance) = sqrt((125 + 1.25) / 2) = 7.94 for four equal classes.
# configs/shapes.yaml's network classifies these shapes (300 per class) to about 85% in 10
# epochs; as regression it must get well below the mean predictor.
awk -v r="$rmse" 'BEGIN { exit !(r < 6.35) }' || fail "validation RMSE $rmse: the network did not learn the responses (mean predictor: 7.94)"
echo "ok: regression trains: validation RMSE $rmse (predicting the mean: 7.94)"

"$DLTRAIN" predict "$run/model.bin" --table "$TMP/data/test.csv" --output "$TMP/pred.csv" > "$TMP/predict.out"
head -1 "$TMP/pred.csv" | grep -q "Size" || fail "predictions name no response: $(head -1 "$TMP/pred.csv")"
# The metrics from the predictions (columns: the file, then the predicted responses in order)
# against the table, joined by file.
read -r rmse2 mae2 mape2 < <(awk -F, '
  NR == FNR { if (FNR > 1) { s[$1] = $2; t[$1] = $3 } next }
  FNR == 1 { for (i = 1; i <= NF; i++) { if ($i == "Size") cs = i; if ($i == "Tilt") ct = i } next }
  {
    f = $1; n = split(f, parts, "/"); key = parts[n - 2] "/" parts[n - 1] "/" parts[n]
    if (!(key in s)) { print "missing " key > "/dev/stderr"; exit 1 }
    e1 = $cs - s[key]; e2 = $ct - t[key]
    sq += e1 * e1 + e2 * e2; ab += (e1 < 0 ? -e1 : e1) + (e2 < 0 ? -e2 : e2); v += 2
    pe += 100 * (e1 < 0 ? -e1 : e1) / (s[key] < 0 ? -s[key] : s[key]); nz++
    if (t[key] != 0) { pe += 100 * (e2 < 0 ? -e2 : e2) / (t[key] < 0 ? -t[key] : t[key]); nz++ }
  }
  END { printf "%.6f %.6f %.6f\n", sqrt(sq / v), ab / v, pe / nz }' "$TMP/data/test.csv" "$TMP/pred.csv")
mae=$(grep -o '"mae":[-0-9.e+]*' "$run/summary.json" | head -1 | cut -d: -f2)
mape=$(grep -o '"mape":[-0-9.e+]*' "$run/summary.json" | head -1 | cut -d: -f2)
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-3 * (1 + (b < 0 ? -b : b))) }'; }
close "$rmse2" "$rmse" || fail "RMSE from predict's output $rmse2, summary.json $rmse"
close "$mae2" "$mae" || fail "MAE from predict's output $mae2, summary.json $mae"
close "$mape2" "$mape" || fail "MAPE from predict's output $mape2, summary.json $mape"
echo "ok: predict's output gives summary.json's RMSE $rmse2, MAE $mae2, MAPE $mape2"

# ONNX: the export's output "responses" carries the un-normalised predictions (x std + mean):
# OpenCV's dnn on the exported file gives predict's numbers for the first 8 test images.
if [[ $("$DLTRAIN" export "$run/model.bin" --output "$TMP/reg.onnx" 2>&1) == *"output 'responses'"* ]] &&
  /usr/bin/python3 -c "import cv2, numpy" 2>/dev/null; then
  /usr/bin/python3 - "$TMP/reg.onnx" "$TMP/pred.csv" <<'PY' || fail "OpenCV on the exported regression model disagrees with predict"
import csv, sys
import cv2, numpy as np
net = cv2.dnn.readNetFromONNX(sys.argv[1])
rows = list(csv.DictReader(open(sys.argv[2])))[:8]
y = []
for r in rows:  # one image at a time: OpenCV 4.6's dnn broadcasts the mean image over a batch of 1 only
    net.setInput(cv2.cvtColor(cv2.imread(r["path"]), cv2.COLOR_BGR2RGB).astype(np.float32).transpose(2, 0, 1)[None])
    y.append(net.forward()[0])
y = np.array(y)
want = np.array([[float(r["Size"]), float(r["Tilt"])] for r in rows])
err = np.abs(y - want).max()
print(f"ok: OpenCV dnn on the exported model: predict's responses within {err:.1e}")
sys.exit(0 if err < 1e-3 else 1)
PY
else
  "$DLTRAIN" export "$run/model.bin" --output "$TMP/reg.onnx" 2>&1 | grep -q "output 'responses'" ||
    fail "export names no 'responses' output"
  echo "ok: exported (OpenCV's python module not installed: the numbers are not compared)"
fi

# trainnet's way: no output layer, training.Loss mse: the same network, the same run.
sed '/type: regression/d' "$TMP/reg.yaml" > "$TMP/trainnet.yaml"
printf '  Loss: mse\n' >> "$TMP/trainnet.yaml"
"$DLTRAIN" train "$TMP/trainnet.yaml" --output-dir "$TMP/run2" > /dev/null
rmse3=$(json_number "$TMP/run2/summary.json" validation_rmse)
[[ $rmse3 == "$rmse" ]] || fail "training.Loss mse: validation RMSE $rmse3, the regression layer's $rmse"
echo "ok: training.Loss mse trains the regression layer's network: RMSE $rmse3"

# The wrong loss for the data, and the wrong data for the loss: one line each, exit 2.
sed 's/  - {type: fullyConnected, Name: fc, OutputSize: 2}/&\n  - {type: softmax}/' "$TMP/trainnet.yaml" > "$TMP/softmax.yaml"
expect_error "crossentropy on responses" 2 "need class labels" -- \
  "$DLTRAIN" train "$TMP/softmax.yaml" --set training.Loss=crossentropy --set training.MaxEpochs=1 \
  --output-dir "$TMP/bad1"
expect_error "crossentropy after a layer that is no softmax" 2 "must follow a softmax layer" -- \
  "$DLTRAIN" train "$TMP/trainnet.yaml" --set training.Loss=crossentropy --output-dir "$TMP/bad5"
expect_error "mse on class folders" 2 "needs responses" -- \
  "$DLTRAIN" train "$TMP/trainnet.yaml" --set "data.train=$TMP/data/train" --set "data.validation=$TMP/data/test" \
  --set data.ResponseNormalization=none --output-dir "$TMP/bad2"
expect_error "an output width that is not the table's" 2 "set OutputSize: 2" -- \
  "$DLTRAIN" train "$TMP/reg.yaml" --set layers.fc.OutputSize=3 --output-dir "$TMP/bad3"
expect_error "a classification metric on a regression run" 2 "not a metric of regression" -- \
  "$DLTRAIN" train "$TMP/reg.yaml" --set 'training.Metrics=[fscore]' --output-dir "$TMP/bad4"

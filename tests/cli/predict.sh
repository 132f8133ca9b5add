#!/usr/bin/env bash
# dltrain predict (regression) and dltrain classify on a multi-label model (--threshold, --table):
# predictions and metrics checked against values recomputed here with numpy; the errors a
# model of the wrong kind, a bad flag or a bad table gives (one line, exit code, no output file).
# The regression and multi-label models are stand-ins written by the test binary
# (tests/net/test_task_models.cpp): a fixed softmax network whose output for a uniform grey
# image v is (s, 1 - s), s = sigmoid(v / 100), stored with task "regression" (Angle, Scale;
# mean 10, -1, std 2, 0.5) or "multilabel" (cat, dog).
source "$(dirname "$0")/common.sh" "$@"
PY=/usr/bin/python3
TESTS="$(dirname "$DLTRAIN")/tests/dltrain_tests"
[[ -x "$TESTS" ]] || fail "$TESTS not built (it writes the fixture models)"
$PY -c "import numpy" 2>/dev/null || skip "/usr/bin/python3 has no numpy"
DLT_SEG_MODEL="$TMP/seg.bin" DLT_CLASS_MODEL="$TMP/class.bin" "$TESTS" "[make_seg_model]" > "$TMP/make.log" \
  || fail "writing the models: $(cat "$TMP/make.log")"
DLT_REGRESSION_MODEL="$TMP/reg.bin" DLT_MULTILABEL_MODEL="$TMP/multi.bin" "$TESTS" "[make_task_models]" \
  > "$TMP/make.log" || fail "writing the task models: $(cat "$TMP/make.log")"

# Uniform 4x4 grey images, and tables of their true responses and labels.
PYTHONPATH="$SRC/tests/cli" $PY - "$TMP" <<'PY'
import os, sys
import numpy as np
from seg_check import write_png
tmp = sys.argv[1]
os.makedirs(tmp + "/img")
for name, v in zip("abcde", [0, 50, 100, 200, 255]):
    write_png(f"{tmp}/img/{name}.png", np.full((4, 4), v, np.uint8))
# Columns in another order than the model's (Angle, Scale): matched by name.
open(tmp + "/img/reg.csv", "w").write(
    "File,Scale,Angle\r\na.png,-0.5,11\nb.png,-1,12.5\n\"c.png\",0,10\nb.png,-0.8,0\n")
open(tmp + "/img/multi.csv", "w").write(
    "File,Labels\na.png,cat;dog\nb.png,cat\nc.png, dog \nd.png,\ne.png,cat;dog\n")
os.makedirs(tmp + "/tables")  # relative to the folder given as IMAGES
open(tmp + "/tables/reg.csv", "w").write("File,Angle,Scale\nd.png,13,-0.9\n")
open(tmp + "/tables/bad-number.csv", "w").write("File,Angle,Scale\na.png,1,2\nb.png,abc,2\n")
open(tmp + "/tables/bad-column.csv", "w").write("File,Angel,Scale\na.png,1,2\n")
open(tmp + "/tables/missing.csv", "w").write("File,Angle,Scale\nnope.png,1,2\n")
open(tmp + "/tables/bad-label.csv", "w").write("File,Labels\na.png,cat\nb.png,cat;dgo\n")
open(tmp + "/tables/short-row.csv", "w").write("File,Angle,Scale\na.png,1,2\n\nb.png,3\n")
open(tmp + "/tables/open-quote.csv", "w").write('File,Labels\na.png,cat\nb.png,"cat;dog\n')
PY
img="$TMP/img"

# Regression with the true responses: predictions and errors.
"$DLTRAIN" predict "$TMP/reg.bin" --table "$img/reg.csv" --format json > "$TMP/reg.json" 2> "$TMP/reg.err" \
  || fail "predict --table: $(cat "$TMP/reg.err")"
$PY - "$TMP/reg.json" "$img" <<'PY' || fail "predict --table: $(head -c 600 "$TMP/reg.json")"
import json, sys
import numpy as np
j = json.load(open(sys.argv[1]))
v = {"a": 0, "b": 50, "c": 100}
assert j["responses"] == ["Angle", "Scale"], j["responses"]
paths = [p["path"] for p in j["predictions"]]
assert paths == [sys.argv[2] + "/" + n for n in ["a.png", "b.png", "c.png", "b.png"]], paths
y = np.array([p["responses"] for p in j["predictions"]])
t = np.array([p["true_responses"] for p in j["predictions"]])
s = np.array([1 / (1 + np.exp(-v[p.split("/")[-1][0]] / 100)) for p in paths])
assert np.allclose(y[:, 0], s * 2 + 10, atol=1e-5) and np.allclose(y[:, 1], (1 - s) * 0.5 - 1, atol=1e-5), y
assert np.allclose(t, [[11, -0.5], [12.5, -1], [10, 0], [0, -0.8]]), t
d = y - t
def check(m, dd, tt):
    nz = tt != 0
    assert abs(m["rmse"] - np.sqrt(np.mean(dd ** 2))) < 1e-5, m
    assert abs(m["mae"] - np.mean(np.abs(dd))) < 1e-5, m
    assert abs(m["mape"] - 100 * np.mean(np.abs(dd[nz] / tt[nz]))) < 1e-4, m
    assert m["values"] == dd.size and m["mape_values"] == int(nz.sum()), m
check(j["overall"], d, t)
for r, m in enumerate(j["per_response"]):
    check(m, d[:, r], t[:, r])
PY
[[ $(wc -l < "$TMP/reg.json") -eq 1 ]] || fail "--format json printed more than the JSON"
grep -q "^response *RMSE *MAE *MAPE %" "$TMP/reg.err" || fail "no report on stderr: $(cat "$TMP/reg.err")"
echo "ok: predict --table: responses un-normalised, RMSE/MAE/MAPE as numpy's"

# Without a table: the CSV on stdout, no report; --output: the file, the report on stdout.
"$DLTRAIN" predict "$TMP/reg.bin" "$img" > "$TMP/reg.csv" 2> "$TMP/reg.err"
[[ $(head -1 "$TMP/reg.csv") == "path,Angle,Scale" && $(wc -l < "$TMP/reg.csv") -eq 6 ]] \
  || fail "predict CSV: $(cat "$TMP/reg.csv")"
grep -q "^$img/c.png,11.4621[12]," "$TMP/reg.csv" || fail "c.png: sigmoid(1) * 2 + 10 = 11.462117: $(cat "$TMP/reg.csv")"
[[ ! -s "$TMP/reg.err" ]] || fail "stderr without truth: $(cat "$TMP/reg.err")"
"$DLTRAIN" predict "$TMP/reg.bin" "$img" --table "$TMP/tables/reg.csv" --output "$TMP/out.csv" > "$TMP/report.txt"
[[ $(head -1 "$TMP/out.csv") == "path,Angle,Scale,true_Angle,true_Scale" ]] || fail "--output: $(cat "$TMP/out.csv")"
grep -q "^$img/d.png,.*,13,-0.9" "$TMP/out.csv" || fail "table paths relative to IMAGES: $(cat "$TMP/out.csv")"
grep -q "^Angle " "$TMP/report.txt" || fail "report on stdout: $(cat "$TMP/report.txt")"
echo "ok: predict CSV, --output, a table relative to the IMAGES folder"

# Errors: the wrong kind of model, bad flags, bad tables; no output file left behind.
expect_error "predict, a classifier" 2 "class.bin: a classification model, not a regression model.*use dltrain classify" \
  -- "$DLTRAIN" predict "$TMP/class.bin" "$img" --output "$TMP/bad.csv"
expect_error "predict, a multi-label model" 2 "multi.bin: a multi-label classification model.*use dltrain classify" \
  -- "$DLTRAIN" predict "$TMP/multi.bin" "$img"
expect_error "predict, a segmentation model" 2 "seg.bin: a segmentation model.*use dltrain segment" \
  -- "$DLTRAIN" predict "$TMP/seg.bin" "$img"
expect_error "predict without images" 2 "give image files or folders, or --table" -- "$DLTRAIN" predict "$TMP/reg.bin"
expect_error "predict --format" 2 "format" -- "$DLTRAIN" predict "$TMP/reg.bin" "$img" --format xml
expect_error "a table and image files" 2 "at most one folder" \
  -- "$DLTRAIN" predict "$TMP/reg.bin" "$img/a.png" --table "$img/reg.csv"
expect_error "a response that is not a number" 1 "bad-number.csv:3: Angle 'abc' is not a finite number" \
  -- "$DLTRAIN" predict "$TMP/reg.bin" "$img" --table "$TMP/tables/bad-number.csv" --output "$TMP/bad.csv"
expect_error "a column the model lacks" 1 "bad-column.csv:1: column 'Angel' is not one of the model's responses.*did you mean 'Angle'" \
  -- "$DLTRAIN" predict "$TMP/reg.bin" "$img" --table "$TMP/tables/bad-column.csv"
expect_error "a missing image" 1 "missing.csv:2: image .*nope.png not found" \
  -- "$DLTRAIN" predict "$TMP/reg.bin" --table "$TMP/tables/missing.csv"
expect_error "a row with too few cells" 1 "short-row.csv:4: 2 cells but the header has 3" \
  -- "$DLTRAIN" predict "$TMP/reg.bin" "$img" --table "$TMP/tables/short-row.csv"
[[ ! -e "$TMP/bad.csv" ]] || fail "a failed predict left $TMP/bad.csv"

# classify: single-label models refuse --threshold and --table; a regression model is predict's.
expect_error "--threshold on a single-label model" 2 "threshold: .*class.bin is a single-label classifier" \
  -- "$DLTRAIN" classify "$TMP/class.bin" "$img" --threshold 0.3
expect_error "--table on a single-label model" 2 "table: .*single-label" \
  -- "$DLTRAIN" classify "$TMP/class.bin" --table "$img/multi.csv"
expect_error "classify, a regression model" 2 "reg.bin: a regression model.*use dltrain predict" \
  -- "$DLTRAIN" classify "$TMP/reg.bin" "$img"
expect_error "--top on a multi-label model" 2 "top: .*multi-label" -- "$DLTRAIN" classify "$TMP/multi.bin" "$img" --top 2
expect_error "an unknown label" 1 "bad-label.csv:3: label 'dgo' is not one of the model's classes (cat, dog)" \
  -- "$DLTRAIN" classify "$TMP/multi.bin" "$img" --table "$TMP/tables/bad-label.csv"
expect_error "a quote never closed" 1 "open-quote.csv:3: a quoted field is never closed" \
  -- "$DLTRAIN" classify "$TMP/multi.bin" "$img" --table "$TMP/tables/open-quote.csv"
# Single-label classify as before.
"$DLTRAIN" classify "$TMP/class.bin" "$img" --json > "$TMP/single.json"
$PY -c "import json, sys; j = json.load(open(sys.argv[1])); assert len(j['predictions']) == 5 and 'accuracy' not in j, j" \
  "$TMP/single.json" || fail "single-label classify: $(cat "$TMP/single.json")"

# Multi-label: labels at the threshold and the metrics, as numpy computes them.
for threshold in 0.5 0.6; do
  "$DLTRAIN" classify "$TMP/multi.bin" --table "$img/multi.csv" --threshold $threshold --json > "$TMP/multi.json" \
    || fail "classify multi-label --threshold $threshold"
  $PY - "$TMP/multi.json" $threshold <<'PY' || fail "multi-label at $threshold: $(head -c 800 "$TMP/multi.json")"
import json, sys
import numpy as np
j, threshold = json.load(open(sys.argv[1])), float(sys.argv[2])
v = {"a": 0, "b": 50, "c": 100, "d": 200, "e": 255}
names = [p["path"].split("/")[-1][0] for p in j["predictions"]]
assert names == list("abcde"), names
s = np.array([1 / (1 + np.exp(-v[n] / 100)) for n in names], np.float32)
probs = np.stack([s, 1 - s], 1)
assert np.allclose([p["scores"] for p in j["predictions"]], probs, atol=1e-5)
pred = probs >= np.float32(threshold)
classes = ["cat", "dog"]
assert [p["labels"] for p in j["predictions"]] == [[c for c, on in zip(classes, r) if on] for r in pred]
truth = np.array([[1, 1], [1, 0], [0, 1], [0, 0], [1, 1]], bool)
assert [p["true_labels"] for p in j["predictions"]] == [[c for c, on in zip(classes, r) if on] for r in truth]
tp, fp, fn = (truth & pred).sum(), (~truth & pred).sum(), (truth & ~pred).sum()
assert abs(j["f1_micro"] - 2 * tp / (2 * tp + fp + fn)) < 1e-9, j["f1_micro"]
inter, union = (truth & pred).sum(1), (truth | pred).sum(1)
assert abs(j["jaccard"] - np.mean(np.where(union == 0, 1, inter / np.maximum(union, 1)))) < 1e-9, j["jaccard"]
assert abs(j["exact_match"] - np.mean((truth == pred).all(1))) < 1e-9, j["exact_match"]
for k, stats in enumerate(j["per_label"]):
    t, y = truth[:, k], pred[:, k]
    assert stats["support"] == t.sum()
    assert stats["precision"] == (None if y.sum() == 0 else (t & y).sum() / y.sum()) or \
        abs(stats["precision"] - (t & y).sum() / y.sum()) < 1e-9, stats
PY
done
echo "ok: classify multi-label: labels at --threshold, F1, Jaccard, exact match as numpy's"
"$DLTRAIN" classify "$TMP/multi.bin" "$img" --output "$TMP/multi.csv" > "$TMP/report.txt"
[[ $(head -1 "$TMP/multi.csv") == "path,labels,score_cat,score_dog" ]] || fail "multi-label CSV: $(cat "$TMP/multi.csv")"
grep -q "^$img/a.png,cat;dog,0.500000,0.500000$" "$TMP/multi.csv" || fail "0.5 reaches the threshold: $(cat "$TMP/multi.csv")"
[[ ! -s "$TMP/report.txt" ]] || fail "report without truth: $(cat "$TMP/report.txt")"
echo "ok: predict and classify --threshold"

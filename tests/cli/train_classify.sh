#!/usr/bin/env bash
# End to end: generate data, train configs/shapes.yaml to >= 95% validation accuracy, check
# every output file's format, --set overrides, and classify (labels, accuracy, confusion; stdout
# carries only the CSV or the JSON).
source "$(dirname "$0")/common.sh" "$@"
make_shapes "$TMP/data" 1000
run="$TMP/run"
"$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$run" \
  --set data.train="$TMP/data/train" --set data.validation="$TMP/data/test" --set training.Seed=5 \
  > "$TMP/train.out"

for f in model.bin summary.json log.csv config.yaml progress.png; do
  [[ -s "$run/$f" ]] || fail "missing $run/$f"
done
if ls "$run" | grep -q 'tmp'; then fail "temporary files left in $run: $(ls "$run")"; fi
acc=$(json_number "$run/summary.json" validation_accuracy)
echo "validation accuracy: $acc%"
at_least "$acc" 95 || fail "validation accuracy $acc% < 95%"
for key in status epochs iterations minibatch_accuracy minibatch_loss validation_loss total_learnables \
           memory_bytes wall_seconds train_images_per_second; do
  grep -q "\"$key\":" "$run/summary.json" || fail "summary.json lacks $key"
done
grep -q '"status":"completed"' "$run/summary.json" || fail "status is not completed"
head -1 "$run/log.csv" | grep -q '^epoch,iteration,time_elapsed_seconds,minibatch_accuracy,validation_accuracy,minibatch_loss,validation_loss,base_learning_rate$' \
  || fail "log.csv header: $(head -1 "$run/log.csv")"
iters=$(json_number "$run/summary.json" iterations)
[[ $(($(wc -l < "$run/log.csv") - 1)) -eq $iters ]] || fail "log.csv rows != iterations ($iters)"
[[ "$(head -c 8 "$run/progress.png" | od -An -tx1 | tr -d ' \n')" == "89504e470d0a1a0a" ]] || fail "progress.png is not a PNG"
[[ "$(head -c 8 "$run/model.bin")" == "DLTMODEL" ]] || fail "model.bin magic"
grep -q "Seed: 5" "$run/config.yaml" || fail "config.yaml does not record the --set override"

# --set reaches layer options: 20 filters in conv1 changes the learnable count.
"$DLTRAIN" info "$SRC/configs/shapes.yaml" --json --set layers.conv1.NumFilters=20 > "$TMP/info.json"
base=$("$DLTRAIN" info "$SRC/configs/shapes.yaml" --json | grep -o '"total_learnables":[0-9]*' | cut -d: -f2)
over=$(grep -o '"total_learnables":[0-9]*' "$TMP/info.json" | cut -d: -f2)
[[ $over -gt $base ]] || fail "--set layers.conv1.NumFilters=20 did not change learnables ($base -> $over)"

# classify: CSV, accuracy report, JSON with confusion matrix.
"$DLTRAIN" classify "$run/model.bin" "$TMP/data/test" --output "$TMP/preds.csv" --top 2 > "$TMP/report.txt"
n=$(find "$TMP/data/test" -name '*.png' | wc -l)
[[ $(($(wc -l < "$TMP/preds.csv") - 1)) -eq $n ]] || fail "preds.csv rows != $n images"
head -1 "$TMP/preds.csv" | grep -q '^path,label,score,true_label,label2,score2$' || fail "preds.csv header: $(head -1 "$TMP/preds.csv")"
grep -q 'Accuracy:' "$TMP/report.txt" || fail "no accuracy in the classify report"
grep -q 'Confusion matrix' "$TMP/report.txt" || fail "no confusion matrix"
cacc=$(grep 'Accuracy:' "$TMP/report.txt" | grep -o '[0-9.]*%' | tr -d '%')
awk -v a="$cacc" -v b="$acc" 'BEGIN { exit !((a - b) < 0.01 && (b - a) < 0.01) }' \
  || fail "classify accuracy $cacc% differs from the run's validation accuracy $acc%"
# Without --output, stdout is the CSV alone (> preds.csv makes a CSV file); the report goes to stderr.
"$DLTRAIN" classify "$run/model.bin" "$TMP/data/test" --top 2 > "$TMP/stdout.csv" 2> "$TMP/stderr.txt"
cmp "$TMP/stdout.csv" "$TMP/preds.csv" || fail "classify's stdout is not the same CSV as --output: $(tail -3 "$TMP/stdout.csv")"
grep -q 'Accuracy:' "$TMP/stderr.txt" || fail "no accuracy report on stderr: $(cat "$TMP/stderr.txt")"
grep -q 'Confusion matrix' "$TMP/stderr.txt" || fail "no confusion matrix on stderr"
"$DLTRAIN" classify "$run/model.bin" "$TMP/data/test" --json > "$TMP/preds.json"
[[ $(wc -l < "$TMP/preds.json") -eq 1 && $(head -c 1 "$TMP/preds.json") == "{" ]] || fail "--json printed more than the JSON"
grep -q '"confusion":\[\[' "$TMP/preds.json" || fail "JSON lacks the confusion matrix"
grep -q '"per_class":\[{"class":' "$TMP/preds.json" || fail "JSON lacks per_class"
# A single image file, no labels: one prediction row, no accuracy.
one=$(find "$TMP/data/test" -name '*.png' -print -quit)
cp "$one" "$TMP/single.png"
"$DLTRAIN" classify "$run/model.bin" "$TMP/single.png" > "$TMP/single.txt"
[[ $(wc -l < "$TMP/single.txt") -eq 2 ]] || fail "single-image output: $(cat "$TMP/single.txt")"
# Precision: mixed (bfloat16 multiplies) trains the same network to the same accuracy band,
# and its model classifies on the float32 path with the accuracy the run reported.
grep -q '"precision":"single"' "$run/summary.json" || fail "summary.json lacks precision single"
# oneDNN has bfloat16 kernels at avx512_core and above; DNNL_MAX_CPU_ISA below that removes them.
bf16=0
if grep -qw avx512bw /proc/cpuinfo && [[ ${DNNL_MAX_CPU_ISA:-ALL} =~ ^(ALL|all|AVX512_CORE.*|avx512_core.*)$ ]]; then
  bf16=1
fi
mixed="$TMP/mixed"
mixed_train=("$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$mixed"
  --set data.train="$TMP/data/train" --set data.validation="$TMP/data/test" --set training.Seed=5
  --set training.Precision=mixed)
if [[ $bf16 -eq 1 ]]; then
  "${mixed_train[@]}" > "$TMP/mixed.out"
  grep -q '"precision":"mixed"' "$mixed/summary.json" || fail "summary.json lacks precision mixed"
  macc=$(json_number "$mixed/summary.json" validation_accuracy)
  echo "validation accuracy with Precision mixed: $macc% (single: $acc%)"
  at_least "$macc" 95 || fail "Precision mixed: validation accuracy $macc% < 95%"
  awk -v a="$macc" -v b="$acc" 'BEGIN { exit !((a - b) < 3 && (b - a) < 3) }' \
    || fail "Precision mixed: accuracy $macc% is not within 3 points of single's $acc%"
  "$DLTRAIN" classify "$mixed/model.bin" "$TMP/data/test" --json > "$TMP/mixed_preds.json"
  mcacc=$(json_number "$TMP/mixed_preds.json" accuracy)
  awk -v a="$mcacc" -v b="$macc" 'BEGIN { exit !((a - b) < 1.5 && (b - a) < 1.5) }' \
    || fail "a mixed-precision model classified in float32: $mcacc% vs the run's $macc%"
  "$DLTRAIN" classify "$mixed/model.bin" "$TMP/data/test" --json --precision mixed > "$TMP/mixed_preds2.json"
  [[ "$(json_number "$TMP/mixed_preds2.json" accuracy)" == "$macc" ]] \
    || fail "classify --precision mixed: $(json_number "$TMP/mixed_preds2.json" accuracy)% vs the run's validation $macc%"
else
  # Without bfloat16 kernels: one line naming the ISA oneDNN runs at, exit code 3, no model.
  expect_error "Precision mixed without bfloat16 kernels" 3 "oneDNN runs this CPU at .*, which has no bfloat16" \
    -- "${mixed_train[@]}"
  [[ ! -e $mixed/model.bin ]] || fail "a refused Precision mixed run wrote a model"
fi
echo "train_classify: ok"

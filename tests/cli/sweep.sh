#!/usr/bin/env bash
# scripts/sweep.sh on a tiny generated dataset: a 2x2 grid gives results.csv with 4 rows and the
# right columns and numbers; a rerun after deleting one summary.json retrains only that point;
# a failing point is recorded as failed while the others complete; `dltrain report` prints the
# table with the Pareto front and writes a PNG. Also seed 001's generated configs match the script.
source "$(dirname "$0")/common.sh" "$@"
SWEEP="$SRC/scripts/sweep.sh"

"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 40 --size 16x16 --seed 3 >/dev/null
cat > "$TMP/tiny.yaml" <<EOF
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3]}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: 1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data: {train: $TMP/data/train, validation: $TMP/data/test}
training: {MaxEpochs: 1, MiniBatchSize: 16, Verbose: false}
EOF
# A dltrain that logs each call's output folder, so the test knows which points were trained.
cat > "$TMP/dltrain-logged" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do [[ \${prev:-} == --output-dir ]] && echo "\$(basename "\$a")" >> "$TMP/calls"; prev=\$a; done
exec "$DLTRAIN" "\$@"
EOF
chmod +x "$TMP/dltrain-logged"
sweep() { bash "$SWEEP" --dltrain "$TMP/dltrain-logged" "$@"; }

# --- --help prints the comment block at the top and nothing of the code below it
help=$(bash "$SWEEP" --help) || fail "sweep.sh --help: exit $?"
[[ $(head -1 <<< "$help") == "sweep.sh: train one network per point"* ]] || fail "--help first line: $(head -1 <<< "$help")"
[[ $(tail -1 <<< "$help") == "Exit code: 0 when every point finished"* ]] || fail "--help last line: $(tail -1 <<< "$help")"
! grep -qE 'pipefail|^set |^#' <<< "$help" || fail "--help prints source lines: $(grep -E 'pipefail|^set |^#' <<< "$help")"
echo "ok: --help prints $(wc -l <<< "$help") lines of usage"

# --- usage errors exit 2
rc=0; sweep --config "$TMP/tiny.yaml" > /dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "sweep without --out: exit $rc, expected 2"
rc=0; sweep --config "$TMP/tiny.yaml" --out "$TMP/x" --grid nonsense > /dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "sweep with a malformed --grid: exit $rc, expected 2"

# --- a 2x2 grid, two jobs of one thread each
out="$TMP/grid"
grid=(--config "$TMP/tiny.yaml" --grid training.InitialLearnRate=0.01,0.001 --grid layers.conv1.NumFilters=4,8
      --set training.Seed=5 --out "$out" --jobs 2 --threads-per-job 1)
[[ $(sweep "${grid[@]}" --dry-run | grep -c -- '--threads 1 ') -eq 4 ]] || fail "dry run: 4 commands with --threads 1"
[[ ! -e "$TMP/calls" ]] || fail "dry run trained something"
sweep "${grid[@]}" > "$TMP/sweep1.log" || fail "2x2 sweep exit code $? ($(cat "$TMP/sweep1.log"))"
csv="$out/results.csv"
[[ $(wc -l < "$csv") -eq 5 ]] || fail "results.csv: expected header + 4 rows: $(cat "$csv")"
header="point,config,training.InitialLearnRate,layers.conv1.NumFilters,status,validation_accuracy,minibatch_accuracy,total_learnables,memory_bytes,wall_seconds,train_images_per_second,exit_code,error"
[[ $(head -1 "$csv") == "$header" ]] || fail "results.csv header: $(head -1 "$csv")"
# Rows in grid order (first grid slowest); learnables of conv(3x3x3 -> F) + fc(8*8*F -> 2).
expect_row() {  # point lr filters
  local f=$3 learn=$(( (27 + 1) * $3 + (64 * $3 + 1) * 2 ))
  local row
  row=$(grep "^$1,$TMP/tiny.yaml,$2,$3,completed," "$csv") || fail "no completed row for $1: $(cat "$csv")"
  IFS=, read -r -a col <<< "$row"
  [[ ${col[7]} -eq $learn ]] || fail "$1: total_learnables ${col[7]}, expected $learn"
  [[ ${col[8]} -eq $(( 4 * (learn + 16 * 16 * 3) )) ]] || fail "$1: memory_bytes ${col[8]}"
  # The row's accuracy is the point's own run's (a one-epoch run need not beat chance; the
  # check is that the table reports that run, not any number from 0 to 100).
  local run_acc
  run_acc=$(json_number "$out/$1/summary.json" validation_accuracy)
  [[ -n $run_acc && ${col[5]} == "$run_acc" ]] || fail "$1: validation_accuracy '${col[5]}', its summary.json '$run_acc'"
  at_least "${col[9]}" 0.0001 || fail "$1: wall_seconds '${col[9]}'"
  [[ -z ${col[11]} ]] || fail "$1: exit_code should be empty"
}
expect_row "InitialLearnRate=0.01_conv1.NumFilters=4" 0.01 4
expect_row "InitialLearnRate=0.01_conv1.NumFilters=8" 0.01 8
expect_row "InitialLearnRate=0.001_conv1.NumFilters=4" 0.001 4
expect_row "InitialLearnRate=0.001_conv1.NumFilters=8" 0.001 8
[[ $(sed -n 2p "$csv") == InitialLearnRate=0.01_conv1.NumFilters=4,* ]] || fail "row order"
[[ $(wc -l < "$TMP/calls") -eq 4 ]] || fail "expected 4 trainings, got $(cat "$TMP/calls")"
grep -q -- '--threads 1 ' "$out/InitialLearnRate=0.01_conv1.NumFilters=8/command.sh" || fail "--threads not passed"
grep -q -- '--set training.Seed=5 ' "$out/InitialLearnRate=0.01_conv1.NumFilters=8/command.sh" || fail "--set not passed"
echo "ok: 2x2 grid -> results.csv with 4 completed rows"

# --- resume: only the point whose summary.json is gone is trained again
: > "$TMP/calls"
keep="$out/InitialLearnRate=0.01_conv1.NumFilters=4/summary.json"
before=$(stat -c %.9Y "$keep")
rm "$out/InitialLearnRate=0.001_conv1.NumFilters=8/summary.json"
sweep "${grid[@]}" > "$TMP/sweep2.log" || fail "resumed sweep exit code $?"
[[ $(cat "$TMP/calls") == "InitialLearnRate=0.001_conv1.NumFilters=8" ]] || fail "resume retrained: $(cat "$TMP/calls")"
[[ $(stat -c %.9Y "$keep") == "$before" ]] || fail "resume rewrote a finished point"
[[ $(grep -c ',completed,' "$csv") -eq 4 ]] || fail "after resume: $(cat "$csv")"
[[ $(grep -c 'skip' "$TMP/sweep2.log") -eq 3 ]] || fail "expected 3 skipped points: $(cat "$TMP/sweep2.log")"
# Changing a shared override changes every point's identity: nothing would be skipped.
[[ $(sweep "${grid[@]}" --set training.Seed=6 --dry-run | grep -c -- '--set training.Seed=6 ') -eq 4 ]] \
  || fail "after changing --set, all 4 points should be retrained"
echo "ok: resume retrains only the missing point"

# --- a failing point is recorded; the others complete; exit code 1
fout="$TMP/failing"
rc=0; sweep --config "$TMP/tiny.yaml" --grid training.MiniBatchSize=16,0,8 --out "$fout" > "$TMP/sweep3.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "sweep with a failing point: exit $rc, expected 1 ($(cat "$TMP/sweep3.log"))"
bad="$fout/MiniBatchSize=0"
[[ $(cat "$bad/exit_code") -eq 2 ]] || fail "failing point: exit_code $(cat "$bad/exit_code" 2>&1)"
grep -q 'MiniBatchSize' "$bad/error.txt" || fail "error.txt should name MiniBatchSize: $(cat "$bad/error.txt")"
grep -q '^MiniBatchSize=0,.*,0,failed,,,,,,,2,.*MiniBatchSize' "$fout/results.csv" || fail "failed row: $(cat "$fout/results.csv")"
[[ $(grep -c ',completed,' "$fout/results.csv") -eq 2 ]] || fail "other points: $(cat "$fout/results.csv")"
echo "ok: failing point recorded ($(cat "$bad/error.txt"))"

# --- --gpus: one job per GPU, each with its own CUDA_VISIBLE_DEVICES and ExecutionEnvironment gpu.
# A stand-in dltrain records its GPU and flags when two jobs share a GPU (no GPU needed).
cat > "$TMP/dltrain-fakegpu" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do [[ \${prev:-} == --output-dir ]] && dir=\$a; prev=\$a; done
lock="$TMP/gpu\$CUDA_VISIBLE_DEVICES.busy"
[[ -e \$lock ]] && echo "GPU \$CUDA_VISIBLE_DEVICES shared" >> "$TMP/overlap"
touch "\$lock"; sleep 0.3; rm -f "\$lock"
echo "\$CUDA_VISIBLE_DEVICES \$*" > "\$dir/fake.txt"
echo '{"status":"completed","validation_accuracy":50,"memory_bytes":100}' > "\$dir/summary.json"
EOF
chmod +x "$TMP/dltrain-fakegpu"
gout="$TMP/gpus"
bash "$SWEEP" --dltrain "$TMP/dltrain-fakegpu" --config "$TMP/tiny.yaml" --grid training.MaxEpochs=1,2,3,4 \
  --gpus "3 5" --out "$gout" > "$TMP/gpus.log" || fail "--gpus sweep: $(cat "$TMP/gpus.log")"
[[ ! -e "$TMP/overlap" ]] || fail "--gpus: $(cat "$TMP/overlap")"
[[ $(cat "$gout"/*/fake.txt | grep -c -E '^[35] train .*--set training.ExecutionEnvironment=gpu') -eq 4 ]] \
  || fail "--gpus: each point on GPU 3 or 5 with ExecutionEnvironment gpu: $(cat "$gout"/*/fake.txt)"
[[ $(cut -d' ' -f1 "$gout"/*/fake.txt | sort -u | tr '\n' ' ') == "3 5 " ]] || fail "--gpus: both GPUs used"
[[ $(grep -c ',completed,' "$gout/results.csv") -eq 4 ]] || fail "--gpus results: $(cat "$gout/results.csv")"
echo "ok: --gpus runs one job per GPU"

# --- dltrain report: table with the front marked, PNG, CSV, JSON
"$DLTRAIN" report "$fout" --csv "$TMP/report.csv" > "$TMP/report.txt" || fail "report exit code $?"
grep -q 'MiniBatchSize=0 .*failed (exit 2)' "$TMP/report.txt" || fail "report: failed row: $(cat "$TMP/report.txt")"
grep -q '^\* MiniBatchSize=' "$TMP/report.txt" || fail "report: no point marked on the front: $(cat "$TMP/report.txt")"
grep -q 'Pareto front, smallest first' "$TMP/report.txt" || fail "report: front table"
[[ $(head -c 8 "$fout/pareto.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "pareto.png is not a PNG"
[[ $(wc -l < "$TMP/report.csv") -eq 4 ]] || fail "report.csv: $(cat "$TMP/report.csv")"
"$DLTRAIN" report "$out" --json --output "$TMP/grid.png" > "$TMP/report.json" || fail "report --json"
[[ $(wc -l < "$TMP/report.json") -eq 1 && $(head -c 1 "$TMP/report.json") == "{" ]] \
  || fail "report --json printed more than JSON: $(cat "$TMP/report.json")"
[[ $(grep -o '"run":' "$TMP/report.json" | wc -l) -eq 4 ]] || fail "report --json: 4 runs: $(cat "$TMP/report.json")"
grep -q '"metric":"validation_accuracy"' "$TMP/report.json" || fail "report --json metric"
grep -q '"front":\["InitialLearnRate=' "$TMP/report.json" || fail "report --json front: $(cat "$TMP/report.json")"
[[ -s "$TMP/grid.png" ]] || fail "report --output"
# A single run folder is a report of one run.
"$DLTRAIN" report "$out/InitialLearnRate=0.01_conv1.NumFilters=4" --output "$TMP/one.png" > "$TMP/one.txt"
grep -q '^\* ' "$TMP/one.txt" || fail "report of one run folder: $(cat "$TMP/one.txt")"
expect_error "report of an empty folder" 2 "no summary.json" -- "$DLTRAIN" report "$TMP/data/train/$(ls "$TMP/data/train" | head -1)"
echo "ok: dltrain report"

# --- seed 001's networks: the committed files are what the generator writes, and they load
bash "$SRC/scripts/make_cifar10_sweep.sh" "$TMP/nets" > /dev/null
diff -r "$TMP/nets" "$SRC/configs/cifar10-sweep" > /dev/null || fail "configs/cifar10-sweep differs from scripts/make_cifar10_sweep.sh's output"
[[ $(ls "$TMP/nets" | wc -l) -eq 16 ]] || fail "expected 16 networks"
# net01: conv 5x5x3x20, conv 5x5x20x40, fc 7*7*40 -> 64, fc 64 -> 10
"$DLTRAIN" info "$SRC/configs/cifar10-sweep/net01.yaml" --json > "$TMP/net01.json"
learn=$(( (75 + 1) * 20 + (500 + 1) * 40 + (7 * 7 * 40 + 1) * 64 + (64 + 1) * 10 ))
[[ $(json_number "$TMP/net01.json" total_learnables) -eq $learn ]] || fail "net01 learnables: $(cat "$TMP/net01.json")"
# net16: conv 3x3x3x32, conv 3x3x32x64, extra conv 3x3x64x64, fc 8*8*64 -> 64, fc 64 -> 10
"$DLTRAIN" info "$SRC/configs/cifar10-sweep/net16.yaml" --json > "$TMP/net16.json"
learn=$(( (27 + 1) * 32 + (288 + 1) * 64 + (576 + 1) * 64 + (8 * 8 * 64 + 1) * 64 + (64 + 1) * 10 ))
[[ $(json_number "$TMP/net16.json" total_learnables) -eq $learn ]] || fail "net16 learnables: $(cat "$TMP/net16.json")"
# The seed workflow configs load (they may need GPUs or workers to train, not to load).
for cfg in cifar10-multigpu digits-parallel execution-options; do
  "$DLTRAIN" info "$SRC/configs/$cfg.yaml" --json > "$TMP/$cfg.json" || fail "configs/$cfg.yaml does not load"
  at_least "$(json_number "$TMP/$cfg.json" total_learnables)" 1000 || fail "configs/$cfg.yaml: learnables"
done
echo "sweep: ok"

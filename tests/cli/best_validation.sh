#!/usr/bin/env bash
# OutputNetwork best-validation end to end, with a best that is NOT the last validation:
# ValidationPatience 3 with a validation every iteration stops the run 3 validations after its
# best, so the final network differs from the best one. Checks that model.bin holds, bit for
# bit, the weights of the checkpoint of the best iteration (and not the final one's), that
# summary.json's best_validation and stop_reason name that iteration (the lowest validation loss
# in log.csv), and that the terminal says why the run ended. The same run with OutputNetwork
# last-iteration saves the final network and says so.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 40 --size 16x16 --seed 2 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 8, Padding: same}
  - {type: batchNormalization, Name: bn1}
  - {type: relu}
  - {type: maxPooling2d, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax}
  - {type: classification}
data: {train: $TMP/data/train, validation: $TMP/data/test}
training: {Solver: sgdm, InitialLearnRate: 0.05, MaxEpochs: 30, MiniBatchSize: 16, ValidationFrequency: 1,
           ValidationPatience: 3, Seed: 4, Verbose: false, Plots: none,
           CheckpointFrequency: 1, CheckpointFrequencyUnit: iteration}
YAML
train() {  # train DIR OUTPUT-NETWORK
  "$DLTRAIN" train "$TMP/net.yaml" --quiet --threads 2 --output-dir "$TMP/$1" --set training.OutputNetwork="$2" \
    --set training.CheckpointPath="$TMP/$1/ck" > "$TMP/$1.out" 2> "$TMP/$1.err" || fail "$1: $(cat "$TMP/$1.err")"
}
# same_weights MODEL CHECKPOINT: whether the model's parameters are the checkpoint's bit for bit
# (their PARM sections equal) and its states (batch-norm statistics, normalization) are among
# the checkpoint's (whose STAT section adds the solver's). A model file: a 32-byte header, then
# sections of a tag, a u64 length and the payload; STAT's payload: a u32 count, the tensors.
same_weights() {
  python3 - "$1" "$2" <<'PY'
import struct, sys
def sections(path):
    b, at, out = open(path, "rb").read(), 32, {}
    while at + 12 <= len(b):
        n = struct.unpack_from("<Q", b, at + 4)[0]
        out[b[at:at + 4]] = b[at + 12:at + 12 + n]
        at += 12 + n
    return out
m, c = sections(sys.argv[1]), sections(sys.argv[2])
sys.exit(0 if m[b"PARM"] == c[b"PARM"] and m[b"STAT"][4:] in c[b"STAT"] else 1)
PY
}

train best best-validation
run="$TMP/best"
grep -q '"status":"stopped-early"' "$run/summary.json" || fail "not stopped early: $(cat "$run/summary.json")"
last=$(json_number "$run/summary.json" iterations)
# The lowest validation loss in the log and its iteration (log.csv: iteration is column 2, the
# validation loss column 7).
read -r best_it best_loss < <(awk -F, 'NR > 1 && $7 != "" && (b == "" || $7 + 0 < b + 0) { b = $7; it = $2 }
  END { print it, b }' "$run/log.csv")
echo "best validation loss $best_loss at iteration $best_it; stopped at $last"
[[ $best_it -eq $((last - 3)) ]] || fail "the best ($best_it) is not 3 validations before the stop ($last)"
grep -q "\"best_validation\":{\"metric\":\"loss\",\"value\":[0-9.e+-]*,\"iteration\":$best_it}" "$run/summary.json" \
  || fail "best_validation: $(cat "$run/summary.json")"
want="validation loss did not improve for 3 validations in a row (ValidationPatience 3); its best, [0-9.e+-]*, came after $best_it iterations; model.bin is the best-validation network, after $best_it iterations"
grep -q "\"stop_reason\":{\"kind\":\"validation-patience\",\"message\":\"$want" "$run/summary.json" \
  || fail "stop_reason: $(grep -o '"stop_reason":{[^}]*}' "$run/summary.json")"
grep -q "stopped early: $want" "$TMP/best.err" || fail "the terminal does not say why: $(cat "$TMP/best.err")"
same_weights "$run/ck/checkpoint-iteration-$best_it.bin" "$run/ck/checkpoint-iteration-$last.bin" \
  && fail "the best and the final networks are the same (no test)"
same_weights "$run/model.bin" "$run/ck/checkpoint-iteration-$best_it.bin" || fail "model.bin's weights are not iteration $best_it's"
same_weights "$run/model.bin" "$run/ck/checkpoint-iteration-$last.bin" && fail "model.bin's weights are the final ones"
echo "ok: model.bin holds iteration $best_it's weights bit for bit (the run stopped at $last)"

train final last-iteration
last=$(json_number "$TMP/final/summary.json" iterations)
grep -q "\"stop_reason\":{\"kind\":\"validation-patience\",\"message\":\"[^\"]*; model.bin is the final network, after $last iterations\"" \
  "$TMP/final/summary.json" || fail "last-iteration stop_reason: $(cat "$TMP/final/summary.json")"
same_weights "$TMP/final/model.bin" "$TMP/final/ck/checkpoint-iteration-$last.bin" \
  || fail "last-iteration: model.bin is not the final network"
grep -q '"best_validation"' "$TMP/final/summary.json" && fail "last-iteration run names a best network"
echo "ok: OutputNetwork last-iteration saves the network after iteration $last and says so"
echo "best validation: ok"

#!/usr/bin/env bash
# --output that is no regular file is written through, never replaced: export, classify and
# import onto a character device made with mknod (as /dev/null) stay that device; onto a FIFO
# the reader gets the whole file; --output /dev/stdout puts the CSV or ONNX on stdout and the
# report or note on stderr. The device nodes need root (mknod); without it the test ends
# skipped (77) with the reason after the FIFO and /dev/stdout parts.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 20 --size 16x16 --seed 2 > /dev/null
cat > "$TMP/tiny.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3]}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax}
  - {type: classification}
data: {train: $TMP/data/train}
training: {MaxEpochs: 1, MiniBatchSize: 16, Verbose: false, Plots: none}
YAML
"$DLTRAIN" train "$TMP/tiny.yaml" --quiet --threads 1 --output-dir "$TMP/run" > /dev/null || fail "training"
model="$TMP/run/model.bin"
"$DLTRAIN" classify "$model" "$TMP/data/test" --output "$TMP/preds.csv" > /dev/null || fail "classify to a file"
"$DLTRAIN" export "$model" --output "$TMP/model.onnx" > /dev/null || fail "export to a file"
images=$(find "$TMP/data/test" -name '*.png' | wc -l)

# A FIFO: its reader gets exactly what a regular file gets; the FIFO stays, no temporary beside it.
through_fifo() {  # through_fifo NAME -- COMMAND (@FIFO@ for the output path): the bytes in $TMP/NAME.got
  local name=$1
  shift 2
  local fifo="$TMP/$name.fifo"
  rm -f "$fifo"
  mkfifo "$fifo"
  cat "$fifo" > "$TMP/$name.got" &
  local reader=$!
  if ! "${@//@FIFO@/$fifo}" > /dev/null 2> "$TMP/$name.err"; then
    : > "$fifo"  # let the reader go
    fail "$name onto a FIFO: $(cat "$TMP/$name.err")"
  fi
  wait $reader
  [[ -p $fifo ]] || fail "$name: the FIFO was replaced by a $(stat -c %F "$fifo")"
  [[ -z $(find "$TMP" -maxdepth 1 -name "$name.fifo.tmp*") ]] || fail "$name: a temporary file was left"
}
through_fifo classify -- "$DLTRAIN" classify "$model" "$TMP/data/test" --output @FIFO@
cmp -s "$TMP/classify.got" "$TMP/preds.csv" || fail "classify: the FIFO's reader did not get the CSV"
through_fifo export -- "$DLTRAIN" export "$model" --output @FIFO@
cmp -s "$TMP/export.got" "$TMP/model.onnx" || fail "export: the FIFO's reader did not get the ONNX file"
echo "ok: classify and export onto a FIFO: $(wc -c < "$TMP/classify.got") and $(wc -c < "$TMP/export.got") bytes read, still a FIFO"
if "$DLTRAIN" import "$TMP/model.onnx" --output "$TMP/imported.bin" > /dev/null 2>&1; then  # a build with ONNX
  through_fifo import -- "$DLTRAIN" import "$TMP/model.onnx" --output @FIFO@
  "$DLTRAIN" info "$TMP/import.got" > /dev/null 2> "$TMP/info.err" || fail "import: the FIFO's bytes are no model: $(cat "$TMP/info.err")"
  echo "ok: import onto a FIFO: a whole model ($(wc -c < "$TMP/import.got") bytes)"
fi

# /dev/stdout: the data on stdout, the words on stderr.
"$DLTRAIN" classify "$model" "$TMP/data/test" --output /dev/stdout > "$TMP/stdout.csv" 2> "$TMP/stdout.err" \
  || fail "classify --output /dev/stdout: $(cat "$TMP/stdout.err")"
cmp -s "$TMP/stdout.csv" "$TMP/preds.csv" || fail "classify --output /dev/stdout: stdout is not the CSV: $(head -3 "$TMP/stdout.csv")"
[[ $(wc -l < "$TMP/stdout.csv") -eq $((images + 1)) ]] || fail "classify --output /dev/stdout: $(wc -l < "$TMP/stdout.csv") lines"
"$DLTRAIN" export "$model" --output /dev/stdout 2> "$TMP/export.err" | cat > "$TMP/stdout.onnx"
cmp -s "$TMP/stdout.onnx" "$TMP/model.onnx" || fail "export --output /dev/stdout (a pipe): not the ONNX file"
grep -q "exported .* -> /dev/stdout" "$TMP/export.err" || fail "export's note is not on stderr: $(cat "$TMP/export.err")"
echo "ok: --output /dev/stdout: classify's CSV ($images rows) and export's ONNX on stdout, the words on stderr"

# A character device made like /dev/null (1, 3): written through, still the same device.
if ! mknod "$TMP/null" c 1 3 2> "$TMP/mknod.err"; then
  echo "SKIP: the device-node part: mknod is not permitted here ($(cat "$TMP/mknod.err")); the FIFO and /dev/stdout parts passed"
  exit 77
fi
for cmd in classify export; do
  case $cmd in
    classify) "$DLTRAIN" classify "$model" "$TMP/data/test" --output "$TMP/null" > /dev/null 2> "$TMP/null.err" ;;
    export) "$DLTRAIN" export "$model" --output "$TMP/null" > /dev/null 2> "$TMP/null.err" ;;
  esac || fail "$cmd --output onto a device node: $(cat "$TMP/null.err")"
  [[ $(stat -c '%F %t,%T' "$TMP/null") == "character special file 1,3" ]] \
    || fail "$cmd replaced the device node: it is now a $(stat -c '%F %t,%T' "$TMP/null")"
  echo "ok: $cmd --output onto a character device (1,3): still $(stat -c '%F %t,%T' "$TMP/null")"
done
# A device that refuses the bytes (as /dev/full): one error line naming it, exit 1.
mknod "$TMP/full" c 1 7
expect_error "export onto a full device" 1 "$TMP/full: write failed (No space left on device)" -- \
  "$DLTRAIN" export "$model" --output "$TMP/full"
echo "output_devices: ok"

#!/usr/bin/env bash
# Bad input gets one clear error line naming the culprit, a non-zero exit code (2 for usage
# and config errors, 1 for data and runtime failures) and leaves no partial output files.
source "$(dirname "$0")/common.sh" "$@"
make_shapes "$TMP/good" 30
cfg="$SRC/configs/shapes.yaml"
train() {  # train DATA_DIR [more args]: trains into $TMP/out, which must stay empty on failure
  local data=$1
  shift
  rm -rf "$TMP/out"
  "$DLTRAIN" train "$cfg" --quiet --output-dir "$TMP/out" --set data.train="$data" \
    --set data.validation="$TMP/good/test" --set training.MaxEpochs=1 --set training.MiniBatchSize=8 "$@"
}
no_outputs() {  # a failed run leaves not even its output folder
  if [[ -e "$TMP/out" ]]; then fail "$1 left $TMP/out behind: $(ls -A "$TMP/out")"; fi
}
copy_good() { rm -rf "$1"; cp -r "$TMP/good/train" "$1"; }

expect_error "missing folder" 1 "$TMP/nope" -- train "$TMP/nope"; no_outputs "missing folder"

copy_good "$TMP/empty"; rm -f "$TMP/empty/circle/"*
expect_error "empty class folder" 1 "circle" -- train "$TMP/empty"; no_outputs "empty class folder"

rm -rf "$TMP/single"; mkdir -p "$TMP/single"; cp -r "$TMP/good/train/circle" "$TMP/single/"
expect_error "single class" 1 "only one class" -- train "$TMP/single" --set data.validation=; no_outputs "single class"

copy_good "$TMP/corrupt"; f=$(ls "$TMP/corrupt/square/"*.png | head -1); head -c 100 "$f" > "$TMP/c.png"; mv "$TMP/c.png" "$f"
expect_error "corrupt image" 1 "$f" -- train "$TMP/corrupt"; no_outputs "corrupt image"

copy_good "$TMP/text"; echo "not an image" > "$TMP/text/square/notes.png"
expect_error "non-image file" 1 "notes.png" -- train "$TMP/text"; no_outputs "non-image file"

copy_good "$TMP/zero"; : > "$TMP/zero/cross/empty.png"
expect_error "zero-byte file" 1 "empty.png" -- train "$TMP/zero"; no_outputs "zero-byte file"

# An unreadable file. Root reads any file whatever its mode, so as root (how CI runs) this case
# runs dltrain as the user nobody (setpriv), for whom the mode counts.
copy_good "$TMP/unreadable"; f=$(ls "$TMP/unreadable/circle/"*.png | head -1)
as_user=(); user_cfg=$cfg
if [[ $(id -u) -eq 0 ]]; then
  chmod 755 "$TMP"; chmod -R a+rX "$TMP/unreadable" "$TMP/good"; chmod 1777 "$TMP"
  # The checkout may sit where nobody cannot read (/root): nobody gets a copy of the config.
  user_cfg="$TMP/shapes.yaml"; cp "$cfg" "$user_cfg"; chmod 644 "$user_cfg"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
chmod 000 "$f"
rm -rf "$TMP/out"
expect_error "unreadable image" 1 "$f" -- "${as_user[@]}" "$DLTRAIN" train "$user_cfg" --quiet --output-dir "$TMP/out" \
  --set data.train="$TMP/unreadable" --set data.validation="$TMP/good/test" --set training.MaxEpochs=1 \
  --set training.MiniBatchSize=8
no_outputs "unreadable image"

expect_error "unknown training option" 2 "did you mean 'MaxEpochs'" -- train "$TMP/good/train" --set training.MaxEpoch=3
no_outputs "unknown option"
expect_error "unknown layer option" 2 "did you mean 'NumFilters'" -- train "$TMP/good/train" --set layers.conv1.NumFilter=3
no_outputs "unknown layer option"
expect_error "wrong value type" 2 "MaxEpochs" -- train "$TMP/good/train" --set training.MaxEpochs=abc
no_outputs "wrong value type"
expect_error "unknown layer name" 2 "conv9" -- train "$TMP/good/train" --set layers.conv9.NumFilters=3

expect_error "image smaller than the input without resize" 1 "is 32x32 but the crop needs at least 48x48" -- \
  train "$TMP/good/train" --set data.OutputSizeMode=centercrop --set layers.input.InputSize=[48,48,3]
no_outputs "small image"

expect_error "missing config" 2 "nope.yaml" -- "$DLTRAIN" train "$TMP/nope.yaml"
expect_error "bad command-line flag" 2 "--bogus" -- "$DLTRAIN" train "$cfg" --bogus
printf 'layers:\n  - {type: imageInput, InputSize: [8, 8, 3]\n' > "$TMP/broken.yaml"
expect_error "YAML syntax" 2 "broken.yaml:" -- "$DLTRAIN" train "$TMP/broken.yaml"
printf 'layers:\n  - {type: relu}\ntraining:\n\tMaxEpochs: 1\n' > "$TMP/tab.yaml"
expect_error "tab in the indentation" 2 "tab.yaml:4: a tab in the indentation; YAML indents with spaces" -- \
  "$DLTRAIN" train "$TMP/tab.yaml"
# MATLAB's spacing [48 48 3] is read as three numbers, so the run gets as far as the data check
# above (before, the config stopped it: "InputSize must be [height, width, channels]").
expect_error "InputSize [48 48 3]" 1 "is 32x32 but the crop needs at least 48x48" -- \
  train "$TMP/good/train" --set data.OutputSizeMode=centercrop --set "layers.input.InputSize=[48 48 3]"
printf 'junk bytes, not a model' > "$TMP/corrupt.bin"
expect_error "corrupt model" 1 "corrupt.bin: not a dltrain model (bad magic)" -- \
  "$DLTRAIN" classify "$TMP/corrupt.bin" "$TMP/good/test"
expect_error "a config as the model" 2 "broken.yaml is a YAML config, not a model: train it first" -- \
  "$DLTRAIN" classify "$TMP/broken.yaml" "$TMP/good/test"
echo "bad_input: ok"

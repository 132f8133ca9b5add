#!/usr/bin/env bash
# A full disk (docs/reliability.md, "Full disk"): the output folder and the CheckpointPath on a
# small tmpfs. (1) Sized so that the first epoch's checkpoint fits and the second's does not:
# one error line naming the file and "No space left on device", exit 1, the first checkpoint
# intact (loadable, resumable), no model.bin and no partial file under a final name. (2) Filled
# with a dd file so that only the final model.bin write fails: the same. (A new run's folder
# holds no earlier model.bin to keep: dltrain train refuses such a folder, output_folder.sh.)
# (3) Full while log.csv grows: one line naming it, no partial row. (4) make-dataset: no
# truncated image. Needs root for mount; skipped (code 77) with the reason otherwise.
source "$(dirname "$0")/common.sh" "$@"
[[ $(id -u) -eq 0 ]] || skip "mounting a tmpfs needs root"
DISK="$TMP/disk"
mkdir -p "$DISK"
mounted=0
cleanup() {
  if [[ $mounted -eq 1 ]]; then umount "$DISK" 2>/dev/null || umount -l "$DISK" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
at_exit cleanup
mount_disk() {  # mount_disk BYTES
  if [[ $mounted -eq 1 ]]; then umount "$DISK"; mounted=0; fi
  mount -t tmpfs -o size="$1" tmpfs "$DISK" 2>"$TMP/mount.err" \
    || skip "cannot mount a tmpfs: $(cat "$TMP/mount.err")"
  mounted=1
}

make_shapes "$TMP/data" 20
common=(--quiet --threads 2 --set data.train="$TMP/data/train" --set data.validation="$TMP/data/test"
        --set training.Seed=5 --set training.Plots=none --set training.CheckpointFrequency=1
        --set training.CheckpointFrequencyUnit=epoch)
# A probe run off the tmpfs: the size of one checkpoint.
"$DLTRAIN" train "$SRC/configs/shapes.yaml" "${common[@]}" --set training.MaxEpochs=1 \
  --output-dir "$TMP/probe" --set training.CheckpointPath="$TMP/probe_ck" > /dev/null
ck_bytes=$(stat -c %s "$TMP/probe_ck/latest.bin")
echo "one checkpoint: $ck_bytes bytes"

# no_leftovers DIR: no temporary file, and every .bin under its final name loads.
no_leftovers() {
  local left
  left=$(find "$1" -name '*.tmp*' | head -3)
  [[ -z "$left" ]] || fail "temporary files left behind: $left"
  for f in "$1"/*.bin "$1"/ck/*.bin; do
    [[ -e "$f" ]] || continue
    "$DLTRAIN" info "$f" > /dev/null 2>"$TMP/info.err" || fail "$f does not load: $(cat "$TMP/info.err")"
  done
}
# one_line_enospc ERRFILE CODE WANT_CODE NAME: exit code, one error line (stderr also has the
# info lines), naming the file and the cause.
one_line_enospc() {
  [[ $2 -eq $3 ]] || fail "exit code $2, expected $3 (stderr: $(cat "$1"))"
  [[ $(grep -c error "$1") -eq 1 ]] || fail "expected one error line on stderr, got: $(cat "$1")"
  grep error "$1" | grep -q "$4.*No space left on device" || fail "the error does not name $4 and ENOSPC: $(cat "$1")"
  echo "ok: $(grep error "$1")"
}

# (1) Two checkpoint files (checkpoint-iteration-N.bin and latest.bin) per epoch: room for
# the first epoch's two and half of the next one, plus 64 KiB for the live files.
mount_disk $((ck_bytes * 5 / 2 + 65536))
rc=0
"$DLTRAIN" train "$SRC/configs/shapes.yaml" "${common[@]}" --set training.MaxEpochs=4 \
  --output-dir "$DISK/out" --set training.CheckpointPath="$DISK/ck" > /dev/null 2> "$TMP/err1" || rc=$?
one_line_enospc "$TMP/err1" $rc 1 "$DISK/ck/checkpoint-iteration-[0-9]*\.bin"
[[ -e "$DISK/out/model.bin" ]] && fail "a failed run wrote model.bin"
[[ -e "$DISK/out/summary.json" ]] && fail "a failed run wrote summary.json"
[[ -s "$DISK/ck/latest.bin" ]] || fail "the first checkpoint is gone: $(ls "$DISK/ck")"
no_leftovers "$DISK/out"
no_leftovers "$DISK/ck"
# The surviving checkpoint resumes (off the full disk) to the end.
cp "$DISK/ck/latest.bin" "$TMP/latest.bin"
"$DLTRAIN" train "$SRC/configs/shapes.yaml" "${common[@]}" --set training.MaxEpochs=2 \
  --output-dir "$TMP/resumed" --set training.CheckpointPath="$TMP/resumed_ck" --resume "$TMP/latest.bin" > /dev/null \
  || fail "the surviving checkpoint does not resume"
echo "ok: the surviving checkpoint resumed"

# (2) No checkpoints; a dd file leaves 32 KiB, less than the final model.bin needs, so its
# write fails at the end. config.yaml and log.csv fit; no model.bin, whole or partial.
mount_disk 4m
mkdir -p "$DISK/out"
dd if=/dev/zero of="$DISK/fill" bs=4096 2>/dev/null || true
truncate -s -32K "$DISK/fill"
rc=0
"$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --threads 2 --set data.train="$TMP/data/train" \
  --set data.validation="$TMP/data/test" --set training.Seed=5 --set training.Plots=none --set training.MaxEpochs=1 \
  --output-dir "$DISK/out" > /dev/null 2> "$TMP/err2" || rc=$?
one_line_enospc "$TMP/err2" $rc 1 "$DISK/out/model.bin"
[[ -e "$DISK/out/model.bin" ]] && fail "a failed run left a model.bin"
[[ -e "$DISK/out/summary.json" ]] && fail "a failed run wrote summary.json"
no_leftovers "$DISK/out"

# (3) 8 KiB free: config.yaml and log.csv's first rows fit, a later row does not. The row is
# not left half-written (the file is cut back to its last whole row).
mount_disk 4m
mkdir -p "$DISK/out"
dd if=/dev/zero of="$DISK/fill" bs=4096 2>/dev/null || true
truncate -s -8K "$DISK/fill"
rc=0
"$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --threads 2 --set data.train="$TMP/data/train" \
  --set data.validation="$TMP/data/test" --set training.Seed=5 --set training.Plots=none --set training.MaxEpochs=20 \
  --set training.MiniBatchSize=8 --output-dir "$DISK/out" > /dev/null 2> "$TMP/err3" || rc=$?
one_line_enospc "$TMP/err3" $rc 1 "$DISK/out/log.csv: cannot append a row"
[[ -z $(tail -c 1 "$DISK/out/log.csv") ]] || fail "log.csv ends in a partial row: $(tail -2 "$DISK/out/log.csv")"
fields=$(awk -F, '{ print NF }' "$DISK/out/log.csv" | sort -u)
[[ $(wc -l <<< "$fields") -eq 1 ]] || fail "log.csv rows have different field counts: $fields"
echo "ok: log.csv holds $(($(wc -l < "$DISK/out/log.csv") - 1)) whole rows"
[[ -e "$DISK/out/summary.json" ]] && fail "a failed run wrote summary.json"
no_leftovers "$DISK/out"

# (4) make-dataset onto a 256 KiB disk: one line naming an image, and every PNG under its
# final name complete (ends with IEND; stb's file writer used to leave truncated ones).
mount_disk 256k
rc=0
"$DLTRAIN" make-dataset shapes "$DISK/ds" --classes 4 --per-class 400 --size 64x64 --seed 3 > /dev/null \
  2> "$TMP/err4" || rc=$?
one_line_enospc "$TMP/err4" $rc 1 "$DISK/ds/.*\.png"
python3 - "$DISK/ds" <<'PY' || fail "a truncated image under its final name"
import pathlib, sys
pngs = list(pathlib.Path(sys.argv[1]).rglob("*.png"))
bad = [str(p) for p in pngs if not p.read_bytes().endswith(b"IEND\xaeB`\x82")]
assert pngs and not bad, (len(pngs), bad[:3])
print(f"ok: {len(pngs)} complete PNGs")
PY
no_leftovers "$DISK/ds"
echo "full disk: ok"

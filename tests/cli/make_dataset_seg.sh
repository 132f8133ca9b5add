#!/usr/bin/env bash
# Segmentation data on the command line: `make-dataset shapes-seg` (the ClassNames / LabelIDs
# lines on stdout, paired image/label files, same seed same bytes, one-line usage errors) and
# datasets/get-camvid.sh from a small tar in the camvid.tar layout (unpacks, second run is a
# no-op, leaves no staging folder, rejects what is not that layout).
source "$(dirname "$0")/common.sh" "$@"

"$DLTRAIN" make-dataset shapes-seg "$TMP/a" --classes 3 --count 10 --size 24x32 --seed 4 \
  > "$TMP/a.out" 2> "$TMP/a.err"
[[ "$(cat "$TMP/a.out")" == $'ClassNames: [background, circle, square, triangle]\nLabelIDs: [0, 1, 2, 3]' ]] ||
  fail "shapes-seg stdout: $(cat "$TMP/a.out")"
grep -q "wrote 10 image/label pairs" "$TMP/a.err" || fail "shapes-seg stderr: $(cat "$TMP/a.err")"
for part in train test; do
  diff <(ls "$TMP/a/$part/images") <(ls "$TMP/a/$part/labels") || fail "$part: images and labels differ"
done
[[ $(ls "$TMP/a/train/images" | wc -l) -eq 8 && $(ls "$TMP/a/test/labels" | wc -l) -eq 2 ]] ||
  fail "shapes-seg split: $(ls -R "$TMP/a")"
[[ -z "$(find "$TMP/a" -name '*.tmp*')" ]] || fail "temporary files left: $(find "$TMP/a" -name '*.tmp*')"
"$DLTRAIN" make-dataset shapes-seg "$TMP/b" --classes 3 --count 10 --size 24x32 --seed 4 >/dev/null 2>&1
diff -r "$TMP/a" "$TMP/b" > /dev/null || fail "shapes-seg: same seed, different files"
"$DLTRAIN" make-dataset shapes-seg "$TMP/c" --classes 3 --per-class 2 --size 24x32 --seed 5 >/dev/null 2>&1
[[ $(find "$TMP/c" -type f | wc -l) -eq 12 ]] || fail "--per-class 2 x 3 classes: not 6 pairs"
! diff -q "$TMP/a/train/images/00000.png" "$TMP/c/train/images/00000.png" > /dev/null ||
  fail "shapes-seg: another seed, same image"

expect_error "both --count and --per-class" 2 "not both" -- \
  "$DLTRAIN" make-dataset shapes-seg "$TMP/d" --count 4 --per-class 2
expect_error "too many classes" 2 "--classes 9" -- "$DLTRAIN" make-dataset shapes-seg "$TMP/d" --classes 9
expect_error "too small" 2 "--size" -- "$DLTRAIN" make-dataset shapes-seg "$TMP/d" --size 8x8
expect_error "--count for shapes" 2 "--count" -- "$DLTRAIN" make-dataset shapes "$TMP/d" --count 4

# get-camvid.sh --from a tar in the camvid.tar layout.
for s in train val; do
  mkdir -p "$TMP/src/camvid/$s/images" "$TMP/src/camvid/$s/labels"
  cp "$TMP/a/train/images/00000.png" "$TMP/src/camvid/$s/images/0001TP_00${#s}.png"
  cp "$TMP/a/train/labels/00000.png" "$TMP/src/camvid/$s/labels/0001TP_00${#s}.png"
done
tar -cf "$TMP/camvid.tar" -C "$TMP/src" camvid
bash "$SRC/datasets/get-camvid.sh" "$TMP/cv" --from "$TMP/camvid.tar" 2> "$TMP/cv.err" ||
  fail "get-camvid.sh: $(cat "$TMP/cv.err")"
cmp "$TMP/cv/val/labels/0001TP_003.png" "$TMP/a/train/labels/00000.png" || fail "get-camvid.sh: val label"
[[ "$(ls -A "$TMP/cv")" == $'train\nval' ]] || fail "get-camvid.sh left: $(ls -A "$TMP/cv")"
bash "$SRC/datasets/get-camvid.sh" "$TMP/cv" --from "$TMP/camvid.tar" 2> "$TMP/cv2.err"
grep -q "nothing to do" "$TMP/cv2.err" || fail "get-camvid.sh second run: $(cat "$TMP/cv2.err")"
rm "$TMP/src/camvid/val/labels/0001TP_003.png"
tar -cf "$TMP/unpaired.tar" -C "$TMP/src" camvid
if bash "$SRC/datasets/get-camvid.sh" "$TMP/cv3" --from "$TMP/unpaired.tar" 2> "$TMP/cv3.err"; then
  fail "get-camvid.sh accepted an image without a label"
fi
grep -q "do not pair up" "$TMP/cv3.err" || fail "get-camvid.sh unpaired: $(cat "$TMP/cv3.err")"
[[ ! -e "$TMP/cv3" ]] || fail "get-camvid.sh left $TMP/cv3 after failing: $(ls -A "$TMP/cv3")"
echo "ok: make-dataset shapes-seg and get-camvid.sh"

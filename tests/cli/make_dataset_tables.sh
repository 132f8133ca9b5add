#!/usr/bin/env bash
# The table datasets on the command line: `make-dataset rotated-digits` from MNIST IDX files
# (here small ones made below, the train file gzipped) and `make-dataset shapes-multi`: the
# files and CSV tables they write (File,Angle / File,Labels), 28x28 grey PNGs, angles within
# [-45, 45], labels among the kinds, same seed same bytes, no temporary files, and the
# usage errors as one line with exit code 2.
source "$(dirname "$0")/common.sh" "$@"

python3 - "$TMP/idx" <<'PY'
import gzip, os, struct, sys
d = sys.argv[1]
os.makedirs(d)
def images(n):
    out = bytearray(struct.pack('>IIII', 0x803, n, 28, 28))
    for i in range(n):
        for y in range(28):
            for x in range(28):
                bar = 6 <= x <= 21 and 5 + i % 3 <= y <= 8 + i % 3
                out.append(255 if bar or (17 <= x <= 20 and 5 <= y <= 23) else 0)
    return bytes(out)
with gzip.open(os.path.join(d, 'train-images-idx3-ubyte.gz'), 'wb') as f:
    f.write(images(12))
with open(os.path.join(d, 't10k-images-idx3-ubyte'), 'wb') as f:
    f.write(images(9))
PY

"$DLTRAIN" make-dataset rotated-digits "$TMP/rd" --from "$TMP/idx" --count 8 --seed 1 > "$TMP/rd.out" ||
  fail "rotated-digits: $(cat "$TMP/rd.out")"
grep -q "wrote 16 rotated digits" "$TMP/rd.out" || fail "rotated-digits stdout: $(cat "$TMP/rd.out")"
python3 - "$TMP/rd" <<'PY' || fail "rotated-digits files"
import csv, os, struct, sys
d = sys.argv[1]
for part in ("train", "test"):
    rows = list(csv.reader(open(os.path.join(d, part + ".csv"))))
    assert rows[0] == ["File", "Angle"], rows[0]
    assert len(rows) == 9, len(rows)
    angles = set()
    for i, (f, a) in enumerate(rows[1:]):
        assert f == "%s/%05d.png" % (part, i), f
        assert -45 <= float(a) <= 45 and len(a.split(".")[1]) == 3, a
        angles.add(a)
        png = open(os.path.join(d, f), "rb").read()
        w, h, depth, colour = struct.unpack(">IIBB", png[16:26])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and (w, h, depth, colour) == (28, 28, 8, 0), (f, w, h, depth, colour)
    assert len(angles) == 8, angles
    assert sorted(os.listdir(os.path.join(d, part))) == ["%05d.png" % i for i in range(8)]
PY
[[ -z "$(find "$TMP/rd" -name '*.tmp*')" ]] || fail "temporary files left: $(find "$TMP/rd" -name '*.tmp*')"
"$DLTRAIN" make-dataset rotated-digits "$TMP/rd2" --from "$TMP/idx" --count 8 --seed 1 > /dev/null
diff -r "$TMP/rd" "$TMP/rd2" > /dev/null || fail "rotated-digits: same seed, different files"
"$DLTRAIN" make-dataset rotated-digits "$TMP/rd3" --from "$TMP/idx" --count 8 --seed 2 > /dev/null
! cmp -s "$TMP/rd/train.csv" "$TMP/rd3/train.csv" || fail "rotated-digits: another seed, same angles"

expect_error "count above the file" 2 "has only 9 images" -- \
  "$DLTRAIN" make-dataset rotated-digits "$TMP/x" --from "$TMP/idx" --count 10
expect_error "no IDX files" 1 "no such file" -- \
  "$DLTRAIN" make-dataset rotated-digits "$TMP/x" --from "$TMP/nothing"
(cd "$TMP" && expect_error "no --from and no shared MNIST" 2 "needs --from" -- \
  "$DLTRAIN" make-dataset rotated-digits "$TMP/x")
expect_error "--per-class for rotated-digits" 2 "takes --count" -- \
  "$DLTRAIN" make-dataset rotated-digits "$TMP/x" --from "$TMP/idx" --per-class 3

"$DLTRAIN" make-dataset shapes-multi "$TMP/sm" --classes 5 --count 10 --size 40x40 --seed 2 > "$TMP/sm.out" ||
  fail "shapes-multi: $(cat "$TMP/sm.out")"
grep -q "wrote 10 images with 1-3 shapes (5 kinds, 40x40)" "$TMP/sm.out" || fail "shapes-multi stdout: $(cat "$TMP/sm.out")"
python3 - "$TMP/sm" <<'PY' || fail "shapes-multi files"
import csv, os, struct, sys
d = sys.argv[1]
kinds = {"circle", "square", "triangle", "cross", "ring"}
counts = set()
for part, n in (("train", 8), ("test", 2)):
    rows = list(csv.reader(open(os.path.join(d, part + ".csv"))))
    assert rows[0] == ["File", "Labels"], rows[0]
    assert len(rows) == n + 1, len(rows)
    for f, labels in rows[1:]:
        names = labels.split(";")
        assert 1 <= len(names) <= 3 and len(set(names)) == len(names) and set(names) <= kinds, labels
        assert names == sorted(names), labels
        counts.add(len(names))
        png = open(os.path.join(d, f), "rb").read()
        w, h, depth, colour = struct.unpack(">IIBB", png[16:26])
        assert (w, h, depth, colour) == (40, 40, 8, 2), (f, w, h, depth, colour)
assert len(counts) >= 2, counts
PY
"$DLTRAIN" make-dataset shapes-multi "$TMP/sm2" --classes 5 --count 10 --size 40x40 --seed 2 > /dev/null
diff -r "$TMP/sm" "$TMP/sm2" > /dev/null || fail "shapes-multi: same seed, different files"
[[ -z "$(find "$TMP/sm" -name '*.tmp*')" ]] || fail "temporary files left: $(find "$TMP/sm" -name '*.tmp*')"
expect_error "shapes-multi one kind" 2 "--classes 1" -- "$DLTRAIN" make-dataset shapes-multi "$TMP/y" --classes 1
expect_error "shapes-multi grey" 2 "RGB" -- "$DLTRAIN" make-dataset shapes-multi "$TMP/y" --size 32x32x1
expect_error "unknown kind" 2 "rotated-digits or shapes-multi" -- "$DLTRAIN" make-dataset shapes-mult "$TMP/y"
echo "ok: make-dataset rotated-digits and shapes-multi"

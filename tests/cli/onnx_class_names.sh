#!/usr/bin/env bash
# Class names survive a round trip through ONNX: export writes them into metadata_props
# (class_names, one per line), import reads them back, and classify with the re-imported
# model prints the same labels and the same scores as with the original. --classes FILE still
# overrides; an ONNX file without the metadata gets class_1 .. class_K as before; metadata with
# the wrong count is one error line naming it.
source "$(dirname "$0")/common.sh" "$@"
if "$DLTRAIN" import /nonexistent.onnx --output "$TMP/x.bin" 2>&1 | grep -q "built without ONNX"; then
  skip "this dltrain was built without ONNX"
fi
/usr/bin/python3 -c "import onnx" 2>/dev/null || skip "/usr/bin/python3 has no onnx module (apt-get install python3-onnx)"
make_shapes "$TMP/data" 20
"$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$TMP/run" --set data.train="$TMP/data/train" \
  --set data.validation="$TMP/data/test" --set training.MaxEpochs=1 --set training.Seed=3 > /dev/null
"$DLTRAIN" export "$TMP/run/model.bin" --output "$TMP/m.onnx" > /dev/null
"$DLTRAIN" import "$TMP/m.onnx" --output "$TMP/m2.bin" > /dev/null
"$DLTRAIN" classify "$TMP/run/model.bin" "$TMP/data/test" --output "$TMP/a.csv" > /dev/null
"$DLTRAIN" classify "$TMP/m2.bin" "$TMP/data/test" --output "$TMP/b.csv" > /dev/null
classes=$(ls "$TMP/data/train" | sort | tr '\n' ' ')
for c in $classes; do grep -q ",$c," "$TMP/b.csv" || grep -q ",$c\$" "$TMP/b.csv" || fail "class '$c' missing from the re-imported model's predictions: $(head -3 "$TMP/b.csv")"; done
grep -q ",class_[0-9]" "$TMP/b.csv" && fail "the re-imported model still says class_K: $(head -3 "$TMP/b.csv")"
# Same labels and scores, row for row (both models compute in float32 on the same CPU path).
python3 - "$TMP/a.csv" "$TMP/b.csv" <<'PY' || fail "predictions differ after export + import"
import csv, sys
a, b = (list(csv.reader(open(p))) for p in sys.argv[1:3])
assert a[0] == b[0], (a[0], b[0])
assert len(a) == len(b) and len(a) > 10, (len(a), len(b))
worst = 0.0
for ra, rb in zip(a[1:], b[1:]):
    for x, y in zip(ra, rb):
        try:
            fx, fy = float(x), float(y)
            worst = max(worst, abs(fx - fy))
        except ValueError:
            assert x == y, (ra, rb)
assert worst <= 1e-6, worst
print(f"export + import: {len(a) - 1} rows, labels identical, scores within {worst:.1e}")
PY
# --classes FILE overrides the metadata.
printf 'w\nx\ny\nz\n' > "$TMP/names.txt"
"$DLTRAIN" import "$TMP/m.onnx" --classes "$TMP/names.txt" --output "$TMP/m3.bin" > /dev/null
"$DLTRAIN" classify "$TMP/m3.bin" "$TMP/data/test" --output "$TMP/c.csv" > /dev/null
cut -d, -f2 "$TMP/c.csv" | tail -n +2 | sort -u | grep -qvx '[wxyz]' && fail "--classes did not override: $(head -3 "$TMP/c.csv")"
# Without the metadata (a file from elsewhere): class_1 .. class_K; with a wrong count: one line.
PY=/usr/bin/python3
$PY - "$TMP/m.onnx" "$TMP" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
assert [p.key for p in m.metadata_props] == ["class_names"], m.metadata_props
del m.metadata_props[:]
onnx.save(m, sys.argv[2] + "/plain.onnx")
m.metadata_props.add(key="class_names", value="a\nb")
onnx.save(m, sys.argv[2] + "/two.onnx")
PY
"$DLTRAIN" import "$TMP/plain.onnx" --output "$TMP/plain.bin" > /dev/null
"$DLTRAIN" classify "$TMP/plain.bin" "$TMP/data/test" --output "$TMP/d.csv" > /dev/null
grep -q ",class_[1-4]," "$TMP/d.csv" || fail "no class_K labels without metadata: $(head -3 "$TMP/d.csv")"
expect_error "wrong class count in metadata" 1 "outputs 4 classes but its class_names metadata has 2 names" \
  -- "$DLTRAIN" import "$TMP/two.onnx" --output "$TMP/two.bin"
echo "onnx class names: ok"

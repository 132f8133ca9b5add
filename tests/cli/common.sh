# Shared helpers for the CLI end-to-end tests (sourced, not run).
# Usage in a test: source "$(dirname "$0")/common.sh" "$@"
set -euo pipefail
DLTRAIN=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# json_number FILE KEY: the number after "KEY": in a one-line JSON file
json_number() { grep -o "\"$2\":[-0-9.e+]*" "$1" | head -1 | cut -d: -f2; }
# at_least VALUE MIN
at_least() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v + 0 >= m + 0) }'; }
# expect_error "what" EXPECTED_CODE PATTERN -- command...: one clear line, the code, the pattern
expect_error() {
  local what=$1 code=$2 pattern=$3
  shift 4
  local out rc=0
  out=$("$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq $code ]] || fail "$what: exit code $rc, expected $code (stderr: $out)"
  local lines
  lines=$(printf '%s\n' "$out" | grep -c 'error' || true)
  [[ $lines -eq 1 ]] || fail "$what: expected one error line, got: $out"
  printf '%s\n' "$out" | grep -q -- "$pattern" || fail "$what: stderr does not mention '$pattern': $out"
  echo "ok: $what -> $(printf '%s' "$out" | grep error)"
}
# make_shapes DIR [per-class]: a small generated dataset
make_shapes() {
  "$DLTRAIN" make-dataset shapes "$1" --classes 4 --per-class "${2:-150}" --size 32x32 --seed 3 >/dev/null
}
# last_checkpoint DIR: the highest N of DIR/checkpoint-iteration-N.bin, empty when there is none
# (a temporary checkpoint-iteration-N.bin.tmp-PID does not count)
last_checkpoint() {
  local f n best=""
  for f in "$1"/checkpoint-iteration-*.bin; do
    [[ -f $f ]] || continue
    n=${f##*-}
    n=${n%.bin}
    if [[ -z $best ]] || ((n > best)); then best=$n; fi
  done
  echo "$best"
}
# skip_without_onnx: exit 77 (CTest: skipped) when this dltrain was built without ONNX support
skip_without_onnx() {
  if "$DLTRAIN" import /nonexistent.onnx --output "$TMP/x.bin" 2>&1 | grep -q "built without ONNX"; then
    echo "SKIP: this dltrain was built without ONNX support"
    exit 77
  fi
}
# compare_f32 A.f32 B.f32 TOL: fails unless the largest element-wise relative difference of two
# float32 files of equal, non-zero size is at most TOL (prints it)
compare_f32() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PYEOF'
import sys, numpy as np
a, b = np.fromfile(sys.argv[1], np.float32), np.fromfile(sys.argv[2], np.float32)
assert a.shape == b.shape and a.size > 0, (a.shape, b.shape)
rel = float((np.abs(a - b) / np.maximum(np.abs(b), 1e-30)).max())
print(f"  {sys.argv[1].split('/')[-1]} vs {sys.argv[2].split('/')[-1]}: {a.size} values, max relative difference {rel:.2e}")
sys.exit(0 if rel <= float(sys.argv[3]) else 1)
PYEOF
}

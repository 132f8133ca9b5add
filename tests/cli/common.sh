# Shared helpers for the CLI end-to-end tests (sourced, not run).
# Usage in a test: source "$(dirname "$0")/common.sh" "$@"
set -euo pipefail
DLTRAIN=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
# Exit status: 77 is CTest's skip code (SKIP_RETURN_CODE), so only skip may exit with it: any
# other 77 (a failed command's status under set -e, an `exit 77`) becomes 1, a failure. Tests add
# their clean-up with at_exit CMD (never a trap of their own on EXIT, which would replace this).
DLT_SKIPPING=0
DLT_AT_EXIT=()
at_exit() { DLT_AT_EXIT+=("$1"); }
dlt_on_exit() {
  local rc=$? cmd
  for cmd in "${DLT_AT_EXIT[@]}"; do eval "$cmd" || true; done
  rm -rf "$TMP"
  if [[ $rc -eq 77 && $DLT_SKIPPING != 1 ]]; then
    echo "FAIL: exit status 77 that did not come from skip (CTest would report it as a skip)" >&2
    exit 1
  fi
  exit "$rc"
}
trap dlt_on_exit EXIT

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
# classify_matches_summary RUN DATA: RUN/model.bin classifies DATA (class folders) with the
# validation accuracy RUN/summary.json reports (within 0.01 points).
classify_matches_summary() {
  local run=$1 data=$2 acc pct
  acc=$(json_number "$run/summary.json" validation_accuracy)
  "$DLTRAIN" classify "$run/model.bin" "$data" --output "$TMP/preds.csv" > "$TMP/report.txt"
  pct=$(grep 'Accuracy:' "$TMP/report.txt" | grep -o '[0-9.]*%' | tr -d '%')
  [ -n "$pct" ] || fail "classify printed no accuracy: $(cat "$TMP/report.txt")"
  awk -v a="$acc" -v p="$pct" 'BEGIN { d = a - p; exit !(d < 0.01 && d > -0.01) }' ||
    fail "classify's accuracy $pct% differs from summary.json's $acc%: $(cat "$TMP/report.txt")"
  echo "ok: model.bin classifies with summary.json's accuracy ($pct%)"
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
# peak_rss_kib COMMAND...: the command's peak resident memory in KiB (GNU time's %M; needs
# /usr/bin/time, package time); the command's own output is discarded
peak_rss_kib() {
  /usr/bin/time -f %M -o "$TMP/peak_rss" "$@" > /dev/null 2>&1 || fail "peak_rss_kib: '$*' failed"
  tail -1 "$TMP/peak_rss"
}
# free_port [N]: the first of N consecutive TCP ports (default 1) the OS reports free: port 0
# bound (the OS picks), then the next N-1 checked, all released. Another process may still take
# one before the test binds it: port_clash tells such a run, which the test retries.
free_port() {
  python3 - "${1:-1}" <<'PYEOF'
import socket, sys
n = int(sys.argv[1])
for _ in range(100):
    held = [socket.socket()]
    held[0].bind(("", 0))
    p = held[0].getsockname()[1]
    try:
        for k in range(1, n):
            s = socket.socket(); held.append(s); s.bind(("", p + k))
    except OSError:
        continue
    finally:
        for s in held: s.close()
    print(p); break
else:
    sys.exit("free_port: no run of %d free ports" % n)
PYEOF
}
# port_clash FILE...: whether a run's log says its port was taken by another process
port_clash() { grep -qs "Address already in use\|address already in use\|EADDRINUSE" "$@"; }
# skip REASON: this test cannot run here; CTest reports it as skipped (SKIP_RETURN_CODE 77) and
# scripts/test.sh lists it with REASON
skip() {
  echo "SKIP: $*"
  DLT_SKIPPING=1
  exit 77
}
# skip_without_onnx: skip (CTest: skipped) when this dltrain was built without ONNX support
skip_without_onnx() {
  if "$DLTRAIN" import /nonexistent.onnx --output "$TMP/x.bin" 2>&1 | grep -q "built without ONNX"; then
    skip "this dltrain was built without ONNX support"
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
# onnx_round_trip NAME SIZE: $TMP/NAME.onnx (a PyTorch export with NAME.in.f32, NAME.probs.f32,
# SIZE x SIZE x 3 images) imports to PyTorch's probabilities within 1e-4 relative, dltrain's
# export imports back to the same outputs (1e-6) and runs in OpenCV's dnn with dltrain's
# outputs (1e-4). Leaves $TMP/NAME.bin (the import) and NAME.out.onnx (the export).
onnx_round_trip() {
  local n=$1 s=$2 py=/usr/bin/python3
  "$DLTRAIN" import "$TMP/$n.onnx" --output "$TMP/$n.bin" >/dev/null
  "$DLTRAIN" export "$TMP/$n.bin" --debug-forward "$TMP/$n.in.f32" --output "$TMP/$n.ours.f32"
  compare_f32 "$TMP/$n.ours.f32" "$TMP/$n.probs.f32" 1e-4 || fail "$n: dltrain's import differs from PyTorch"
  "$DLTRAIN" export "$TMP/$n.bin" --output "$TMP/$n.out.onnx" >/dev/null
  "$DLTRAIN" import "$TMP/$n.out.onnx" --output "$TMP/$n.re.bin" >/dev/null
  "$DLTRAIN" export "$TMP/$n.re.bin" --debug-forward "$TMP/$n.in.f32" --output "$TMP/$n.re.f32"
  compare_f32 "$TMP/$n.re.f32" "$TMP/$n.ours.f32" 1e-6 || fail "$n: export + import changed the outputs"
  $py "$SRC/scripts/onnx/opencv_run.py" "$TMP/$n.out.onnx" "$TMP/$n.in.f32" "$s" "$s" 3 "$TMP/$n.cv.f32" >/dev/null
  compare_f32 "$TMP/$n.cv.f32" "$TMP/$n.ours.f32" 1e-4 || fail "$n: OpenCV dnn disagrees with dltrain on the exported file"
}

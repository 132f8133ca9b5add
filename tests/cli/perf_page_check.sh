#!/usr/bin/env bash
# docs/performance.md's tables are what scripts/bench/perf_page.py generates from docs/results:
# --check passes on the repository's page, fails (exit 1, a diff naming the line) when a figure
# in the page or in a result file is edited by hand, and regenerating puts the result file's
# figure into the page; unknown, unclosed and missing markers are errors.
source "$(dirname "$0")/common.sh" "$@"
PY=$(command -v python3 || echo /usr/bin/python3)
GEN="$SRC/scripts/bench/perf_page.py"

out=$("$PY" "$GEN" --check) || fail "the repository's page differs from docs/results: $out"
echo "ok: $out"

cp -r "$SRC/docs/results" "$TMP/results"
cp "$SRC/docs/performance.md" "$TMP/page.md"
check() { "$PY" "$GEN" --page "$TMP/page.md" --results "$TMP/results" --check; }

# a figure of the page edited by hand
grep -q '| native | cifar10 | train | 27.4 (25.7) |' "$TMP/page.md" || fail "the native cifar10 train row is not in the page"
sed -i 's/| native | cifar10 | train | 27.4 (25.7) |/| native | cifar10 | train | 26.4 (25.7) |/' "$TMP/page.md"
rc=0; out=$(check 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "a hand-edited figure: exit $rc, expected 1 ($out)"
grep -q '^-| native | cifar10 | train | 26.4 (25.7)' <<< "$out" || fail "the diff does not show the edited line: $out"
grep -q '^+| native | cifar10 | train | 27.4 (25.7)' <<< "$out" || fail "the diff does not show the file's figure: $out"
echo "ok: hand-edited page figure -> exit 1, $(grep -c '^[-+]|' <<< "$out") changed lines in the diff"
"$PY" "$GEN" --page "$TMP/page.md" --results "$TMP/results" >/dev/null
check >/dev/null || fail "regenerating did not restore the page"
echo "ok: regenerated"

# a result file changed: the page is stale until regenerated, then shows the new figure
f="$TMP/results/2026-11-27-h200-resnet18-switches.jsonl"
grep -q '"train_step_ms": 58.51' "$f" || fail "58.51 is not in $f"
sed -i 's/"train_step_ms": 58.51/"train_step_ms": 60.07/' "$f"
rc=0; check >/dev/null 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "a changed result file: exit $rc, expected 1"
"$PY" "$GEN" --page "$TMP/page.md" --results "$TMP/results" >/dev/null
grep -q '| float32 | `BatchNormKernels: cudnn` (default) | 60.07 ms | 20.11 ms |' "$TMP/page.md" ||
  fail "the regenerated page lacks the result file's 60.07 ms"
grep -q '58.51' "$TMP/page.md" && fail "the old figure 58.51 is still in the page"
echo "ok: changed result file -> exit 1, regenerated page shows 60.07 ms"

# a derived figure: the GPU ratio is computed from the two sides' images/s
sed -i 's/"images_per_second": 113508.2/"images_per_second": 112327.5/' "$TMP/results/2026-11-27-h200-gpu_vs_pytorch.jsonl"
"$PY" "$GEN" --page "$TMP/page.md" --results "$TMP/results" >/dev/null
grep -q '| cifar10 | train | 256 | 224,655 | 112,328 | 2.00 |' "$TMP/page.md" || fail "the cifar10 ratio was not recomputed: $(grep '| cifar10 | train | 256' "$TMP/page.md")"
echo "ok: ratio recomputed from images/s (224,655 / 112,328 = 2.00)"

# markers
cp "$SRC/docs/performance.md" "$TMP/bad.md"
sed -i 's/<!-- table: dp_overlap -->/<!-- table: dp_overlapp -->/' "$TMP/bad.md"
rc=0; out=$("$PY" "$GEN" --page "$TMP/bad.md" --check 2>&1) || rc=$?
[[ $rc -ne 0 ]] && grep -q "unknown table 'dp_overlapp'" <<< "$out" || fail "unknown marker: exit $rc: $out"
echo "ok: unknown marker -> $out"
cp "$SRC/docs/performance.md" "$TMP/bad.md"
sed -i '/<!-- table: gpu_mixed -->/,/<!-- end -->/d' "$TMP/bad.md"
rc=0; out=$("$PY" "$GEN" --page "$TMP/bad.md" --check 2>&1) || rc=$?
[[ $rc -ne 0 ]] && grep -q "no marker for: gpu_mixed" <<< "$out" || fail "missing table: exit $rc: $out"
echo "ok: missing table -> $out"
cp "$SRC/docs/performance.md" "$TMP/bad.md"
awk '/<!-- table: scaling_model -->/{s=1} s&&/<!-- end -->/{s=0; next} {print}' "$SRC/docs/performance.md" > "$TMP/bad.md"
rc=0; out=$("$PY" "$GEN" --page "$TMP/bad.md" --check 2>&1) || rc=$?
[[ $rc -ne 0 ]] && grep -q "table 'scaling_model' has no '<!-- end -->'" <<< "$out" || fail "unclosed marker: exit $rc: $out"
echo "ok: unclosed marker -> $out"

# a benchmark's --write-docs (perf_page.save_result): its raw rows become the newest result file
# of that benchmark, and the table is computed from them (ms, img/s and ratio not as stored text)
cp "$SRC/docs/performance.md" "$TMP/page.md"
PYTHONPATH="$SRC/scripts/bench" "$PY" - "$TMP/results" "$TMP/page.md" <<'PY' > "$TMP/save.out"
import sys
import perf_page
run = {"command": "scripts/bench/onnx_inference_vs_peers --write-docs", "machine": "test CPU", "threads": 2,
       "batch": 32, "rounds": 3, "header": ["header line one", "header line two"]}
rows = [{"network": "resnet50", "dltrain": 1000.4, "dltrain_load": 0.0, "pytorch": 3000.0, "pytorch_load": 0.5,
         "onnxruntime": 1250.0, "onnxruntime_load": 0.1, "ratio_min": 1.2, "ratio_max": 1.3}]
perf_page.save_result("onnx_inference_vs_peers", "testhost", run, rows, sys.argv[1], sys.argv[2])
PY
grep -q "perf_page: rewrote the tables" "$TMP/save.out" || fail "save_result did not regenerate the page: $(cat "$TMP/save.out")"
row='| resnet50 | 1000 ms (32.0 img/s) | 3000 ms (10.7 img/s), foreign load 0.5 | 1250 ms (25.6 img/s) | 1.25x (1.20-1.30) |'
grep -qF "$row" "$TMP/page.md" || fail "the new run's row is not in the page: $(grep -A6 'header line two' "$TMP/page.md")"
grep -q "^header line one$" "$TMP/page.md" || fail "the run's header is not in the page"
grep -q "results/$(date -u +%F)-testhost-onnx_inference_vs_peers.jsonl" "$TMP/page.md" || fail "the table does not link the new file"
"$PY" "$GEN" --page "$TMP/page.md" --results "$TMP/results" --check > /dev/null || fail "--check after save_result"
echo "ok: save_result wrote $(date -u +%F)-testhost-onnx_inference_vs_peers.jsonl and the page shows: $row"

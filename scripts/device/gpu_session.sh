#!/usr/bin/env bash
# What one call on a lent GPU machine runs (docs/gpu.md), from the repository root, in under
# 9 minutes: unpacks .devbundle/dltrain-bundle.tar.xz (scripts/device/bundle.sh), puts the
# bundle and the device's own CUDA libraries (/usr/local/cuda, the pip nvidia-* packages) on
# LD_LIBRARY_PATH, checks that every library resolves, then nvidia-smi, dltrain_gpu_tests (a
# failed case re-run alone under CUDA_LAUNCH_BLOCKING=1), `dltrain train` on generated shapes
# data on the CPU, the GPU, the GPU with Deterministic, multi-gpu (one NCCL rank) and with
# DLT_CUDA_GRAPH=1 (each GPU run in the CPU run's band; the one-rank run's weights equal the
# deterministic GPU run's), the switches not yet the default and a segmentation network the
# same way, and scripts/bench/gpu_vs_pytorch (with CUDA-graph rows for two networks,
# Precision: mixed rows for resnet18-cifar, and every network again with $BENCH_SWITCHES:
# default "DLT_CUDNN_ENGINES=exhaustive DLT_BN_KERNELS=dltrain
# DLT_ALLOW_REDUCED_PRECISION_REDUCTION=1"; BENCH_SWITCHES="" skips them).
# Everything is logged under $OUT (at most 8 files come back: see the end). Exit codes: 0 all
# stages passed, 1 a stage failed, 3 libraries missing, 77 no GPU (stops before GPU stages).
#   bash scripts/device/gpu_session.sh [--stages "tests train bench"] [--test-args "[net]"]
#     --stages     which of the GPU stages to run, in the order given (default: "tests train
#                  bench"; also "sanitize", "profile", "camvid", "zoo"); "sanitize" runs
#                  dltrain_gpu_tests' kernel tags under compute-sanitizer memcheck: out-of-bounds
#                  and misaligned accesses a passing test can hide; "profile" logs `dltrain time`'s
#                  per-layer times with each convolution's cuDNN algorithm beside torch.profiler's
#                  per-operator CUDA times for resnet18-cifar and cifar10, after the step times
#                  under CudnnEngines auto / exhaustive x BatchNormKernels cudnn / dltrain);
#                  "camvid" trains seed 003's SegNet at 360x480 on CamVid with dltrain and
#                  PyTorch (.devbundle/camvid.tar); "zoo" times imported networks' inference
#                  at batch 256 against PyTorch eager (ZOO_NETWORKS, default resnet50,
#                  mobilenet_v2, efficientnet_b0, convnext_tiny, vit_b_16, swin_t; in each of
#                  ZOO_PRECISIONS, default "single,mixed": float32, and Precision: mixed against
#                  autocast bfloat16), dltrain also under each of
#                  ZOO_VARIANTS (e.g. "nortc:DLT_CUDNN_RUNTIME_COMPILED=0", or
#                  "clip@mobilenet_v2:..." for the networks named; default none); PyTorch is
#                  timed first per network and precision, and a stage cut by ZOO_SECONDS keeps its table
#   Environment: SESSION_SECONDS (the whole budget, default 510), TESTS_SECONDS, BENCH_SECONDS,
#   CAMVID_SECONDS, ZOO_SECONDS (caps per stage), RESERVE_SECONDS (kept for the stages after
#   bench / camvid / zoo), CAMVID_EPOCHS (3), BENCH_NETWORKS, BENCH_GRAPH_NETWORKS ("none": no
#   CUDA-graph rows), BENCH_MIXED_NETWORKS (default "resnet18-cifar cifar10-vit"), BENCH_SWITCHES,
#   CAMVID_PYTORCH_ONLY (an earlier run's resolved config: PyTorch's side alone), ZOO_NETWORKS,
#   ZOO_PRECISIONS, ZOO_VARIANTS, PROFILE_NETWORKS, PROFILE_ENGINES. A stage
#   with too little time left is skipped and named.
#     --test-args  arguments for dltrain_gpu_tests (a Catch2 tag or test name filter)
#     --sanitize-args  one Catch2 test spec (a test name may hold spaces) for the sanitize
#                  stage alone (default: --test-args, else the kernel tags)
set -uo pipefail

stages="tests train bench"
test_args=()
sanitize_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --stages) stages="$2"; shift 2 ;;
    --test-args) read -ra test_args <<< "$2"; shift 2 ;;
    --sanitize-args) sanitize_args=("$2"); shift 2 ;;  # one spec: test names hold spaces
    *) echo "gpu_session: unknown argument '$1' (--stages \"tests train bench sanitize\", --test-args ARGS)" >&2; exit 2 ;;
  esac
done
want() { [[ " $stages " == *" $1 "* ]]; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export DLT_SOURCE_DIR="$root"  # the tests' configs/ (their compiled-in path is this machine's)
OUT="${OUT:-/tmp/gpu_session_out}"
budget="${SESSION_SECONDS:-510}"  # the device tool's limit is 600 s per command
start=$SECONDS
work="${TMPDIR:-/tmp}/gpu_session"
rm -rf "$work"
mkdir -p "$OUT" "$work/logs"
exec > >(tee -a "$OUT/session.log") 2>&1

left() { echo $((budget - (SECONDS - start))); }
stage() { echo; echo "=== [$((SECONDS - start))s] $*"; }
failures=()

# Copies what should come back into $OUT: at most 8 files, flat (the device tool's limits).
finish() {
  local rc=$1
  stage "done: exit $rc; failures: ${failures[*]:-none}"
  [[ -f "$work/logs/gpu_tests.log" ]] && cp "$work/logs/gpu_tests.log" "$OUT/"
  [[ -f "$work/logs/gpu_tests_rerun.log" ]] && cp "$work/logs/gpu_tests_rerun.log" "$OUT/"
  [[ -f "$work/bench/table.md" ]] && cp "$work/bench/table.md" "$OUT/bench_table.md"
  [[ -f "$work/run/summary.json" ]] && cp "$work/run/summary.json" "$OUT/train_summary.json"
  [[ -f "$work/camvid_out/table.md" ]] && cp "$work/camvid_out/table.md" "$OUT/camvid_table.md"
  [[ -f "$work/zoo/table.md" ]] && cp "$work/zoo/table.md" "$OUT/zoo_table.md"
  tar -C "$work" -czf "$OUT/all_logs.tar.gz" --exclude=data --exclude=bundle --exclude=camvid --exclude=segdata \
    --exclude='*.bin' --exclude='*.onnx' --exclude='*.onnx.data' --exclude='*.png' --exclude='*.jpg' . 2> /dev/null || true
  exit "$rc"
}

stage "dltrain GPU session: $(git rev-parse --short HEAD 2> /dev/null || echo '?'), budget ${budget}s, OUT=$OUT"
uname -a
echo "$(nproc) cores; $(ldd --version 2>&1 | head -1); $(grep PRETTY_NAME /etc/os-release 2> /dev/null)"
python3 --version 2>&1 || true

# --- 1. the bundle ------------------------------------------------------------------------------
stage "unpacking the bundle"
archive="$root/.devbundle/dltrain-bundle.tar.xz"
if [[ ! -f "$archive" ]]; then
  echo "gpu_session: $archive missing: run scripts/device/bundle.sh before the call and carry .devbundle"
  finish 3
fi
B="$work/bundle"
mkdir -p "$B"
if ! tar -xJf "$archive" -C "$B" 2> "$work/logs/untar.err"; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$archive" "$B" ||
    { echo "gpu_session: cannot unpack $archive: $(cat "$work/logs/untar.err")"; finish 3; }
fi
echo "bundle of commit $(cat "$B/COMMIT" 2> /dev/null || echo '?'); $(grep -c 'DLT_HAVE_CUDA 1' "$B/build_config.h") = CUDA backend"
[[ -s "$B/DIRTY" ]] && { echo "built from a tree with uncommitted changes in:"; cat "$B/DIRTY"; }

# --- 2. library path: bundle, then the device's CUDA toolkit, then pip nvidia-* ----------------
stage "finding the CUDA libraries"
dirs=("$B/lib")
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [[ -d "$d" ]] && dirs+=("$d")
done
nv_root=$(python3 -c 'import nvidia, os; print(os.pathsep.join(list(nvidia.__path__)))' 2> /dev/null || true)
if [[ -n "$nv_root" ]]; then
  IFS=: read -ra nv_roots <<< "$nv_root"
  while read -r d; do dirs+=("$d"); done < <(find "${nv_roots[@]}" -name 'lib*.so*' -printf '%h\n' 2> /dev/null | sort -u)
else
  echo "(python3 has no 'nvidia' package: cuDNN / NCCL must come from /usr/local/cuda)"
fi
# Only our binaries get this path (through wrappers in $work/bin): exported, it would put our
# libgomp / libibverbs / the toolkit's cuBLAS ahead of PyTorch's own in the benchmark.
dlt_ld="$(IFS=:; echo "${dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH for dltrain: $dlt_ld"
mkdir -p "$work/bin"
for b in dltrain dltrain_gpu_tests dltrain_tests; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$dlt_ld" "$B/bin/$b" > "$work/bin/$b"
  chmod +x "$work/bin/$b"
done
ldd() { LD_LIBRARY_PATH="$dlt_ld" command ldd "$@"; }
# The CUDA plugin (docs/gpu.md "The CUDA plugin") sits in the bundle's lib/, where dltrain
# looks for it (../lib beside bin/); the test binaries link it.
plugin="$B/lib/libdltrain_cuda.so"
[[ -f $plugin ]] || { echo "gpu_session: the bundle has no lib/libdltrain_cuda.so (a bundle.sh of a CUDA build has)"; finish 3; }
for f in "$B/bin/dltrain" "$B/bin/dltrain_gpu_tests" "$B/bin/dltrain_tests" "$plugin"; do
  echo "-- ldd ${f#"$B"/}"
  ldd "$f" | grep -E 'cuda|cublas|cudnn|nccl|dnnl|stdc|not found' | sed 's/ (0x.*//'
done
notfound=$(for f in "$B/bin/dltrain" "$B/bin/dltrain_gpu_tests" "$plugin"; do ldd "$f"; done | grep 'not found' | sort -u)
if [[ -n "$notfound" ]]; then
  echo "gpu_session: unresolved libraries:"
  echo "$notfound"
  if echo "$notfound" | grep -qv 'libcuda\.so' || nvidia-smi -L > /dev/null 2>&1; then
    echo "gpu_session: cannot run the binaries (look for the libraries above: find / -name 'libcudnn.so*')"
    finish 3
  fi
  echo "(only the driver's libcuda is missing: this machine has no NVIDIA driver)"
fi
undefined=$(ldd -r "$B/bin/dltrain_gpu_tests" 2>&1 | grep -i 'undefined symbol' | grep -v 'libcuda\.so' | head -5)
[[ -n "$undefined" ]] && { echo "gpu_session: symbols the device's libraries lack (older cuDNN / cuBLAS?):"; echo "$undefined"; }

# --- 3. the GPU ---------------------------------------------------------------------------------
stage "nvidia-smi"
if ! nvidia-smi 2>&1; then
  echo "gpu_session: no GPU: stopping before the GPU stages (nvidia-smi failed or is missing)"
  finish 77
fi
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv 2>&1 || true

# --- 4. GPU tests ---------------------------------------------------------------------------------
stage_tests() {
t=$(( $(left) > 240 ? ${TESTS_SECONDS:-200} : $(left) / 2 ))
stage "dltrain_gpu_tests (at most ${t}s)"
timeout -k 5 "$t" "$work/bin/dltrain_gpu_tests" --durations yes "${test_args[@]}" > "$work/logs/gpu_tests.log" 2>&1
rc=$?
grep -E 'no GPU|test cases|assertions|FAILED|failed|passed|^[0-9.]+ s: ' "$work/logs/gpu_tests.log" | tail -60
case $rc in
  0) echo "gpu tests: passed" ;;
  77) echo "gpu tests: skipped (no GPU)"; failures+=(gpu_tests_skipped) ;;
  124|137) echo "gpu tests: TIMED OUT after ${t}s"; failures+=(gpu_tests_timeout) ;;
  *) echo "gpu tests: FAILED (exit $rc); first failures:"; grep -B3 -A12 'FAILED' "$work/logs/gpu_tests.log" | head -80
     failures+=(gpu_tests) ;;
esac
# A failure's second look, in the same call: each failed test case alone under
# CUDA_LAUNCH_BLOCKING=1 (the error at the launch that caused it, not a later call); when the
# run died (signal, time limit: a sticky CUDA fault ends every test after it), each tag alone.
if [[ $rc -ne 0 && $rc -ne 77 ]]; then
  python3 scripts/device/failed_tests.py "$work/logs/gpu_tests.log" > "$work/logs/failed_names.txt" 2> /dev/null || true
  if [[ $rc -ge 124 ]]; then
    "$work/bin/dltrain_gpu_tests" --list-tags 2> /dev/null | grep -oE '\[[a-z0-9_-]+\]' | grep -v '^\[gpu\]$' | sort -u > "$work/logs/rerun_specs.txt"
  else
    sed 's/[],[\\]/\\&/g' "$work/logs/failed_names.txt" | head -6 > "$work/logs/rerun_specs.txt"
  fi
  while read -r spec; do
    [[ -z "$spec" ]] && continue
    [[ $(left) -lt 240 ]] && { echo "rerun: stopped, $(left)s left"; break; }
    echo "-- rerun alone, CUDA_LAUNCH_BLOCKING=1: $spec"
    CUDA_LAUNCH_BLOCKING=1 timeout -k 5 45 "$work/bin/dltrain_gpu_tests" "$spec" < /dev/null > "$work/logs/rerun_one.log" 2>&1
    r=$?
    echo "   exit $r"
    [[ $r -ne 0 ]] && grep -A10 -m2 'FAILED\|fatal error' "$work/logs/rerun_one.log" | head -22 | cut -c1-240
    { echo "=== $spec: exit $r"; cat "$work/logs/rerun_one.log"; } >> "$work/logs/gpu_tests_rerun.log"
  done < "$work/logs/rerun_specs.txt"
fi
}

# --- 4b. compute-sanitizer memcheck over our own kernels (opt-in stage "sanitize") -----------------
stage_sanitize() {
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null || true)
t=$(( $(left) > 300 ? 120 : $(left) / 3 ))
stage "compute-sanitizer memcheck (at most ${t}s)"
if [[ -z "$san" ]]; then
  echo "sanitize: no compute-sanitizer on this machine"; failures+=(sanitize_missing)
else
  tags=("${sanitize_args[@]}")
  [[ ${#tags[@]} -eq 0 ]] && tags=("${test_args[@]}")
  [[ ${#tags[@]} -eq 0 ]] && tags=("[elementwise],[loss],[optim],[bn],[upload]")
  timeout -k 5 "$t" env LD_LIBRARY_PATH="$dlt_ld" "$san" --tool memcheck --error-exitcode 9 \
    --print-limit 20 "$B/bin/dltrain_gpu_tests" "${tags[@]}" > "$work/logs/sanitize.log" 2>&1
  rc=$?
  grep -E 'ERROR SUMMARY|Invalid|test cases|assertions' "$work/logs/sanitize.log" | head -30
  case $rc in
    0) echo "sanitize: memcheck clean (${tags[*]})" ;;
    77) echo "sanitize: skipped (no GPU)"; failures+=(sanitize_skipped) ;;
    124|137) echo "sanitize: TIMED OUT after ${t}s"; failures+=(sanitize_timeout) ;;
    *) echo "sanitize: exit $rc"; grep -A8 -m3 '========= Invalid' "$work/logs/sanitize.log"; failures+=(sanitize) ;;
  esac
fi
}

# --- 5. training runs: the GPU against the CPU on the same data, seed and command -----------------
# CPU, GPU, GPU with Deterministic, multi-gpu (one NCCL rank) with Deterministic, GPU with
# DLT_CUDA_GRAPH=1, GPU with BatchNormKernels dltrain (float32 with CudnnEngines exhaustive, and
# mixed), and a segmentation network (below). Each GPU run must land in the CPU run's band (validation accuracy within 3
# points, validation loss within 5%: float sums in another order drift over 90 Adam steps); the
# one-rank multi-gpu run must give the deterministic single-GPU run's weights (compared as ONNX
# initializers by scripts/device/compare_models.py).
stage_train() {
stage "dltrain train configs/shapes.yaml: cpu, gpu, gpu deterministic, multi-gpu (1 rank), CUDA graph"
"$work/bin/dltrain" make-dataset shapes "$work/data" --classes 4 --per-class 300 --size 32x32 --seed 3 > "$work/logs/make_dataset.log" 2>&1 ||
  { echo "make-dataset failed: $(tail -3 "$work/logs/make_dataset.log")"; failures+=(make_dataset); }
train_run() {  # $1 name, $2 ExecutionEnvironment, then extra arguments
  local name=$1 env=$2; shift 2
  [[ $(left) -lt 45 ]] && { echo "train $name: skipped, $(left)s left"; failures+=("train_${name}_no_time"); return 1; }
  timeout -k 5 90 "$work/bin/dltrain" train configs/shapes.yaml --output-dir "$work/$name" \
    --set data.train="$work/data/train" --set data.validation="$work/data/test" \
    --set training.ExecutionEnvironment="$env" --set training.MaxEpochs=6 --set training.Seed=5 "$@" \
    > "$work/logs/train_$name.log" 2>&1
  local rc=$?
  if [[ $rc -ne 0 || ! -f "$work/$name/summary.json" ]]; then
    echo "train $name: FAILED (exit $rc)"; tail -5 "$work/logs/train_$name.log"; failures+=("train_$name"); return 1
  fi
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("train %-10s %-8s validation accuracy %6.2f%%, loss %.5f, %8.0f images/s, %s" % (sys.argv[2], d["device"], d["validation_accuracy"], d["validation_loss"], d["train_images_per_second"], "; ".join(d.get("warnings", [])) or "no warnings"))' \
    "$work/$name/summary.json" "$name"
  "$work/bin/dltrain" export "$work/$name/model.bin" -o "$work/$name/model.onnx" > /dev/null 2>&1 || echo "export $name failed"
}
in_band() {  # $1 run name, $2 the CPU run (default run_cpu): validation accuracy and loss (and
             # a segmentation run's mean IoU, within 0.05) against the CPU run's
  python3 - "$work/${2:-run_cpu}/summary.json" "$work/$1/summary.json" "$1" <<'PYEOF'
import json, sys
c, g = (json.load(open(p)) for p in sys.argv[1:3])
da = abs(g["validation_accuracy"] - c["validation_accuracy"])
dl = abs(g["validation_loss"] - c["validation_loss"]) / c["validation_loss"]
ok = da <= 3.0 and dl <= 0.05
iou = ""
if "validation_mean_iou" in c and "validation_mean_iou" in g:
    di = abs(g["validation_mean_iou"] - c["validation_mean_iou"])
    ok = ok and di <= 0.05
    iou = f", mean IoU {g['validation_mean_iou']:.4f} / {c['validation_mean_iou']:.4f}"
print(f"{sys.argv[3]} against the CPU: accuracy {g['validation_accuracy']:.2f} / {c['validation_accuracy']:.2f} "
      f"({da:.2f} points apart), loss {100 * dl:.2f}% apart{iou}: {'in band' if ok else 'OUT OF BAND'}")
sys.exit(0 if ok else 1)
PYEOF
}
train_run run_cpu cpu
train_run run gpu && { in_band run || failures+=(train_band); }
train_run run_det gpu --set training.Deterministic=true && { in_band run_det || failures+=(train_det_band); }
train_run run_multi multi-gpu --set training.Deterministic=true && { in_band run_multi || failures+=(train_multi_band); }
grep -iE 'nccl|rank|worker' "$work/logs/train_run_multi.log" | head -5
if [[ -f "$work/run_det/model.onnx" && -f "$work/run_multi/model.onnx" ]]; then
  python3 scripts/device/compare_models.py "$work/run_det/model.onnx" "$work/run_multi/model.onnx" --tol 1e-6 ||
    { echo "multi-gpu (1 rank) weights differ from the single-GPU run's"; failures+=(multi_weights); }
fi
# A rank killed (GPU item 3's fault path; one GPU, so one NCCL rank): the multi-gpu launcher must
# end within 30 s of its worker's SIGKILL, non-zero, with a line naming the rank.
"$work/bin/dltrain" train configs/shapes.yaml --output-dir "$work/run_kill" --set data.train="$work/data/train" \
  --set data.validation="$work/data/test" --set training.ExecutionEnvironment=multi-gpu --set training.MaxEpochs=500 \
  > "$work/logs/train_kill.log" 2>&1 &
launcher=$!
worker=""
for _ in $(seq 1 150); do  # the worker: the launcher's child, once it has trained a while
  worker=$(pgrep -P "$launcher" | head -1)
  [[ -n "$worker" ]] && grep -qE '^\| +[0-9]+ \|' "$work/logs/train_kill.log" && break
  sleep 0.2
done
if [[ -z "$worker" ]]; then
  echo "rank killed: no worker process seen"; failures+=(kill_no_worker); kill -9 "$launcher" 2> /dev/null
else
  sleep 1; kill -9 "$worker"; killed_at=$SECONDS
  ( sleep 60; kill -9 "$launcher" 2> /dev/null ) & guard=$!
  wait "$launcher"; krc=$?; kill "$guard" 2> /dev/null
  echo "rank killed: launcher exit $krc after $((SECONDS - killed_at))s; $(grep -iE 'rank|worker|signal' "$work/logs/train_kill.log" | tail -2 | tr '\n' ' ')"
  [[ $krc -ne 0 && $((SECONDS - killed_at)) -le 30 ]] || failures+=(kill_rank)
fi
if train_run run_auto auto; then  # MATLAB's 'auto': the GPU when there is one
  grep -q '"device":"cuda:0"' "$work/run_auto/summary.json" || { echo "auto did not pick the GPU"; failures+=(auto_not_gpu); }
fi
DLT_CUDA_GRAPH=1 train_run run_graph gpu && { in_band run_graph || failures+=(train_graph_band); }
grep -E 'CUDA graph' "$work/logs/train_run_graph.log" | head -3
# Segmentation (seed 003's workflow, not yet run on a GPU): the small SegNet of
# configs/shapes-seg.yaml (segnetLayers: max pooling with indices, unpooling, batch norm,
# pixelClassification with undefined edge pixels) trained on the CPU and on the GPU from the same
# seed, each in the other's band (pixel accuracy within 3 points, loss within 5 %, mean IoU within
# 0.05); then `dltrain segment` of the GPU's model on the GPU and on the CPU over the same labelled
# images must give the same metrics (global accuracy within 0.002, mean IoU within 0.005: the same
# model, only the summation order differs).
"$work/bin/dltrain" make-dataset shapes-seg "$work/segdata" --classes 4 --count 1200 --seed 3 > "$work/logs/make_segdata.log" 2>&1 ||
  { echo "make-dataset shapes-seg failed: $(tail -3 "$work/logs/make_segdata.log")"; failures+=(make_segdata); }
seg_run() {  # $1 name, $2 ExecutionEnvironment
  [[ $(left) -lt 60 ]] && { echo "train $1: skipped, $(left)s left"; failures+=("train_$1_no_time"); return 1; }
  timeout -k 5 150 "$work/bin/dltrain" train configs/shapes-seg.yaml --output-dir "$work/$1" \
    --set data.train.images="$work/segdata/train/images" --set data.train.labels="$work/segdata/train/labels" \
    --set data.validation.images="$work/segdata/test/images" --set data.validation.labels="$work/segdata/test/labels" \
    --set training.ExecutionEnvironment="$2" --set training.MaxEpochs=6 --set training.Seed=5 > "$work/logs/train_$1.log" 2>&1
  local rc=$?
  if [[ $rc -ne 0 || ! -f "$work/$1/summary.json" ]]; then
    echo "train $1: FAILED (exit $rc)"; tail -5 "$work/logs/train_$1.log"; failures+=("train_$1"); return 1
  fi
  tail -1 "$work/logs/train_$1.log"
}
if seg_run seg_cpu cpu && seg_run seg_gpu gpu; then
  in_band seg_gpu seg_cpu || failures+=(seg_band)
  for dev in gpu cpu; do
    args=(); [[ $dev == gpu ]] && args=(--gpu 0)
    timeout -k 5 90 "$work/bin/dltrain" segment "$work/seg_gpu/model.bin" "$work/segdata/test/images" \
      --labels "$work/segdata/test/labels" -o "$work/segment_$dev" --json "${args[@]}" > "$work/logs/segment_$dev.json" \
      2> "$work/logs/segment_$dev.log" || { echo "segment on $dev: exit $?: $(tail -2 "$work/logs/segment_$dev.log")"; failures+=("segment_$dev"); }
  done
  python3 - "$work/logs/segment_gpu.json" "$work/logs/segment_cpu.json" <<'PYEOF' || failures+=(segment_agree)
import json, sys
g, c = (json.load(open(p))["DataSetMetrics"] for p in sys.argv[1:3])
ok = abs(g["GlobalAccuracy"] - c["GlobalAccuracy"]) <= 0.002 and abs(g["MeanIoU"] - c["MeanIoU"]) <= 0.005
print(f"dltrain segment, GPU / CPU on the same model: GlobalAccuracy {g['GlobalAccuracy']:.5f} / {c['GlobalAccuracy']:.5f}, "
      f"MeanIoU {g['MeanIoU']:.5f} / {c['MeanIoU']:.5f}, MeanBFScore {g['MeanBFScore']:.4f} / {c['MeanBFScore']:.4f}: "
      f"{'agree' if ok else 'DISAGREE'}")
sys.exit(0 if ok else 1)
PYEOF
fi
# The other tasks (regression, multi-label, generalized Dice; their loss kernels are new on the
# GPU): each trained on the CPU and on the GPU from the same seed, in each other's band
# (validation loss within 5 %; RMSE within 5 %, F1 and mean IoU within 0.03).
task_band() {  # $1 CPU run, $2 GPU run, $3 the headline field of summary.json
  python3 - "$work/$1/summary.json" "$work/$2/summary.json" "$3" <<'PYEOF'
import json, sys
c, g = (json.load(open(p)) for p in sys.argv[1:3])
f = sys.argv[3]
dl = abs(g["validation_loss"] - c["validation_loss"]) / max(abs(c["validation_loss"]), 1e-12)
dm = abs(g[f] - c[f]) / (abs(c[f]) if f == "validation_rmse" else 1.0)
ok = dl <= 0.05 and dm <= (0.05 if f == "validation_rmse" else 0.03)
print(f"{sys.argv[2].split('/')[-2]}: GPU / CPU {f} {g[f]:.4f} / {c[f]:.4f}, loss {g['validation_loss']:.5f} / "
      f"{c['validation_loss']:.5f}: {'in band' if ok else 'OUT OF BAND'}")
sys.exit(0 if ok else 1)
PYEOF
}
task_run() {  # $1 name, $2 config, $3 ExecutionEnvironment, then --set arguments
  local name=$1 cfg=$2 env=$3; shift 3
  [[ $(left) -lt 60 ]] && { echo "train $name: skipped, $(left)s left"; failures+=("train_${name}_no_time"); return 1; }
  timeout -k 5 150 "$work/bin/dltrain" train "$cfg" --output-dir "$work/$name" --set training.ExecutionEnvironment="$env" \
    --set training.MaxEpochs=6 --set training.Seed=5 "$@" > "$work/logs/train_$name.log" 2>&1 ||
    { echo "train $name: FAILED (exit $?)"; tail -5 "$work/logs/train_$name.log"; failures+=("train_$name"); return 1; }
}
for split in train test; do  # responses of the shapes: Size = 10 x class + 5, Tilt = 2 - class
  ( cd "$work/data" && k=0 && echo "File,Size,Tilt" &&
    for c in $(ls "$split" | sort); do for f in $(ls "$split/$c" | sort); do echo "$split/$c/$f,$((10 * k + 5)),$((2 - k))"; done; k=$((k + 1)); done
  ) > "$work/data/$split.csv"
done
cat > "$work/regression.yaml" <<YAML
layers:
  - {type: imageInput, InputSize: [32, 32, 3], Normalization: zerocenter}
  - {type: convolution2d, FilterSize: 3, NumFilters: 16, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization}
  - {type: relu}
  - {type: maxPooling2d, PoolSize: 2, Stride: 2}
  - {type: convolution2d, FilterSize: 3, NumFilters: 32, Padding: same, WeightsInitializer: he}
  - {type: batchNormalization}
  - {type: relu}
  - {type: globalAveragePooling2d}
  - {type: fullyConnected, OutputSize: 2}
data: {train: $work/data/train.csv, validation: $work/data/test.csv, ResponseNormalization: zscore}
training: {Loss: mse, Solver: adam, InitialLearnRate: 0.003, MiniBatchSize: 64, Shuffle: every-epoch, Metrics: [rmse, mae]}
YAML
if task_run reg_cpu "$work/regression.yaml" cpu && task_run reg_gpu "$work/regression.yaml" gpu; then
  task_band reg_cpu reg_gpu validation_rmse || failures+=(regression_band)
fi
"$work/bin/dltrain" make-dataset shapes-multi "$work/multidata" --count 1500 --seed 3 > "$work/logs/make_multidata.log" 2>&1 ||
  { echo "make-dataset shapes-multi failed: $(tail -3 "$work/logs/make_multidata.log")"; failures+=(make_multidata); }
multi_sets=(--set data.train="$work/multidata/train.csv" --set data.validation="$work/multidata/test.csv")
if task_run multi_cpu configs/shapes-multilabel.yaml cpu "${multi_sets[@]}" &&
   task_run multi_gpu configs/shapes-multilabel.yaml gpu "${multi_sets[@]}"; then
  task_band multi_cpu multi_gpu validation_f1 || failures+=(multilabel_band)
fi
dice_sets=(--set data.train.images="$work/segdata/train/images" --set data.train.labels="$work/segdata/train/labels"
           --set data.validation.images="$work/segdata/test/images" --set data.validation.labels="$work/segdata/test/labels"
           --set training.Loss=generalized-dice)
if task_run dice_cpu configs/shapes-seg.yaml cpu "${dice_sets[@]}" && task_run dice_gpu configs/shapes-seg.yaml gpu "${dice_sets[@]}"; then
  task_band dice_cpu dice_gpu validation_mean_iou || failures+=(dice_band)
fi
# The switches not yet the default (docs/gpu.md): dltrain's batch-norm kernels with the exhaustive
# convolution search, float32 and mixed precision, each in the CPU's band.
DLT_CUDNN_ENGINES=exhaustive DLT_BN_KERNELS=dltrain train_run run_bnk gpu && { in_band run_bnk || failures+=(train_bnk_band); }
DLT_BN_KERNELS=dltrain train_run run_bnk_mixed gpu --set training.Precision=mixed &&
  { in_band run_bnk_mixed || failures+=(train_bnk_mixed_band); }
}

# --- 5b. where the time goes (stage "profile"): dltrain's steps under the switches that choose
# how the convolutions and batch norms run, in the same call: CudnnEngines auto (cudnnFind's
# pick and the graph API's plans, the fastest per convolution) with BatchNormKernels cudnn and
# dltrain, CudnnEngines exhaustive (heuristics modes B and fallback, every engine's knobs varied:
# its search costs tens of seconds per process on ResNet-18, so once per precision), and in
# mixed precision AllowReducedPrecisionReduction; then dltrain's per-layer times with each
# convolution's cuDNN choice (DLT_LOG=debug), beside torch.profiler's per-operator CUDA times.
# About 320 s with ResNet-18 first: run it in its own call (docs/gpu.md "GPU switches").
stage_profile() {
stage "profile: CudnnEngines auto / exhaustive, BatchNormKernels cudnn / dltrain, AllowReducedPrecisionReduction; per layer against torch.profiler"
profile_run() {  # $1 net, $2 batch, $3 precision, $4 engines, $5 batch-norm kernels, $6 rpr (0/1)
  local log="$work/logs/engines_$1_$3_$4_$5_rpr$6.log" limit=90
  [[ $4 == exhaustive ]] && limit=240
  DLT_CUDNN_ENGINES=$4 DLT_BN_KERNELS=$5 DLT_ALLOW_REDUCED_PRECISION_REDUCTION=$6 DLT_LOG=debug \
    timeout -k 5 "$limit" env -u DLT_ALLOW_TF32 "$work/bin/dltrain" time "configs/$1.yaml" --gpu 0 --batch "$2" \
    --iterations 10 --repeats 3 --warmup 3 --set training.Precision="$3" > "$log" 2>&1 ||
    echo "dltrain time $1 $3 $4 $5 rpr=$6: exit $?"
  local choosing
  choosing=$(grep -oE 'choosing took [0-9]+ ms' "$log" | awk '{s += $3} END {print s + 0}')
  echo "$1 $3 CudnnEngines=$4 BatchNormKernels=$5 AllowReducedPrecisionReduction=$6: $(grep -E '^Batch ' "$log") (choosing $choosing ms)"
  grep -m 2 'exhaustive: candidates' "$log" | cut -c1-220
}
# PROFILE_NETWORKS (default all three) and PROFILE_ENGINES ("auto exhaustive"; "auto" skips the
# exhaustive runs) trim the stage to fit a call.
engines_wanted=" ${PROFILE_ENGINES:-auto exhaustive} "
for spec in "resnet18-cifar 512" "cifar10-bn 256" "cifar10 256"; do
  read -r net batch <<< "$spec"
  [[ " ${PROFILE_NETWORKS:-resnet18-cifar cifar10-bn cifar10} " == *" $net "* ]] || continue
  [[ $(left) -lt 60 ]] && { echo "profile: stopped, $(left)s left"; break; }
  bns="cudnn dltrain"
  [[ $net == cifar10 ]] && bns="cudnn"  # no batch norm in seed 001's network
  last=${bns##* }
  for precision in single mixed; do
    for bn in $bns; do profile_run "$net" "$batch" "$precision" auto "$bn" 0; done
    [[ $(left) -lt 60 ]] && break
    [[ $engines_wanted == *" exhaustive "* ]] && profile_run "$net" "$batch" "$precision" exhaustive "$last" 0
    if [[ $precision == mixed && $net == resnet18-cifar && $(left) -ge 60 ]]; then
      profile_run "$net" "$batch" mixed auto "$last" 1
      [[ $engines_wanted == *" exhaustive "* ]] && profile_run "$net" "$batch" mixed exhaustive "$last" 1
    fi
  done
  DLT_LOG=debug timeout -k 5 90 env -u DLT_ALLOW_TF32 "$work/bin/dltrain" time "configs/$net.yaml" --gpu 0 --batch "$batch" \
    --iterations 5 --repeats 1 --warmup 3 > "$work/logs/profile_dltrain_$net.log" 2>&1 || echo "dltrain time $net: exit $?"
  echo "graph-API plans chosen: $(grep -c 'cuDNN graph-API engine' "$work/logs/profile_dltrain_$net.log"), legacy kept: $(grep -c 'the legacy algorithm (' "$work/logs/profile_dltrain_$net.log")"
  grep -vE '^\[|^debug' "$work/logs/profile_dltrain_$net.log" | tail -12
  [[ $net == cifar10-bn ]] && continue  # PyTorch's profile of the two others is enough
  timeout -k 5 120 python3 scripts/bench/pytorch_cuda.py "configs/$net.yaml" --batch "$batch" --preset strict \
    --iterations 5 --repeats 1 --warmup 5 --profile 3 > "$work/logs/profile_torch_$net.jsonl" 2> "$work/logs/profile_torch_$net.log" ||
    echo "pytorch profile $net: exit $?"
  head -30 "$work/logs/profile_torch_$net.log" | cut -c1-160
done
# Mixed precision, ResNet-18 only (where dltrain is furthest behind PyTorch's autocast): per layer
# beside torch.profiler under autocast bfloat16.
if [[ $(left) -ge 90 && " ${PROFILE_NETWORKS:-resnet18-cifar} " == *" resnet18-cifar "* ]]; then
  DLT_LOG=debug timeout -k 5 90 env -u DLT_ALLOW_TF32 "$work/bin/dltrain" time configs/resnet18-cifar.yaml --gpu 0 \
    --batch 512 --iterations 5 --repeats 1 --warmup 3 --set training.Precision=mixed \
    > "$work/logs/profile_dltrain_resnet18-cifar_mixed.log" 2>&1 || echo "dltrain time resnet18-cifar mixed: exit $?"
  grep -vE '^\[|^debug' "$work/logs/profile_dltrain_resnet18-cifar_mixed.log" | tail -6
  timeout -k 5 120 python3 scripts/bench/pytorch_cuda.py configs/resnet18-cifar.yaml --batch 512 --preset mixed \
    --iterations 5 --repeats 1 --warmup 5 --profile 3 > "$work/logs/profile_torch_resnet18-cifar_mixed.jsonl" \
    2> "$work/logs/profile_torch_resnet18-cifar_mixed.log" || echo "pytorch profile resnet18-cifar mixed: exit $?"
  head -24 "$work/logs/profile_torch_resnet18-cifar_mixed.log" | cut -c1-160
fi
}

# --- 6. benchmark against PyTorch ------------------------------------------------------------------
stage_bench() {
t=$(( $(left) - 15 - ${RESERVE_SECONDS:-0} ))
(( t > ${BENCH_SECONDS:-100000} )) && t=${BENCH_SECONDS}
stage "scripts/bench/gpu_vs_pytorch (at most ${t}s)"
if [[ $t -lt 60 ]]; then
  echo "bench: skipped, only ${t}s left"; failures+=(bench_no_time)
else
  compile_t=$(( t > 330 ? 150 : 0 ))
  run_t=$(( t / 3 < 240 ? t / 3 : 240 ))  # one hung run costs at most a third of the stage
  extra=(--run-timeout "$run_t")
  [[ $compile_t -eq 0 ]] && extra+=(--no-compile)
  # The switches not yet the default, timed beside the defaults in the same run (BENCH_SWITCHES=""
  # in the environment skips them; docs/gpu.md "GPU switches").
  extra+=(--switches "${BENCH_SWITCHES-DLT_CUDNN_ENGINES=exhaustive DLT_BN_KERNELS=dltrain DLT_ALLOW_REDUCED_PRECISION_REDUCTION=1}")
  DLTRAIN="$work/bin/dltrain" timeout -k 5 "$t" scripts/bench/gpu_vs_pytorch --output-dir "$work/bench" \
    --networks "${BENCH_NETWORKS:-cifar10 cifar10-bn resnet18-cifar cifar10-vit}" --compile-networks "resnet18-cifar" \
    --compile-timeout "$compile_t" --graph-networks "${BENCH_GRAPH_NETWORKS:-cifar10 resnet18-cifar}" \
    --mixed-networks "${BENCH_MIXED_NETWORKS:-resnet18-cifar cifar10-vit}" \
    "${extra[@]}" > "$work/logs/bench.log" 2>&1
  rc=$?
  tail -40 "$work/logs/bench.log"
  [[ $rc -eq 0 ]] || { echo "bench: exit $rc"; failures+=(bench); }
  if [[ ! -s "$work/bench/table.md" && -s "$work/bench/results.jsonl" ]]; then  # cut off: table of what ran
    python3 scripts/bench/gpu_vs_pytorch_table.py "$work/bench/results.jsonl" "cifar10 cifar10-bn resnet18-cifar" \
      "$(nvidia-smi -L 2> /dev/null | head -1)" "$work/bench/results.json" > "$work/bench/table.md" && cat "$work/bench/table.md"
  fi
fi
}

# --- 7. seed 003 at its own size (stage "camvid"): configs/camvid-segnet.yaml (SegNet, VGG-16
# encoder, 360x480, the seed's options at MiniBatchSize 4) on CamVid from .devbundle/camvid.tar
# (copy ../shared/datasets/camvid.tar there before the call), dltrain on the GPU against
# scripts/bench/pytorch_segment.py --device cuda (the same network, initialisation, class weights,
# augmentation and options) for CAMVID_EPOCHS epochs (default 3), seed 1: training images/s and
# mean IoU / global accuracy of both sides' val predictions, scored by one metric code.
stage_camvid() {
  local t=$(( $(left) - ${RESERVE_SECONDS:-0} ))
  (( t > ${CAMVID_SECONDS:-240} )) && t=${CAMVID_SECONDS:-240}
  stage "camvid: configs/camvid-segnet.yaml on CamVid, dltrain (gpu) against PyTorch (cuda), ${CAMVID_EPOCHS:-3} epochs (at most ${t}s)"
  local tarball="$root/.devbundle/camvid.tar"
  if [[ ! -f $tarball ]]; then
    echo "camvid: $tarball missing (cp ../shared/datasets/camvid.tar .devbundle/ before the call)"; failures+=(camvid_data); return
  fi
  (( t < 60 )) && { echo "camvid: skipped, only ${t}s left"; failures+=(camvid_no_time); return; }
  datasets/get-camvid.sh "$work/camvid" --from "$tarball" > "$work/logs/get_camvid.log" 2>&1 ||
    { echo "camvid: get-camvid.sh failed: $(tail -2 "$work/logs/get_camvid.log")"; failures+=(camvid_data); return; }
  local only=()  # CAMVID_PYTORCH_ONLY=FILE: PyTorch's side alone, on an earlier run's config.yaml
  [[ -n ${CAMVID_PYTORCH_ONLY:-} ]] && only=(--pytorch-only "$CAMVID_PYTORCH_ONLY")
  DLTRAIN="$work/bin/dltrain" PYTHON=python3 timeout -k 5 "$t" scripts/bench/camvid_segmentation.sh \
    --config configs/camvid-segnet.yaml --device gpu --epochs "${CAMVID_EPOCHS:-3}" --seeds 1 --data "$work/camvid" \
    --output "$work/camvid_out/table.md" "${only[@]}" > "$work/logs/camvid.log" 2>&1
  local rc=$?
  tail -6 "$work/logs/camvid.log"
  for f in "$work"/camvid_out/table-logs/*.log; do  # each side's epochs, for the time per epoch
    [[ -f $f ]] && { echo "-- ${f##*/}"; grep -E 'epoch|Epoch|^\| +[0-9]+ \|' "$f" | tail -5 | cut -c1-160; }
  done
  [[ $rc -eq 0 ]] || { echo "camvid: exit $rc"; failures+=(camvid); }
}

# --- 8. imported ONNX networks (stage "zoo"): torchvision's networks (ZOO_NETWORKS) exported
# here by this machine's PyTorch (the default dynamo exporter; the transformers with one image),
# imported by `dltrain time`'s base:, inference at batch 256 on the GPU against PyTorch eager in
# float32 and mixed precision (scripts/bench/onnx_inference_gpu.py: per network and precision
# PyTorch first, then dltrain and its variants; on the time limit's SIGTERM it writes the table
# of what it measured).
stage_zoo() {
  local t=$(( $(left) - ${RESERVE_SECONDS:-0} ))
  (( t > ${ZOO_SECONDS:-450} )) && t=${ZOO_SECONDS:-450}
  local nets=${ZOO_NETWORKS:-resnet50,mobilenet_v2,efficientnet_b0,convnext_tiny,vit_b_16,swin_t}
  stage "zoo: imported $nets, inference at batch 256 (${ZOO_PRECISIONS:-single,mixed}) against PyTorch eager (at most ${t}s)"
  (( t < 40 )) && { echo "zoo: skipped, only ${t}s left"; failures+=(zoo_no_time); return; }
  DLTRAIN="$work/bin/dltrain" timeout -k 5 "$t" python3 scripts/bench/onnx_inference_gpu.py --output-dir "$work/zoo" \
    --networks "$nets" --precisions "${ZOO_PRECISIONS:-single,mixed}" --run-timeout $(( t / 2 )) --profile \
    --variants "${ZOO_VARIANTS-}" > "$work/logs/zoo.jsonl" 2> "$work/logs/zoo.log"
  local rc=$?
  grep -E '^onnx_inference_gpu: |^\|' "$work/logs/zoo.log" | cut -c1-400
  grep -A14 'torch.profiler' "$work/logs/zoo.log" | cut -c1-200
  [[ $rc -eq 0 ]] || { echo "zoo: exit $rc"; failures+=(zoo); }
}

# --- 9. BatchNormKernels alone (stage "bnk"): ResNet-18 at batch 512, `dltrain time` with
# BatchNormKernels cudnn and dltrain in float32 and mixed, one after the other in this call.
stage_bnk() {
  stage "bnk: resnet18-cifar batch 512, BatchNormKernels cudnn / dltrain, single / mixed"
  local precision bk
  for precision in single mixed; do
    for bk in cudnn dltrain; do
      [[ $(left) -lt 25 ]] && { echo "bnk: stopped, $(left)s left"; failures+=(bnk_no_time); return; }
      DLT_BN_KERNELS=$bk timeout -k 5 $(( $(left) - 5 )) env -u DLT_ALLOW_TF32 "$work/bin/dltrain" time \
        configs/resnet18-cifar.yaml --gpu 0 --batch 512 --iterations 10 --repeats 3 --warmup 3 --json \
        --set training.Precision=$precision > "$work/logs/bnk_${precision}_$bk.json" 2> "$work/logs/bnk_${precision}_$bk.err" ||
        { echo "bnk $precision $bk: exit $?"; failures+=(bnk); continue; }
      python3 -c 'import json, sys; d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print("resnet18-cifar %s BatchNormKernels %s: train %.0f img/s, inference %.0f img/s" % (sys.argv[2], sys.argv[3], d["train_images_per_second"], d["inference_images_per_second"]))' \
        "$work/logs/bnk_${precision}_$bk.json" "$precision" "$bk"
    done
  done
}

for s in $stages; do
  case "$s" in
    tests|sanitize|train|profile|bench|camvid|zoo|bnk) "stage_$s" ;;
    *) echo "gpu_session: unknown stage '$s'"; failures+=("unknown_stage_$s") ;;
  esac
done
[[ ${#failures[@]} -eq 0 ]] && finish 0
finish 1

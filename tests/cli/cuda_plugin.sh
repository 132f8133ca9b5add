#!/usr/bin/env bash
# The CUDA backend is a plugin, libdltrain_cuda.so, opened when a GPU is asked for (docs/gpu.md
# "The CUDA plugin"): `dltrain --version` and a CPU training map no CUDA library (LD_DEBUG=libs
# lists every library a process initializes, dlopen'ed ones included), --version's peak RSS
# stays near a CPU-only build's, and with the plugin out of reach (dltrain copied to a folder
# without it, LD_LIBRARY_PATH empty) CPU training runs, `auto` falls back to the CPU, and `gpu` /
# `multi-gpu` stop with one line naming the missing plugin (exit 3); so does a plugin that
# dlopen refuses. Runs in every build; where dltrain has the plugin beside it and no GPU is
# usable, `gpu` loads it and reports that no device is visible.
source "$(dirname "$0")/common.sh" "$@"
# --version's peak RSS may be at most VERSION_RSS_FACTOR times that of the same binary copied
# where it cannot reach the plugin (a CPU-only dltrain, measured here): both should be the same
# process, so 1.5 leaves room for noise (allocator arenas, the environment), while initializing
# the CUDA libraries costs far more (12 MiB against 230 MiB: 19 times).
VERSION_RSS_FACTOR=1.5
cuda_libs='/lib(cuda|cudart|cudnn|cublas|cublasLt|nccl)[^/]*\.so'
plugin="$(dirname "$DLTRAIN")/libdltrain_cuda.so"
have_plugin=0
[[ -f $plugin ]] && have_plugin=1

# no_cuda_mapped WHAT -- command...: the command succeeds and initializes no CUDA library.
no_cuda_mapped() {
  local what=$1 rc=0
  shift 2
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$TMP/ld" "$@" > "$TMP/out" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || fail "$what: exit code $rc: $(tail -3 "$TMP/out")"
  local loaded
  loaded=$(cat "$TMP"/ld.* | grep -oE 'calling init: \S+' | awk '{print $3}' | sort -u)
  rm -f "$TMP"/ld.*
  grep -q 'libc\.so' <<< "$loaded" || fail "$what: LD_DEBUG=libs listed no library (is LD_DEBUG ignored?)"
  if grep -E "$cuda_libs" <<< "$loaded"; then fail "$what initialized the CUDA libraries above"; fi
  echo "ok: $what: $(wc -l <<< "$loaded") libraries, none of CUDA's"
}

"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 8 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3]}
  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu, Name: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
training:
  MaxEpochs: 2
  MiniBatchSize: 8
  Verbose: false
  ExecutionEnvironment: cpu
YAML

# 1. A CPU run of this build maps no CUDA library; --version costs about what a CPU build's does.
no_cuda_mapped "--version" -- "$DLTRAIN" --version
no_cuda_mapped "CPU training" -- "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/run_cpu"
[[ -f "$TMP/run_cpu/model.bin" ]] || fail "CPU training wrote no model.bin"
# version_rss COMMAND...: the peak RSS in KiB of COMMAND --version
version_rss() {
  /usr/bin/python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@" --version
}
mkdir -p "$TMP/bin"
cp "$DLTRAIN" "$TMP/bin/dltrain"
alone=(env LD_LIBRARY_PATH= "$TMP/bin/dltrain")
base_rss=$(version_rss "${alone[@]}")
rss=$(version_rss "$DLTRAIN")
max_rss=$(awk -v b="$base_rss" -v f="$VERSION_RSS_FACTOR" 'BEGIN { printf "%d", b * f }')
at_least "$max_rss" "$rss" || fail "--version: peak RSS $rss KiB, more than $VERSION_RSS_FACTOR x $base_rss KiB (the binary without its plugin)"
echo "ok: --version: peak RSS $rss KiB, at most $VERSION_RSS_FACTOR x $base_rss KiB (the binary without its plugin)"
"$DLTRAIN" --version | sed -n 2p | grep -q "^CUDA backend: " || fail "--version names no CUDA backend: $("$DLTRAIN" --version)"

# 2. The plugin out of reach: dltrain alone in a folder, no library path (alone, above).
"${alone[@]}" --version | sed -n 2p | grep -q "not found\|built without CUDA" ||
  fail "--version without the plugin: $("${alone[@]}" --version)"
no_cuda_mapped "CPU training without the plugin" -- "${alone[@]}" train "$TMP/net.yaml" --output-dir "$TMP/run_alone"
[[ -f "$TMP/run_alone/model.bin" ]] || fail "CPU training without the plugin wrote no model.bin"
"${alone[@]}" train "$TMP/net.yaml" --output-dir "$TMP/run_auto" --set training.ExecutionEnvironment=auto \
  --set training.Verbose=true > "$TMP/auto.log" 2>&1 || fail "auto without the plugin: $(tail -3 "$TMP/auto.log")"
grep -q "ExecutionEnvironment auto: no usable GPU, training on the CPU" "$TMP/auto.log" ||
  fail "auto without the plugin: no fallback notice: $(head -5 "$TMP/auto.log")"
missing="libdltrain_cuda.so is not installed\|built without CUDA"
expect_error "gpu without the plugin" 3 "$missing" -- \
  "${alone[@]}" train "$TMP/net.yaml" --output-dir "$TMP/run_gpu" --set training.ExecutionEnvironment=gpu
expect_error "multi-gpu without the plugin" 3 "multi-gpu' needs" -- \
  "${alone[@]}" train "$TMP/net.yaml" --output-dir "$TMP/run_mgpu" --set training.ExecutionEnvironment=multi-gpu
[[ ! -e "$TMP/run_gpu" && ! -e "$TMP/run_mgpu" ]] || fail "a failed GPU run left an output folder"

# 3. A plugin dlopen refuses (a CUDA build looks for it; a CPU-only build never does).
if grep -q . <<< "$("${alone[@]}" --version | grep 'not found')"; then
  echo "not a shared object" > "$TMP/bin/libdltrain_cuda.so"
  expect_error "gpu with an unloadable plugin" 3 "cannot load the CUDA backend: .*libdltrain_cuda.so" -- \
    "${alone[@]}" train "$TMP/net.yaml" --output-dir "$TMP/run_bad" --set training.ExecutionEnvironment=gpu
  no_cuda_mapped "CPU training beside an unloadable plugin" -- \
    "${alone[@]}" train "$TMP/net.yaml" --output-dir "$TMP/run_bad_cpu"
fi

# 4. The plugin beside dltrain and no usable GPU: it loads (its core symbols resolve) and says so.
if [[ $have_plugin -eq 1 ]] && ! nvidia-smi -L > /dev/null 2>&1; then
  expect_error "gpu with the plugin, no GPU" 3 "no CUDA GPU is visible\|CUDA GPU(s) are visible" -- \
    "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/run_plugin" --set training.ExecutionEnvironment=gpu
fi
echo "cuda_plugin: ok"

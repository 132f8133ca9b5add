#!/usr/bin/env bash
# ExecutionEnvironment multi-gpu where it cannot run ends at once with exit code 3 and one
# line saying why and what to do: a CPU build ("built without CUDA"), no visible GPU
# (CUDA_VISIBLE_DEVICES=""), more NumWorkers than GPUs, and the same under srun's variables
# (no rendezvous is attempted, so nothing waits for a timeout). Runs in every build; GPUs
# are hidden or outnumbered, so nothing trains. The expected lines cover the three builds: CPU
# only ("built without CUDA"), CUDA without NCCL ("built without it"), CUDA with NCCL (the GPU
# count). Each run is killed after 45 s, before the default 60 s rendezvous timeout: none may
# wait for one.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 2 --per-class 4 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3]}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
training:
  MaxEpochs: 1
  MiniBatchSize: 4
  Verbose: false
  ExecutionEnvironment: multi-gpu
YAML
# Which build: a CPU build names the missing CUDA, a CUDA build without NCCL the missing NCCL,
# a full CUDA build sees no GPU here, or names its CUDA plugin when that cannot load.
no_gpu="built without CUDA\|NCCL, but this dltrain was built without it\|CUDA_VISIBLE_DEVICES='' hides them all\|the CUDA backend"
guard=(timeout -s KILL 45)
CUDA_VISIBLE_DEVICES="" expect_error "multi-gpu, no GPU visible" 3 "ExecutionEnvironment 'multi-gpu' needs" -- \
  "${guard[@]}" "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/a"
out=$(CUDA_VISIBLE_DEVICES="" "${guard[@]}" "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/a" 2>&1 >/dev/null || true)
grep -q "$no_gpu" <<< "$out" || fail "no GPU: the reason is missing: $out"
[[ ! -e "$TMP/a" ]] || fail "no GPU: an output folder was left behind"

CUDA_VISIBLE_DEVICES="" SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 SLURM_JOB_ID=7 \
  expect_error "multi-gpu under srun, no GPU" 3 "ExecutionEnvironment 'multi-gpu' needs" -- \
  "${guard[@]}" "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/b"

# One visible GPU at most, two workers asked for: too many (GPU build), no NCCL (CUDA build
# without it) or no CUDA (CPU build).
CUDA_VISIBLE_DEVICES=0 expect_error "multi-gpu, NumWorkers > GPUs" 3 \
  "NumWorkers is 2 but only 1 GPU(s)\|needs CUDA GPUs\|needs NCCL" -- \
  "${guard[@]}" "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/c" --set training.NumWorkers=2

# A bad NumWorkers value is a config error (2), not a device error.
expect_error "multi-gpu, NumWorkers -1" 2 "NumWorkers" -- \
  "${guard[@]}" "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/d" --set training.NumWorkers=-1
echo "multi-gpu errors: ok"

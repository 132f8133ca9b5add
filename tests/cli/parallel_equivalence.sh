#!/usr/bin/env bash
# Data-parallel CPU workers over Gloo (ExecutionEnvironment: parallel) against one process
# with the same global mini-batch and Seed: final model.bin weights within 1e-5 relative
# (per tensor: max |a - b| / max |b|, tests/dist/compare_models.py) for equal and uneven
# WorkerLoad, an empty share, batch norm (synchronized; equal, uneven and empty shares; its
# population statistics after training),
# small gradient buckets overlapping backward, worlds joined through torchrun / srun variables
# (a shared directory, or rank 0's TCP store at MASTER_ADDR:MASTER_PORT), and --resume with a
# different number of workers or from a file only rank 0 has. Tiny data: 39 images of 16x16.
source "$(dirname "$0")/common.sh" "$@"
"$DLTRAIN" train --help | grep -q -- '--threads' || fail "dltrain train --help"
compare() { python3 "$SRC/tests/dist/compare_models.py" "$@"; }
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 16 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/bn.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same, BiasLearnRateFactor: 0}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
  validation: $TMP/data/test
training:
  Solver: sgdm
  InitialLearnRate: 0.01
  MaxEpochs: 3
  MiniBatchSize: 12
  Shuffle: every-epoch
  ValidationFrequency: 4
  Verbose: false
  ExecutionEnvironment: cpu
  Seed: 5
YAML
grep -v batchNormalization "$TMP/bn.yaml" > "$TMP/plain.yaml"
train() {  # train CONFIG OUT [--set ...]
  local cfg=$1 out=$2
  shift 2
  "$DLTRAIN" train "$TMP/$cfg.yaml" --output-dir "$TMP/$out" --threads 1 "$@" > "$TMP/$out.log" 2>&1 \
    || fail "training $out: $(cat "$TMP/$out.log")"
}
par=(--set training.ExecutionEnvironment=parallel)

train plain one
train plain two "${par[@]}"
grep -q "completed: model" "$TMP/two.log" || fail "the 2-worker run did not report completion"
[[ $(grep -c "completed: model" "$TMP/two.log") -eq 1 ]] || fail "more than one rank printed the result"
echo -n "2 workers, equal shares:        "; compare "$TMP/two/model.bin" "$TMP/one/model.bin" || fail "2 workers != 1 process"
a=$(json_number "$TMP/one/summary.json" validation_loss); b=$(json_number "$TMP/two/summary.json" validation_loss)
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d * d <= 1e-10 * a * a) }' \
  || fail "sharded validation loss $b != single-process $a"
train plain uneven "${par[@]}" --set "training.WorkerLoad=[3,1]"
echo -n "2 workers, WorkerLoad [3 1]:    "; compare "$TMP/uneven/model.bin" "$TMP/one/model.bin" || fail "WorkerLoad [3 1]"
train plain three "${par[@]}" --set training.NumWorkers=3
echo -n "3 workers:                      "; compare "$TMP/three/model.bin" "$TMP/one/model.bin" || fail "3 workers"

# Batch norm is synchronized across workers (global batch statistics in forward, their terms
# in backward, running statistics from the global batch), so it matches one process too.
train bn bn_one
train bn bn_two "${par[@]}"
echo -n "batch norm, 2 workers, equal:   "; compare "$TMP/bn_two/model.bin" "$TMP/bn_one/model.bin" || fail "batch norm, 2 workers"
train bn bn_uneven "${par[@]}" --set "training.WorkerLoad=[3,1]"
echo -n "batch norm, WorkerLoad [3 1]:   "; compare "$TMP/bn_uneven/model.bin" "$TMP/bn_one/model.bin" || fail "batch norm, [3 1]"
train bn bn_empty "${par[@]}" --set "training.WorkerLoad=[1,0]"
echo -n "batch norm, WorkerLoad [1 0]:   "; compare "$TMP/bn_empty/model.bin" "$TMP/bn_one/model.bin" || fail "batch norm, [1 0]"
train bn bn_three "${par[@]}" --set training.NumWorkers=3 --set "training.WorkerLoad=[2,0,1]"
echo -n "batch norm, 3 workers [2 0 1]:  "; compare "$TMP/bn_three/model.bin" "$TMP/bn_one/model.bin" || fail "batch norm, 3 workers"
# BatchNormalizationStatistics population: the pass after training merges the global batches'
# statistics on every rank, an empty share joining them with zeros.
pop=(--set training.BatchNormalizationStatistics=population)
train bn bnp_one "${pop[@]}"
grep -q "batch normalization statistics of 39 training images" "$TMP/bnp_one.log" ||
  fail "no population pass logged: $(cat "$TMP/bnp_one.log")"
train bn bnp_uneven "${par[@]}" "${pop[@]}" --set "training.WorkerLoad=[3,1]"
echo -n "population statistics, [3 1]:   "; compare "$TMP/bnp_uneven/model.bin" "$TMP/bnp_one/model.bin" || fail "population, [3 1]"
train bn bnp_empty "${par[@]}" "${pop[@]}" --set "training.WorkerLoad=[1,0]"
echo -n "population statistics, [1 0]:   "; compare "$TMP/bnp_empty/model.bin" "$TMP/bnp_one/model.bin" || fail "population, [1 0]"
# Gradient buckets of 31 floats (the net has 891 learnables): several all-reduces start while
# backward runs, interleaved with the batch-norm ones.
(export DLT_BUCKET_MB=0.000122; train bn bn_buckets "${par[@]}" --set "training.WorkerLoad=[3,1]") || exit 1
echo -n "batch norm, 31-float buckets:   "; compare "$TMP/bn_buckets/model.bin" "$TMP/bn_one/model.bin" || fail "buckets"

# Worlds started by a cluster launcher: one process per rank, variables as srun / torchrun set them.
# join OUT RANKVAR SIZEVAR ONEHOST: ranks 0 and 1 with those variables; ONEHOST is the variable
# that launcher sets to say both ranks share this machine (host_address.h).
join() {
  local out=$1 rank_var=$2 size_var=$3 one_host=$4
  for r in 0 1; do
    env "$rank_var=$r" "$size_var=2" "$one_host" DLT_RENDEZVOUS="$TMP/rdv-$out" "$DLTRAIN" train "$TMP/plain.yaml" \
      --output-dir "$TMP/$out" --threads 1 "${par[@]}" > "$TMP/$out-$r.log" 2>&1 &
  done
  wait %1 || fail "$out rank 0: $(cat "$TMP/$out-0.log")"
  wait %2 || fail "$out rank 1: $(cat "$TMP/$out-1.log")"
}
join srun SLURM_PROCID SLURM_NTASKS SLURM_NNODES=1
echo -n "srun variables (SLURM_PROCID):  "; compare "$TMP/srun/model.bin" "$TMP/one/model.bin" || fail "srun world"
join torchrun RANK WORLD_SIZE LOCAL_WORLD_SIZE=2
echo -n "torchrun variables (RANK):      "; compare "$TMP/torchrun/model.bin" "$TMP/one/model.bin" || fail "torchrun world"

# torchrun with no shared directory: the ranks meet through rank 0's TCP store at
# MASTER_ADDR:MASTER_PORT, each with its own --output-dir. A rank whose rank 0 never comes
# ends within DLT_COMM_TIMEOUT with one line naming the address and exit code 3.
# tcp_pair NAME [ARGS per rank: two strings]: ranks 0 and 1 meeting at MASTER_ADDR:MASTER_PORT,
# a port the OS reports free; a pair that finds it taken meanwhile is run again on another
# (3 tries). Sets $port.
tcp_pair() {
  local name=$1 args0=$2 args1=$3 attempt r rc0 rc1
  for attempt in 1 2 3; do
    port=$(free_port)
    rm -rf "$TMP/$name-0" "$TMP/$name-1"
    for r in 0 1; do
      local extra=$args0
      [[ $r == 1 ]] && extra=$args1
      # shellcheck disable=SC2086  # extra: words of a test-made argument list
      env -u DLT_RENDEZVOUS RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$DLTRAIN" train "$TMP/plain.yaml" --output-dir "$TMP/$name-$r" --threads 1 "${par[@]}" $extra \
        > "$TMP/$name-$r.log" 2>&1 &
    done
    rc0=0 rc1=0
    wait %1 || rc0=$?
    wait %2 || rc1=$?
    if ((rc0 != 0 || rc1 != 0)) && port_clash "$TMP/$name-0.log" "$TMP/$name-1.log"; then
      echo "attempt $attempt: port $port was taken; again"
      continue
    fi
    break
  done
  ((rc0 == 0)) || fail "$name rank 0: $(cat "$TMP/$name-0.log")"
  ((rc1 == 0)) || fail "$name rank 1: $(cat "$TMP/$name-1.log")"
}
tcp_pair tcp "" ""
echo -n "torchrun, MASTER_ADDR (TCP):    "; compare "$TMP/tcp-0/model.bin" "$TMP/one/model.bin" || fail "TCP rendezvous world"
[[ ! -e "$TMP/tcp-1/model.bin" ]] || fail "rank 1 wrote a model"
[[ ! -e "$TMP/tcp-0/.rendezvous" && ! -e "$TMP/tcp-1/.rendezvous" ]] || fail "a rendezvous directory was made"
set +e
DLT_COMM_TIMEOUT=1 RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  "$DLTRAIN" train "$TMP/plain.yaml" --output-dir "$TMP/tcp-alone" --threads 1 "${par[@]}" > "$TMP/tcp-alone.log" 2>&1
code=$?
set -e
[[ $code -eq 3 ]] || fail "a rank without rank 0 exited with $code, not 3: $(cat "$TMP/tcp-alone.log")"
grep -q "rank 1 of 2: no rendezvous server at 127.0.0.1:$port" "$TMP/tcp-alone.log" \
  || fail "a rank without rank 0 did not name the address: $(cat "$TMP/tcp-alone.log")"

# --resume with a different number of workers: a 2-worker checkpoint at iteration 3,
# continued by 3 workers, ends where one uninterrupted process ends.
train plain ck2 "${par[@]}" --set training.CheckpointPath="$TMP/ck" --set training.CheckpointFrequency=3 \
  --set training.CheckpointFrequencyUnit=iteration
[[ -f "$TMP/ck/checkpoint-iteration-3.bin" ]] || fail "no checkpoint from the 2-worker run: $(ls "$TMP/ck")"
train plain resumed "${par[@]}" --set training.NumWorkers=3 --resume "$TMP/ck/checkpoint-iteration-3.bin"
echo -n "resume 2 -> 3 workers:          "; compare "$TMP/resumed/model.bin" "$TMP/one/model.bin" || fail "resume"
# --resume without a shared file system: rank 0 reads the checkpoint and sends it to rank 1,
# whose own --resume path does not exist.
tcp_pair tcp-resume "--resume $TMP/ck/checkpoint-iteration-3.bin" "--resume $TMP/nowhere/checkpoint-iteration-3.bin"
echo -n "resume from rank 0's file only: "; compare "$TMP/tcp-resume-0/model.bin" "$TMP/one/model.bin" || fail "resume via rank 0"
echo "parallel equivalence: ok"

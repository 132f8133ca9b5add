#!/usr/bin/env bash
# Real torchrun (Debian's python3-torch) starting two CPU ranks of `dltrain train --no-python`
# that meet at rank 0's address, with no shared directory: the static rendezvous
# (--master-addr/--master-port: torchrun's agent serves its own store on MASTER_PORT, so
# dltrain's takes MASTER_PORT + 1) and --standalone (MASTER_PORT is free for dltrain). Each run
# ends within 1e-5 relative of one process and leaves no rendezvous directory. Skipped (77)
# when that Python has no torch.
source "$(dirname "$0")/common.sh" "$@"
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import torch.distributed.run' 2>/dev/null \
  || skip "$py cannot import torch.distributed.run (install python3-torch)"
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 16 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/plain.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: same}
  - {type: relu, Name: relu1}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
training:
  Solver: sgdm
  InitialLearnRate: 0.01
  MaxEpochs: 2
  MiniBatchSize: 12
  Verbose: false
  ExecutionEnvironment: cpu
  Seed: 5
YAML
"$DLTRAIN" train "$TMP/plain.yaml" --output-dir "$TMP/one" --threads 1 > "$TMP/one.log" 2>&1 \
  || fail "one process: $(cat "$TMP/one.log")"
# --redirects 2 --tee 2: torchrun 1.13 under Python 3.12 fails on its default "0" (the zero
# member of its Std flag enum is not found by iteration), so send stderr to files and the console.
# The static mode's two ports (torchrun's MASTER_PORT, dltrain's + 1) come from the OS; a run
# that finds one taken meanwhile is retried with others (3 tries). timeout: a hang guard.
for mode in static standalone; do
  for attempt in 1 2 3; do
    if [[ $mode == static ]]; then where=(--master_addr 127.0.0.1 --master_port "$(free_port 2)"); else where=(--standalone); fi
    rm -rf "$TMP/$mode" "$TMP/torchrun-logs-$mode"
    rc=0
    env -u DLT_RENDEZVOUS timeout 300 "$py" -m torch.distributed.run --redirects 2 --tee 2 --nnodes 1 \
      --nproc_per_node 2 "${where[@]}" --log_dir "$TMP/torchrun-logs-$mode" --no_python \
      "$DLTRAIN" train "$TMP/plain.yaml" --output-dir "$TMP/$mode" --threads 1 \
      --set training.ExecutionEnvironment=parallel > "$TMP/$mode.log" 2>&1 || rc=$?
    ((rc != 0)) && port_clash "$TMP/$mode.log" && { echo "attempt $attempt: a port was taken; again"; continue; }
    break
  done
  ((rc == 0)) || fail "torchrun ($mode): $(tail -20 "$TMP/$mode.log")"
  grep -q "2 workers (gloo)" "$TMP/$mode.log" || fail "torchrun ($mode) did not make a world of 2: $(cat "$TMP/$mode.log")"
  echo -n "torchrun --$mode: "
  python3 "$SRC/tests/dist/compare_models.py" "$TMP/$mode/model.bin" "$TMP/one/model.bin" || fail "torchrun ($mode)"
  [[ ! -e "$TMP/$mode/.rendezvous" ]] || fail "torchrun ($mode) used a rendezvous directory"
done
echo "torchrun: ok"

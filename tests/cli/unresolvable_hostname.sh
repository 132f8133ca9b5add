#!/usr/bin/env bash
# CPU ranks on a machine whose own name does not resolve (an /etc/hosts without it, as in
# fresh roots and containers), made here in a mount namespace whose /etc/hosts has only
# localhost: ranks that are all on this machine meet over loopback and match one process;
# a world spread over nodes stops with exit code 3 and one line naming the host name and the
# fixes; GLOO_SOCKET_IFNAME=lo works; a missing interface or a DLT_GLOO_HOSTNAME that does not
# resolve is one line, exit code 3; MASTER_ADDR naming the unresolved machine (as torchrun
# --standalone sets it) means loopback for a local world. Before dltrain resolved the address
# itself, Debian's libgloo crashed (SIGSEGV) on the name. Needs root and unshare -m where the
# machine's name resolves.
source "$(dirname "$0")/common.sh" "$@"
host=$(hostname)
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost\n' > "$TMP/hosts"
if ! getent hosts "$host" > /dev/null; then
  # The machine's name does not resolve already (a fresh root or container: CI's chroot, where
  # unshare -m cannot change the propagation of a root that is not a mount point).
  in_ns() { "$@"; }
elif [[ $(id -u) -ne 0 ]] || ! unshare -m true 2>/dev/null; then
  skip "needs root and mount namespaces (unshare -m) to hide the host name"
else
  # in_ns COMMAND...: runs it with $TMP/hosts as /etc/hosts (this process's mounts are untouched)
  in_ns() { unshare -m -- bash -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' in_ns "$TMP/hosts" "$@"; }
fi
if in_ns getent hosts "$host" > /dev/null; then
  skip "'$host' still resolves without /etc/hosts (DNS knows it)"
fi
compare() { python3 "$SRC/tests/dist/compare_models.py" "$@"; }
"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 8 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
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
  InitialLearnRate: 0.01
  MaxEpochs: 2
  MiniBatchSize: 8
  Verbose: false
  Seed: 7
YAML
"$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/one" --threads 1 > "$TMP/one.log" 2>&1 || fail "one process: $(cat "$TMP/one.log")"
par=(--set training.ExecutionEnvironment=parallel)

# two_ranks NAME VAR=VALUE...: ranks 0 and 1 of an srun-style world inside the namespace
two_ranks() {
  local name=$1
  shift
  for r in 0 1; do
    in_ns env "$@" SLURM_PROCID=$r SLURM_NTASKS=2 SLURM_LOCALID=$r DLT_RENDEZVOUS="$TMP/rdv-$name" \
      "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/$name" --threads 1 "${par[@]}" > "$TMP/$name-$r.log" 2>&1 &
  done
  wait %1 || fail "$name rank 0: $(cat "$TMP/$name-0.log")"
  wait %2 || fail "$name rank 1: $(cat "$TMP/$name-1.log")"
}
two_ranks one_node SLURM_NNODES=1
echo -n "one node, name unresolved -> loopback: "; compare "$TMP/one_node/model.bin" "$TMP/one/model.bin" || fail "one node"
two_ranks lo_iface SLURM_NNODES=2 GLOO_SOCKET_IFNAME=lo
echo -n "GLOO_SOCKET_IFNAME=lo:                 "; compare "$TMP/lo_iface/model.bin" "$TMP/one/model.bin" || fail "lo"
for r in 0 1; do
  in_ns env LOCAL_WORLD_SIZE=2 RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r DLT_RENDEZVOUS="$TMP/rdv-torchrun" \
    "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/torchrun" --threads 1 "${par[@]}" > "$TMP/torchrun-$r.log" 2>&1 &
done
wait %1 || fail "torchrun rank 0: $(cat "$TMP/torchrun-0.log")"
wait %2 || fail "torchrun rank 1: $(cat "$TMP/torchrun-1.log")"
echo -n "torchrun, LOCAL_WORLD_SIZE 2:          "; compare "$TMP/torchrun/model.bin" "$TMP/one/model.bin" || fail "torchrun"

# torchrun --standalone sets MASTER_ADDR to this machine's name: the ranks meet at loopback.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
for r in 0 1; do
  in_ns env -u DLT_RENDEZVOUS LOCAL_WORLD_SIZE=2 RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR="$host" MASTER_PORT=$port \
    "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/standalone-$r" --threads 1 "${par[@]}" > "$TMP/standalone-$r.log" 2>&1 &
done
wait %1 || fail "standalone rank 0: $(cat "$TMP/standalone-0.log")"
wait %2 || fail "standalone rank 1: $(cat "$TMP/standalone-1.log")"
echo -n "MASTER_ADDR=$host (unresolved):       "; compare "$TMP/standalone-0/model.bin" "$TMP/one/model.bin" || fail "standalone"

# One rank of a world spread over two nodes stops before any rendezvous.
rank1=(env SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_NNODES=2 DLT_RENDEZVOUS="$TMP/rdv-x"
       "$DLTRAIN" train "$TMP/net.yaml" --output-dir "$TMP/x" --threads 1 "${par[@]}")
expect_error "two nodes, name unresolved" 3 "rank 1 of 2: this host's name '$host' cannot be announced.*DLT_GLOO_HOSTNAME.*GLOO_SOCKET_IFNAME" \
  -- in_ns "${rank1[@]}"
expect_error "missing interface" 3 "GLOO_SOCKET_IFNAME names the network interface 'nosuchif0', which this machine does not have" \
  -- in_ns env GLOO_SOCKET_IFNAME=nosuchif0 "${rank1[@]:1}"
expect_error "DLT_GLOO_HOSTNAME unresolved" 3 "DLT_GLOO_HOSTNAME is 'no-such-host.invalid', but it does not resolve" \
  -- in_ns env DLT_GLOO_HOSTNAME=no-such-host.invalid "${rank1[@]:1}"
echo "unresolvable hostname: ok"

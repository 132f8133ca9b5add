#!/usr/bin/env bash
# Faults between hosts: three "hosts" on this machine, each a network namespace with its own
# address on a bridge (in a fourth namespace, the switch), train ExecutionEnvironment: parallel
# as ranks 0-2 of one world that meets through rank 0's TCP store (DLT_RENDEZVOUS=tcp://,
# torchrun's RANK/WORLD_SIZE variables, Gloo on each host's eth0). A fault is injected while
# they train (they all-reduce every few milliseconds): every surviving rank must exit with code
# 3 within a bound relative to this run (wait_exit: twice CommunicationTimeout plus twice the
# world's start-up time measured just before), with a line naming the lost rank; no process may be left;
# every *.bin on every host must load (dltrain info); and --resume from rank 0's latest.bin must
# complete on a world of three again.
#
# Faults: linkcut (rank 2's switch port set down), loss (100 % packet loss to and from rank 2:
# tc netem where the kernel has it, else blackhole routes on every host; the output says which),
# sigstop (rank 1 stopped with SIGSTOP, continued after the others exited), kill9 (rank 2),
# kill9_rank0. CI runs all five; DLTRAIN_FAULTS="a b" picks;
# DLTRAIN_FAULTS_TIMEOUT sets CommunicationTimeout (3 s).
# Needs root (network namespaces), iproute2 and nsenter; otherwise skipped (77) with the reason.
source "$(dirname "$0")/common.sh" "$@"
[[ $(id -u) -eq 0 ]] || skip "needs root for network namespaces (ip netns)"
command -v ip > /dev/null || skip "no 'ip' command (install iproute2)"
command -v nsenter > /dev/null || skip "no 'nsenter' command (util-linux)"
# in_ns NAME COMMAND...: runs (execs) COMMAND in namespace NAME's network only. Not `ip netns
# exec` or `ip -n`: they also remount / and /sys, which fails in a chroot (the CI's fresh root).
in_ns() {
  local n=$1
  shift
  nsenter --net="/run/netns/$n" "$@"
}

timeout_s=${DLTRAIN_FAULTS_TIMEOUT:-3}  # training.CommunicationTimeout for these worlds
if [[ -n ${DLTRAIN_FAULTS:-} ]]; then
  read -r -a faults <<< "$DLTRAIN_FAULTS"
else
  faults=(linkcut loss sigstop kill9 kill9_rank0)
fi

# Unique names: namespaces are global to the machine; this shell's pid is unique on it.
ns=dltf$$
hosts=("${ns}h0" "${ns}h1" "${ns}h2")
pids=()
# `ip netns add` bind-mounts /run/netns onto itself the first time; undone at the end when this
# test made it and left it empty (a chroot's root cannot be removed while it is mounted).
netns_mounted=0
mountpoint -q /run/netns 2> /dev/null && netns_mounted=1
cleanup() {
  local n p
  for n in "${hosts[@]}" "${ns}sw"; do
    for p in $(ip netns pids "$n" 2> /dev/null); do kill -9 "$p" 2> /dev/null || true; done
    ip netns del "$n" 2> /dev/null || true
  done
  if [[ $netns_mounted == 0 ]] && mountpoint -q /run/netns 2> /dev/null && [[ -z $(ls -A /run/netns) ]]; then
    umount /run/netns 2> /dev/null || true
  fi
  rm -rf "$TMP"
}
at_exit cleanup

ip netns add "${ns}sw" 2> "$TMP/netns.err" \
  || skip "cannot make a network namespace: $(cat "$TMP/netns.err")"
in_ns "${ns}sw" true 2> "$TMP/netns.err" \
  || skip "cannot enter a network namespace (nsenter): $(cat "$TMP/netns.err")"
in_ns "${ns}sw" ip link add br0 type bridge
in_ns "${ns}sw" ip link set br0 up
for i in 0 1 2; do
  ip netns add "${hosts[i]}"
  in_ns "${ns}sw" ip link add "port$i" type veth peer name eth0 netns "${hosts[i]}"
  in_ns "${ns}sw" ip link set "port$i" master br0 up
  in_ns "${hosts[i]}" ip addr add "10.213.0.$((i + 1))/24" dev eth0
  in_ns "${hosts[i]}" ip link set eth0 up
  in_ns "${hosts[i]}" ip link set lo up
done
echo "hosts: ${hosts[*]} at 10.213.0.1-3 on a bridge in ${ns}sw"

"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 3 --per-class 16 --size 16x16 --seed 3 > /dev/null
cat > "$TMP/net.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 8, Padding: same}
  - {type: batchNormalization, Name: bn1}
  - {type: relu, Name: relu1}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data:
  train: $TMP/data/train
training:
  InitialLearnRate: 0.001
  MaxEpochs: ${DLTRAIN_FAULTS_EPOCHS:-150}
  MiniBatchSize: 12
  Verbose: false
  Seed: 4
  ExecutionEnvironment: parallel
  CommunicationTimeout: $timeout_s
  CheckpointFrequency: 10
  CheckpointFrequencyUnit: iteration
YAML

# start_world NAME [args...]: ranks 0-2, one per host; pids in $pids, output in $TMP/NAME/host*.
start_world() {
  local name=$1 r
  shift
  pids=()
  for r in 0 1 2; do
    mkdir -p "$TMP/$name"
    nsenter --net="/run/netns/${hosts[r]}" env RANK=$r WORLD_SIZE=3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
      DLT_RENDEZVOUS=tcp://10.213.0.1:29400 DLT_GLOO_IFACE=eth0 \
      "$DLTRAIN" train "$TMP/net.yaml" --threads 1 --output-dir "$TMP/$name/host$r" \
      --set training.CheckpointPath="$TMP/$name/host$r/ck" "$@" \
      > "$TMP/$name/host$r.out" 2> "$TMP/$name/host$r.err" &
    pids+=($!)  # nsenter execs env, which execs dltrain: this is dltrain's pid
  done
}

# heal: undoes every fault (links up, no blackhole routes, no netem).
heal() {
  local i
  for i in 0 1 2; do
    in_ns "${ns}sw" ip link set "port$i" up
    in_ns "${hosts[i]}" ip route flush type blackhole 2> /dev/null || true
    in_ns "${hosts[i]}" tc qdisc del dev eth0 root 2> /dev/null || true
  done
}

# all *.bin files of NAME's hosts load; prints how many
check_files() {
  local name=$1 f n=0
  while IFS= read -r -d '' f; do
    "$DLTRAIN" info "$f" > /dev/null 2> "$TMP/info.err" || fail "$name: $f does not load: $(cat "$TMP/info.err")"
    n=$((n + 1))
  done < <(find "$TMP/$name" -name '*.bin' -print0)
  [[ -f $TMP/$name/host0/ck/latest.bin ]] || fail "$name: no latest.bin on rank 0's host"
  echo "  $n *.bin files on the hosts load (rank 0's last checkpoint: iteration $(last_checkpoint "$TMP/$name/host0/ck"))"
}

# wait_exit NAME RANK LOST T0: rank RANK exits with 3 within the bound, naming rank(s) LOST
# (a regex of rank numbers); prints the time since T0. The bound, exit_limit, is relative to
# this run, never absolute (under ctest -j everything here slows down together): a lost peer is
# noticed at the latest one CommunicationTimeout after the fault (the collective in flight), and
# leaving may wait once more on it (twice the timeout); the rest (the error's report, the
# checkpoint, the process's end) is work of the kind the world did to start (process start,
# rendezvous, first checkpoint), which startup_s measured just before on this machine: twice that.
wait_exit() {
  local name=$1 r=$2 lost=$3 t0=$4 pid=${pids[$2]} rc=0 took
  local limit=$exit_limit
  while kill -0 "$pid" 2> /dev/null; do
    took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t > 2 * l) }'; then
      kill -9 "$pid" 2> /dev/null || true
      fail "$name: rank $r still running ${took} s after the fault: $(cat "$TMP/$name/host$r.err")"
    fi
    sleep 0.05
  done
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  wait "$pid" 2> /dev/null || rc=$?
  [[ $rc -eq 3 ]] || fail "$name: rank $r exited with $rc, expected 3: $(cat "$TMP/$name/host$r.err")"
  awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t <= l) }' \
    || fail "$name: rank $r took $took s to exit (limit $limit s)"
  grep -Eq "lost ranks? ([0-9]+, )*($lost)[ ,]" "$TMP/$name/host$r.err" \
    || fail "$name: rank $r does not name the lost rank ($lost): $(cat "$TMP/$name/host$r.err")"
  echo "  rank $r: exit 3 after $took s: $(grep -o "lost rank.*" "$TMP/$name/host$r.err")"
  times+=("$took")
}

loss_method=""
inject() {
  case $1 in
    linkcut) in_ns "${ns}sw" ip link set port2 down ;;
    loss)
      if in_ns "${hosts[2]}" tc qdisc add dev eth0 root netem loss 100% 2> /dev/null; then
        loss_method="tc netem loss 100% on rank 2's eth0"
        for i in 0 1; do in_ns "${hosts[i]}" tc qdisc add dev eth0 root netem loss 100%; done
      else
        loss_method="blackhole routes (no sch_netem in this kernel): rank 2 drops all to .1/.2, ranks 0/1 to .3"
        in_ns "${hosts[2]}" ip route add blackhole 10.213.0.1/32
        in_ns "${hosts[2]}" ip route add blackhole 10.213.0.2/32
        in_ns "${hosts[0]}" ip route add blackhole 10.213.0.3/32
        in_ns "${hosts[1]}" ip route add blackhole 10.213.0.3/32
      fi
      ;;
    sigstop) kill -STOP "${pids[1]}" ;;
    kill9) kill -9 "${pids[2]}" && { wait "${pids[2]}" || true; } 2> /dev/null ;;
    kill9_rank0) kill -9 "${pids[0]}" && { wait "${pids[0]}" || true; } 2> /dev/null ;;
  esac
}

times=()
for fault in "${faults[@]}"; do
  echo "== $fault"
  started=$(date +%s.%N)
  start_world "$fault"
  for _ in $(seq 1 600); do
    [[ -f $TMP/$fault/host0/ck/latest.bin ]] && break
    for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null || fail "$fault: a rank ended early: $(cat "$TMP/$fault"/host*.err)"; done
    sleep 0.05
  done
  [[ -f $TMP/$fault/host0/ck/latest.bin ]] || fail "$fault: no checkpoint after 30 s: $(cat "$TMP/$fault"/host*.err)"
  startup_s=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  exit_limit=$(awk -v t="$timeout_s" -v s="$startup_s" 'BEGIN { printf "%.1f", 2 * t + 2 * s }')
  echo "  the world started in $startup_s s: each rank must exit within $exit_limit s of the fault"
  sleep 0.$((RANDOM % 9 + 1))  # somewhere in the next few iterations (an all-reduce every few ms)
  t0=$(date +%s.%N)
  inject "$fault"
  [[ $fault == loss ]] && echo "  100% loss by $loss_method"
  case $fault in
    linkcut | loss)
      wait_exit "$fault" 0 2 "$t0"
      wait_exit "$fault" 1 2 "$t0"
      wait_exit "$fault" 2 "0|1" "$t0"  # the cut-off host loses the others
      ;;
    sigstop)
      wait_exit "$fault" 0 1 "$t0"
      wait_exit "$fault" 2 1 "$t0"
      t0=$(date +%s.%N)
      kill -CONT "${pids[1]}"
      wait_exit "$fault" 1 "0|2" "$t0"  # continued: its peers are gone
      ;;
    kill9)
      wait_exit "$fault" 0 2 "$t0"
      wait_exit "$fault" 1 2 "$t0"
      ;;
    kill9_rank0)
      wait_exit "$fault" 1 0 "$t0"
      wait_exit "$fault" 2 0 "$t0"
      ;;
  esac
  for n in "${hosts[@]}"; do
    [[ -z $(ip netns pids "$n") ]] || fail "$fault: processes left in $n: $(ip netns pids "$n")"
  done
  heal
  check_files "$fault"
  start_world "$fault-resumed" --resume "$TMP/$fault/host0/ck/latest.bin"
  for r in 0 1 2; do
    wait "${pids[r]}" || fail "$fault: resumed rank $r failed: $(cat "$TMP/$fault-resumed/host$r.err")"
  done
  "$DLTRAIN" info "$TMP/$fault-resumed/host0/model.bin" > /dev/null || fail "$fault: the resumed run's model.bin"
  echo "  --resume from latest.bin: completed on 3 hosts"
done
echo "faults between hosts: ok (${faults[*]}; exit times ${times[*]} s, timeout $timeout_s s)"

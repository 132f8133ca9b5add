#!/usr/bin/env bash
# A soak run (issue 21, item 6): trains configs/cifar10.yaml on CIFAR-10 for a wall-clock
# budget with validation every epoch and a checkpoint every epoch, samples the process's
# resident memory (VmRSS from /proc) every few seconds, and checks that it does not grow after
# the first epoch. Prints the curve's endpoints; writes every sample to a CSV.
#   scripts/soak.sh [--minutes 120] [--interval 10] [--data data/cifar10] [--output DIR]
#                   [--slack-mib 16] [-- extra dltrain train arguments]
# Exit 0: the run lasted its budget and the RSS after epoch 1 stayed within the slack;
# 1: it grew (or the run failed). The run is stopped with SIGTERM at the end of the budget.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
minutes=120
interval=10
data="$root/data/cifar10"
output=""
slack_mib=16
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --interval) interval="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    --slack-mib) slack_mib="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
die() { echo "soak.sh: error: $*" >&2; exit 1; }
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -ge 1 ]] || die "--minutes must be an integer >= 1, got '$minutes'"
[[ "$interval" =~ ^[0-9]+$ && "$interval" -ge 1 ]] || die "--interval must be an integer >= 1, got '$interval'"
dltrain="${DLTRAIN:-$root/build/dltrain}"
[ -x "$dltrain" ] || die "no dltrain binary at $dltrain (build it, or set DLTRAIN=...)"
if [ ! -d "$data/train" ]; then
  archive="$root/../shared/datasets/cifar10-jpg.tar"
  [ -f "$archive" ] || archive=""
  "$root/datasets/get-cifar10.sh" "$data" ${archive:+--from "$archive"}
fi
[ -n "$output" ] || output="$(mktemp -d /tmp/soak.XXXXXX)"
mkdir -p "$output"
samples="$output/rss.csv"

"$dltrain" train "$root/configs/cifar10.yaml" --quiet \
  --set data.train="$data/train" --set data.validation="$data/test" \
  --set training.MaxEpochs=100000 --set training.ValidationFrequency=500 \
  --set training.CheckpointPath="$output/checkpoints" --set training.CheckpointFrequency=1 \
  --output-dir "$output/run" "${extra[@]}" > "$output/train.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT

# The epoch the run is in: the last row of its live log.csv (column 1), 0 before the first.
epoch_now() {
  local f="$output/run/log.csv"
  [ -s "$f" ] || { echo 0; return; }
  tail -n 1 "$f" | cut -d, -f1 | grep -E '^[0-9]+$' || echo 0
}

echo "seconds,epoch,rss_kib,hwm_kib" > "$samples"
start=$SECONDS
end=$((start + minutes * 60))
while [ $SECONDS -lt $end ]; do
  kill -0 $pid 2>/dev/null || { cat "$output/train.log" >&2; die "the training run ended early (log above)"; }
  rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
  hwm=$(awk '/^VmHWM:/ {print $2}' /proc/$pid/status)
  echo "$((SECONDS - start)),$(epoch_now),$rss,$hwm" >> "$samples"
  sleep "$interval"
done
kill -TERM $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
trap - EXIT

# Endpoints: the first sample taken once epoch 2 has started (the end of epoch 1), the largest
# sample after it, and the last.
awk -F, -v slack="$slack_mib" -v out="$output" '
  NR > 1 && $2 >= 2 {
    if (!seen) { seen = 1; t0 = $1; r0 = $3 }
    if ($3 > rmax) { rmax = $3; tmax = $1 }
    t1 = $1; r1 = $3; e1 = $2
  }
  END {
    if (!seen) { print "soak.sh: error: the run never finished its first epoch (see " out "/rss.csv)" > "/dev/stderr"; exit 1 }
    printf "after epoch 1 (t=%ds): RSS %.1f MiB; largest after it (t=%ds): %.1f MiB; last (t=%ds, epoch %d): %.1f MiB\n",
           t0, r0 / 1024, tmax, rmax / 1024, t1, e1, r1 / 1024
    growth = (rmax - r0) / 1024
    printf "growth after epoch 1: %+.1f MiB (slack %d MiB): %s\n", growth, slack, growth <= slack ? "ok" : "GROWS"
    exit growth <= slack ? 0 : 1
  }' "$samples"

#!/usr/bin/env bash
# A soak run (issue 21, item 6): trains configs/cifar10.yaml on CIFAR-10 for a wall-clock
# budget with validation every epoch and a checkpoint every epoch, samples the process's
# resident memory (VmRSS from /proc) every few seconds, and checks that it does not grow after
# the first epoch beyond the training history dltrain keeps by design (64 B per iteration:
# the rows of log.csv, the plot and the checkpoints; MATLAB's training info). Prints the
# curve's endpoints; writes every sample to a CSV.
#   scripts/soak.sh [--minutes 120] [--interval 10] [--data data/cifar10] [--output DIR]
#                   [--slack-mib 16] [-- extra dltrain train arguments]
# Exit 0: the run lasted its budget and the RSS after epoch 1 grew by no more than the history
# plus the slack (medians of the first and last 10 samples, so a sample taken while a
# checkpoint is written does not count); 1: it grew more (or the run failed). The run is stopped with SIGTERM at the end of the budget.
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
  --output-dir "$output/run" --overwrite "${extra[@]}" > "$output/train.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT

# The epoch and iteration the run is in: the last row of its live log.csv (columns 1 and 2),
# "0,0" before the first.
position_now() {
  local f="$output/run/log.csv"
  [ -s "$f" ] || { echo 0,0; return; }
  tail -n 1 "$f" | cut -d, -f1,2 | grep -E '^[0-9]+,[0-9]+$' || echo 0,0
}

echo "seconds,epoch,iteration,rss_kib,hwm_kib" > "$samples"
start=$SECONDS
end=$((start + minutes * 60))
while [ $SECONDS -lt $end ]; do
  kill -0 $pid 2>/dev/null || { cat "$output/train.log" >&2; die "the training run ended early (log above)"; }
  rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
  hwm=$(awk '/^VmHWM:/ {print $2}' /proc/$pid/status)
  echo "$((SECONDS - start)),$(position_now),$rss,$hwm" >> "$samples"
  sleep "$interval"
done
kill -TERM $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
trap - EXIT

# Endpoints: the samples once epoch 2 has started (the end of epoch 1). Growth = the median
# RSS of the last 10 samples minus that of the first 10; the history's share = the iterations
# between them x 64 B (sizeof(IterationRecord), lib/train/progress.h).
awk -F, -v slack="$slack_mib" -v out="$output" '
  function median(a, n,    i, j, t, b) {
    for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
  }
  NR > 1 && $2 >= 2 { n++; t[n] = $1; e[n] = $2; it[n] = $3; r[n] = $4; if ($4 > rmax) { rmax = $4; tmax = $1 } }
  END {
    if (n < 20) { print "soak.sh: error: fewer than 20 samples after epoch 1 (see " out "/rss.csv)" > "/dev/stderr"; exit 1 }
    for (i = 1; i <= 10; i++) { a[i] = r[i]; z[i] = r[n - 10 + i] }
    r0 = median(a, 10); r1 = median(z, 10)
    history = (it[n - 5] - it[5]) * 64 / 1024
    printf "after epoch 1 (t=%ds, iteration %d): RSS %.1f MiB (median of 10 samples); last (t=%ds, epoch %d, iteration %d): %.1f MiB; largest: %.1f MiB (t=%ds)\n",
           t[5], it[5], r0 / 1024, t[n], e[n], it[n], r1 / 1024, rmax / 1024, tmax
    growth = (r1 - r0) / 1024
    beyond = growth - history / 1024
    printf "growth after epoch 1: %+.1f MiB; the training history kept meanwhile: %.1f MiB (%d iterations x 64 B); beyond it: %+.1f MiB (slack %d MiB): %s\n",
           growth, history / 1024, it[n - 5] - it[5], beyond, slack, beyond <= slack ? "ok" : "GROWS"
    exit beyond <= slack ? 0 : 1
  }' "$samples"

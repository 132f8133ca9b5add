#!/usr/bin/env bash
# Trains configs/cifar10.yaml (seed 001's CIFAR-10 network) on real CIFAR-10 with dltrain and
# with PyTorch (scripts/bench/pytorch_train.py: same network, options, initialisation and data)
# and prints test accuracy and wall time side by side as a markdown table. Runs sequentially.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/bench/cifar10_accuracy.sh [--epochs N] [--seeds "1 2 3"] [--data DIR]
                                         [--output FILE] [--side dltrain|pytorch|both]
  --epochs N    epochs per run (default 40 = the config's MaxEpochs). With N < 40 the learn-rate
                drop period becomes round(0.75*N) on both sides (the config: 30 of 40).
  --seeds S     space-separated seeds (default "1 2 3"); one run per seed and side
  --data DIR    CIFAR-10 as DIR/train/<class>/ and DIR/test/<class>/ (default data/cifar10);
                created with datasets/get-cifar10.sh when missing
  --output FILE also write the table to FILE; run logs go to FILE's folder as
                <FILE without extension>-logs/ (default: a new /tmp/cifar10_accuracy.* folder)
  --side S      dltrain, pytorch or both (default both)
  --wait-idle S before each run, wait up to S seconds (default 120) for other processes to
                leave the cores idle; timings taken under load are flagged in the notes
environment: DLTRAIN (default build/dltrain), PYTHON (default /usr/bin/python3)
The full benchmark (40 epochs, 3 seeds, both sides) takes several hours on 2 cores.
USAGE
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
epochs=40
seeds="1 2 3"
data="$root/data/cifar10"
output=""
side="both"
wait_idle=120
limit=0  # hidden: --limit-per-class K trains/tests on K images per class (smoke tests)
while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    --side) side="$2"; shift 2 ;;
    --wait-idle) wait_idle="$2"; shift 2 ;;
    --limit-per-class) limit="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cifar10_accuracy.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
die() { echo "cifar10_accuracy.sh: error: $*" >&2; exit 1; }
say() { echo "cifar10_accuracy.sh: $*" >&2; }
[[ "$epochs" =~ ^[1-9][0-9]*$ ]] || die "--epochs must be a positive integer, got '$epochs'"
[[ "$wait_idle" =~ ^[0-9]+$ ]] || die "--wait-idle must be an integer >= 0, got '$wait_idle'"
[[ "$limit" =~ ^[0-9]+$ ]] || die "--limit-per-class must be an integer >= 0, got '$limit'"
case "$side" in dltrain|pytorch|both) ;; *) die "--side must be dltrain, pytorch or both, got '$side'" ;; esac
[ -n "${seeds// /}" ] || die "--seeds is empty"
for s in $seeds; do [[ "$s" =~ ^[0-9]+$ ]] || die "seed '$s' is not an integer >= 0"; done

config="$root/configs/cifar10.yaml"
dltrain="${DLTRAIN:-$root/build/dltrain}"
python="${PYTHON:-/usr/bin/python3}"
if [ "$side" != pytorch ]; then
  [ -x "$dltrain" ] || die "no dltrain binary at $dltrain (build it, or set DLTRAIN=...)"
fi
"$python" -c 'import yaml' 2>/dev/null || die "$python cannot import yaml (set PYTHON=...)"

# Log folder next to the output file, or a fresh one in /tmp.
if [ -n "$output" ]; then
  mkdir -p "$(dirname "$output")"
  output="$(cd "$(dirname "$output")" && pwd)/$(basename "$output")"
  logs="${output%.*}-logs"
  mkdir -p "$logs"
else
  logs="$(mktemp -d /tmp/cifar10_accuracy.XXXXXX)"
fi
results="$logs/results.jsonl"
: >"$results"
say "logs in $logs"

# Data: fetch when missing.
if [ ! -d "$data/train" ] || [ ! -d "$data/test" ]; then
  archive=/work/shared/datasets/cifar10-jpg.tar
  if [ -f "$archive" ]; then
    say "no CIFAR-10 in $data; unpacking $archive"
    "$root/datasets/get-cifar10.sh" "$data" --from "$archive"
  else
    say "no CIFAR-10 in $data; downloading"
    "$root/datasets/get-cifar10.sh" "$data"
  fi
fi
data="$(cd "$data" && pwd)"

# Hidden: a subset of K images per class (the first K in sorted order), as symlinks.
if [ "$limit" -gt 0 ]; then
  subset="$logs/subset-$limit"
  rm -rf "$subset"
  for part in train test; do
    for dir in "$data/$part"/*/; do
      cls="$(basename "$dir")"
      mkdir -p "$subset/$part/$cls"
      mapfile -t files < <(find "$dir" -maxdepth 1 -type f | LC_ALL=C sort)
      [ "${#files[@]}" -ge "$limit" ] || die "$dir has ${#files[@]} images, fewer than --limit-per-class $limit"
      ln -s "${files[@]:0:$limit}" "$subset/$part/$cls/"
    done
  done
  say "subset: $limit images per class in $subset"
  data="$subset"
fi

# The learn-rate schedule: the config's drop period for the full 40 epochs, else round(0.75*N).
config_epochs="$("$python" -c 'import sys,yaml; print(int(yaml.safe_load(open(sys.argv[1]))["training"]["MaxEpochs"]))' "$config")"
config_period="$("$python" -c 'import sys,yaml; print(int(yaml.safe_load(open(sys.argv[1]))["training"]["LearnRateDropPeriod"]))' "$config")"
period="$config_period"
schedule_note="learn rate dropped 10x every $config_period epochs (the config's schedule)"
if [ "$epochs" -lt "$config_epochs" ]; then
  period=$(( (75 * epochs + 50) / 100 ))
  [ "$period" -ge 1 ] || period=1
  schedule_note="--epochs $epochs < $config_epochs: LearnRateDropPeriod scaled to round(0.75*$epochs) = $period on both sides (config: $config_period of $config_epochs)"
fi
say "$schedule_note"

# measured OUTFILE CMD...: runs CMD and writes to OUTFILE the cores other processes kept busy
# meanwhile (/proc/stat busy time minus CMD's own CPU time, over the wall time): well above 0
# means the run's timings are disturbed (2-thread runs suffer badly when a core is taken).
measure_py='
import os, subprocess, sys, time
def busy():
    f = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")
b0, t0, w0 = busy(), os.times(), time.time()
rc = subprocess.call(sys.argv[2:])
b1, t1, w1 = busy(), os.times(), time.time()
own = (t1.children_user + t1.children_system) - (t0.children_user + t0.children_system)
open(sys.argv[1], "w").write("%.2f\n" % max(0.0, (b1 - b0 - own) / max(w1 - w0, 1e-9)))
sys.exit(rc)
'
measured() { "$python" -c "$measure_py" "$@"; }

# add_load FILE: appends the last JSON line of FILE to the results with "foreign_load_cores".
add_load() {
  "$python" -c 'import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
r["foreign_load_cores"] = float(open(sys.argv[2]).read())
print(json.dumps(r))' "$1" "$2" >>"$results"
  tail -n 1 "$results" >&2
}

# wait_idle: polls /proc/stat every 5 s until less than 0.3 cores are busy, or gives up.
wait_idle() {
  [ "$wait_idle" -gt 0 ] || return 0
  "$python" -c '
import os, sys, time
def busy():
    f = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")
deadline = time.time() + int(sys.argv[1])
while True:
    b0 = busy(); time.sleep(5); load = (busy() - b0) / 5
    if load < 0.3:
        break
    if time.time() > deadline:
        sys.stderr.write("cifar10_accuracy.sh: cores still busy (%.2f) after %s s; running anyway\n" % (load, sys.argv[1]))
        break
' "$wait_idle"
}

run_dltrain() {  # seed
  local s="$1" run="$logs/dltrain-seed$1"
  rm -rf "$run"
  wait_idle
  say "dltrain seed $s: $epochs epochs (log $run.log)"
  if ! OMP_NUM_THREADS=2 measured "$run.load" "$dltrain" train "$config" --output-dir "$run" --quiet \
      --set "data.train=$data/train" --set "data.validation=$data/test" \
      --set "training.Seed=$s" --set "training.MaxEpochs=$epochs" \
      --set "training.LearnRateDropPeriod=$period" --set "training.ValidationFrequency=100000" \
      >"$run.log" 2>&1; then
    tail -n 20 "$run.log" >&2
    die "dltrain failed for seed $s (log $run.log)"
  fi
  "$python" - "$run/summary.json" "$s" "$epochs" >"$run.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if j.get("status") != "completed":
    sys.exit(f"cifar10_accuracy.sh: dltrain run {sys.argv[1]} ended with status {j.get('status')}")
print(json.dumps({"side": "dltrain", "seed": int(sys.argv[2]), "epochs": int(sys.argv[3]),
                  "test_accuracy": j["validation_accuracy"], "wall_seconds": j["wall_seconds"],
                  "train_images_per_second": j["train_images_per_second"],
                  "train_images": j.get("train_images"), "test_images": j.get("validation_images")}))
PY
  add_load "$run.json" "$run.load"
}

run_pytorch() {  # seed
  local s="$1" log="$logs/pytorch-seed$1.log"
  wait_idle
  say "pytorch seed $s: $epochs epochs (log $log)"
  if ! measured "$log.load" "$python" "$root/scripts/bench/pytorch_train.py" "$config" --data "$data" \
      --seed "$s" --epochs "$epochs" --drop-period "$period" >"$log.json" 2>"$log"; then
    tail -n 20 "$log" >&2
    die "pytorch_train.py failed for seed $s (log $log)"
  fi
  add_load "$log.json" "$log.load"
}

for s in $seeds; do
  if [ "$side" != pytorch ]; then run_dltrain "$s"; fi
  if [ "$side" != dltrain ]; then run_pytorch "$s"; fi
done

table="$logs/table.md"
"$python" - "$results" "$schedule_note" "$data" "$limit" "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
  "$(nproc)" >"$table" <<'PY'
import json, sys
results, note, data, limit, commit, cores = sys.argv[1:7]
rows = [json.loads(l) for l in open(results) if l.strip()]
print("| side | seed | epochs | test accuracy % | wall s | train img/s |")
print("|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['side']} | {r['seed']} | {r['epochs']} | {r['test_accuracy']:.2f} | "
          f"{r['wall_seconds']:.1f} | {r['train_images_per_second']:.0f} |")
print()
means = {}
for side in ("dltrain", "pytorch"):
    rs = [r for r in rows if r["side"] == side]
    if not rs:
        continue
    acc = [r["test_accuracy"] for r in rs]
    wall = [r["wall_seconds"] for r in rs]
    ips = [r["train_images_per_second"] for r in rs]
    means[side] = (sum(acc) / len(acc), sum(wall) / len(wall), sum(ips) / len(ips))
    print(f"- {side}: test accuracy mean {means[side][0]:.2f}% (min–max {min(acc):.2f}–{max(acc):.2f}, "
          f"{len(acc)} seed{'s' if len(acc) > 1 else ''}); wall mean {means[side][1]:.1f} s "
          f"({min(wall):.1f}–{max(wall):.1f}); train {means[side][2]:.0f} img/s ({min(ips):.0f}–{max(ips):.0f})")
if len(means) == 2:
    d, p = means["dltrain"], means["pytorch"]
    print(f"- difference of means (dltrain − pytorch): accuracy {d[0] - p[0]:+.2f} points; "
          f"wall {d[1] - p[1]:+.1f} s (dltrain/pytorch {d[1] / p[1]:.2f}x); "
          f"train img/s dltrain/pytorch {d[2] / p[2]:.2f}x")
busy = [r for r in rows if r.get("foreign_load_cores", 0) > 0.3]
for r in busy:
    print(f"- warning: {r['side']} seed {r['seed']} ran while other processes kept "
          f"{r['foreign_load_cores']:.2f} cores busy on average: its timings are disturbed")
print()
n_train = next((r.get("train_images") for r in rows if r.get("train_images")), "?")
n_test = next((r.get("test_images") for r in rows if r.get("test_images")), "?")
print(f"Notes: configs/cifar10.yaml, {note}. Data {data}: {n_train} training, {n_test} test images"
      + (f" (subset: --limit-per-class {limit})" if limit != "0" else "") + ". "
      f"dltrain: test accuracy = validation on the test folder (ValidationFrequency 100000: once "
      f"after iteration 1 and once at the end); wall = its summary.json wall_seconds (decoding, "
      f"mean image, training, validation). PyTorch: scripts/bench/pytorch_train.py, channels_last, "
      f"2 threads, tcmalloc; wall = loading with PIL + mean image + training + test. "
      f"train img/s excludes validation on both sides. Commit {commit}, {cores} cores, runs sequential.")
PY
cat "$table"
if [ -n "$output" ]; then cp "$table" "$output"; say "wrote $output"; fi

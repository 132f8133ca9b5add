#!/usr/bin/env bash
# Trains configs/camvid-segnet-basic.yaml (or --config) on CamVid's train split with dltrain
# and with PyTorch (scripts/bench/pytorch_segment.py: the same network from dltrain's resolved
# config.yaml, the same He initialisation, options, loss (the output layer's: cross-entropy with
# the config's class weights, generalized Dice or focal cross-entropy) and augmentation), one
# run per seed and side, on the same 2 cores (--device gpu: on cuda:0,
# float32 with TF32 off both sides), one after the other. Both
# sides' predictions on the val split are scored by one metric code (scripts/bench/
# seg_metrics.py) at the label images' resolution. Prints a markdown table: mean IoU, global
# accuracy, training images per second and their ratio.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/bench/camvid_segmentation.sh [--epochs N] [--seeds "1 2"] [--data DIR]
                                            [--config FILE] [--output FILE] [--device cpu|gpu]
                                            [--pytorch-only RESOLVED_CONFIG]
  --epochs N    epochs per run (default: the config's MaxEpochs)
  --seeds S     space-separated seeds (default "1 2")
  --data DIR    CamVid as DIR/{train,val}/{images,labels} (default data/camvid; made with
                datasets/get-camvid.sh from ../shared/datasets/camvid.tar when missing)
  --config F    a dltrain segmentation config (default configs/camvid-segnet-basic.yaml)
  --output FILE also write the table to FILE; logs go to <FILE without extension>-logs/
                (default: a new /tmp/camvid_segmentation.* folder)
  --device D    cpu (default: 2 threads each) or gpu (ExecutionEnvironment gpu, GPU 0; PyTorch
                on cuda:0 with its data and augmentation on the GPU)
  --pytorch-only F  run PyTorch's side alone, on F: the config.yaml an earlier dltrain run of
                this script wrote (its resolved ClassWeights); the table's dltrain cells say "—"
environment: DLTRAIN (default build/dltrain), PYTHON (default /usr/bin/python3: Debian's torch)
USAGE
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
epochs=0
seeds="1 2"
data="$root/data/camvid"
config="$root/configs/camvid-segnet-basic.yaml"
output=""
device=cpu
pytorch_only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --pytorch-only) pytorch_only="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "camvid_segmentation.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
die() { echo "camvid_segmentation.sh: error: $*" >&2; exit 1; }
say() { echo "camvid_segmentation.sh: $*" >&2; }
[[ "$device" == cpu || "$device" == gpu ]] || die "--device must be cpu or gpu, got '$device'"
[[ "$epochs" =~ ^[0-9]+$ ]] || die "--epochs must be an integer >= 1, got '$epochs'"
for s in $seeds; do [[ "$s" =~ ^[0-9]+$ ]] || die "seed '$s' is not an integer >= 0"; done
dltrain="${DLTRAIN:-$root/build/dltrain}"
python="${PYTHON:-/usr/bin/python3}"
[ -x "$dltrain" ] || die "no dltrain binary at $dltrain (build it, or set DLTRAIN=...)"
"$python" -c 'import torch, yaml, PIL' 2>/dev/null || die "$python cannot import torch, yaml and PIL (apt install python3-torch python3-yaml python3-pil, or set PYTHON=...)"
[ -f "$config" ] || die "no config $config"
[ -z "$pytorch_only" ] || [ -f "$pytorch_only" ] || die "no resolved config $pytorch_only (--pytorch-only)"

if [ -n "$output" ]; then
  mkdir -p "$(dirname "$output")"
  output="$(cd "$(dirname "$output")" && pwd)/$(basename "$output")"
  logs="${output%.*}-logs"
  mkdir -p "$logs"
else
  logs="$(mktemp -d /tmp/camvid_segmentation.XXXXXX)"
fi
say "logs in $logs"
if [ ! -d "$data/train/images" ] || [ ! -d "$data/val/labels" ]; then
  say "no CamVid in $data; fetching it with datasets/get-camvid.sh"
  "$root/datasets/get-camvid.sh" "$data"
fi
data="$(cd "$data" && pwd)"
[ "$epochs" -gt 0 ] || epochs="$("$python" -c 'import sys,yaml; print(int(yaml.safe_load(open(sys.argv[1]))["training"]["MaxEpochs"]))' "$config")"
dl_env=(env OMP_NUM_THREADS=2)
dl_where=(--set training.ExecutionEnvironment=cpu)
seg_where=()
py_where=()
if [[ "$device" == gpu ]]; then
  dl_env=(env)
  dl_where=(--set training.ExecutionEnvironment=gpu)
  seg_where=(--gpu 0)
  py_where=(--device cuda)
fi
results="$logs/results.jsonl"
: >"$results"

for s in $seeds; do
  run="$logs/dltrain-seed$s"
  if [ -n "$pytorch_only" ]; then
    mkdir -p "$run"
    cp "$pytorch_only" "$run/config.yaml"
  else
    rm -rf "$run"
    say "dltrain seed $s: $epochs epochs (log $run.log)"
    "${dl_env[@]}" "$dltrain" train "$config" --output-dir "$run" --quiet "${dl_where[@]}" \
        --set "data.train.images=$data/train/images" --set "data.train.labels=$data/train/labels" \
        --set "data.validation.images=$data/val/images" --set "data.validation.labels=$data/val/labels" \
        --set "training.Seed=$s" --set "training.MaxEpochs=$epochs" >"$run.log" 2>&1 ||
      { tail -n 20 "$run.log" >&2; die "dltrain failed for seed $s (log $run.log)"; }
    "$dltrain" segment "$run/model.bin" "$data/val/images" --output "$run/pred" "${seg_where[@]}" >>"$run.log" 2>&1 ||
      { tail -n 20 "$run.log" >&2; die "dltrain segment failed for seed $s (log $run.log)"; }
    mkdir -p "$run/pred-index"
    for f in "$run"/pred/*.png; do  # <stem>.png class indices; <stem>_overlay.png are for people
      [[ "$f" == *_overlay.png ]] || ln -sf "$f" "$run/pred-index/$(basename "$f")"
    done
    "$python" "$root/scripts/bench/seg_metrics.py" "$run/config.yaml" "$run/pred-index" "$data/val/labels" \
        >"$run.metrics.json"
    "$python" - "$run/summary.json" "$run.metrics.json" "$s" "$run/config.yaml" "$root/scripts/bench" >>"$results" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[5])
import yaml
from pytorch_segment import loss_of
j, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
loss = loss_of(yaml.safe_load(open(sys.argv[4])))[0]
print(json.dumps({"side": "dltrain", "seed": int(sys.argv[3]), "loss": loss, "MeanIoU": m["MeanIoU"],
                  "GlobalAccuracy": m["GlobalAccuracy"], "train_images_per_second": j["train_images_per_second"]}))
PY
  fi

  plog="$logs/pytorch-seed$s"
  say "pytorch seed $s: $epochs epochs (log $plog.log)"
  "$python" "$root/scripts/bench/pytorch_segment.py" "$run/config.yaml" --data "$data" --seed "$s" \
      --epochs "$epochs" --predictions "$plog-pred" "${py_where[@]}" >"$plog.json" 2>"$plog.log" ||
    { tail -n 20 "$plog.log" >&2; die "pytorch_segment.py failed for seed $s (log $plog.log)"; }
  "$python" "$root/scripts/bench/seg_metrics.py" "$run/config.yaml" "$plog-pred" "$data/val/labels" \
      >"$plog.metrics.json"
  "$python" - "$plog.json" "$plog.metrics.json" "$s" >>"$results" <<'PY'
import json, sys
j, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(json.dumps({"side": "pytorch", "seed": int(sys.argv[3]), "loss": j["loss"], "MeanIoU": m["MeanIoU"],
                  "GlobalAccuracy": m["GlobalAccuracy"], "train_images_per_second": j["train_images_per_second"],
                  "torch": j["torch"]}))
PY
done

where="CPU $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), 2 threads"
[[ "$device" == gpu ]] && where="GPU $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1) (float32, TF32 off)"
"$python" - "$results" "$epochs" "$(basename "$config")" "$where" <<'PY' | tee ${output:+"$output"}
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch_v = next((r["torch"] for r in rows if "torch" in r), "?")
loss = next((r["loss"] for r in rows if "loss" in r), "?")
print(f"{sys.argv[3]}, loss {loss}, {sys.argv[2]} epochs, {sys.argv[4]}, PyTorch {torch_v}\n")
print("| seed | dltrain mIoU | PyTorch mIoU | dltrain global acc | PyTorch global acc | dltrain img/s | PyTorch img/s | time ratio dltrain/PyTorch |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
none = {"MeanIoU": None, "GlobalAccuracy": None, "train_images_per_second": None}
def pct(v):
    return "—" if v is None else f"{100 * v:.2f}"
def ips(v):
    return "—" if v is None else f"{v:.1f}"
for s in sorted({r["seed"] for r in rows}):
    d = next((r for r in rows if r["seed"] == s and r["side"] == "dltrain"), none)
    p = next((r for r in rows if r["seed"] == s and r["side"] == "pytorch"), none)
    di, pi = d["train_images_per_second"], p["train_images_per_second"]
    print(f"| {s} | {pct(d['MeanIoU'])} | {pct(p['MeanIoU'])} | {pct(d['GlobalAccuracy'])} | "
          f"{pct(p['GlobalAccuracy'])} | {ips(di)} | {ips(pi)} | {'—' if None in (di, pi) else f'{pi / di:.2f}'} |")
PY

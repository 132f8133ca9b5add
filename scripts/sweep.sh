#!/usr/bin/env bash
# sweep.sh: train one network per point of a grid of --set overrides (and/or per config file),
# several at a time, and collect the results into one CSV. Seed 001's parfor loop, in bash.
#
#   scripts/sweep.sh --config BASE.yaml --grid KEY=V1,V2,... [--grid ...] [--set KEY=V]...
#                    --out DIR [--jobs N] [--threads-per-job N] [--gpus "0 1"] [--dltrain PATH]
#   scripts/sweep.sh --networks configs/cifar10-sweep --out runs/cifar10-sweep [...]
#
#   --config FILE     a base config; repeat it (or give a quoted glob) to sweep over several files
#   --networks DIR    every DIR/*.yaml is a point (seed 001's 16 networks); combines with --grid
#   --grid KEY=VALS   one swept option, values separated by commas (commas inside [...] stay:
#                     --grid 'layers.input.InputSize=[28,28,1],[32,32,1]'); the points are the
#                     cartesian product of all grids, the first grid varying slowest
#   --set KEY=VALUE   an override applied to every point (before the grid's own)
#   --out DIR         one folder per point, DIR/<point>, named from its overrides, plus
#                     DIR/results.csv; `dltrain report DIR` plots accuracy against memory
#   --jobs N          points trained at once on the CPU (default 1)
#   --threads-per-job N  CPU threads per job, passed as dltrain --threads (default cores / jobs)
#   --gpus "0 1"      one job per listed GPU: CUDA_VISIBLE_DEVICES=<gpu> and
#                     training.ExecutionEnvironment=gpu (overrides --jobs)
#   --dltrain PATH    the dltrain binary (default: $DLTRAIN, else dltrain on PATH, else build/dltrain)
#   --dry-run         print the commands without running them
#
# Rerunning the same command resumes: a point whose summary.json says completed (or
# stopped-early) with the same config and overrides is skipped; all others are trained again.
# A failing point keeps its exit code (DIR/<point>/exit_code), the last line of its stderr
# (error.txt) and its logs (stdout.log, stderr.log); the sweep goes on with the other points.
# Exit code: 0 when every point finished, 1 when any failed, 2 for a usage error.
set -uo pipefail  # no -e: a failing point is expected and handled

die() { echo "sweep.sh: error: $*" >&2; exit 2; }
((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)) || die "needs bash 5.1 or newer (wait -n -p)"
# The comment block at the top of this file, without its '#' (up to the first code line).
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit "${1:-0}"; }

# ---------------------------------------------------------------- arguments
configs=() grids=() base_sets=() out="" jobs="" threads="" gpus="" dry_run=0
dltrain=${DLTRAIN:-}
while (($#)); do
  case $1 in
    --config) (($# >= 2)) || die "--config needs a file"; configs+=("$2"); shift 2 ;;
    --networks) (($# >= 2)) || die "--networks needs a folder"
      [[ -d $2 ]] || die "--networks $2: no such folder"
      shopt -s nullglob; found=("$2"/*.yaml); shopt -u nullglob
      ((${#found[@]})) || die "--networks $2: no .yaml files in it"
      configs+=("${found[@]}"); shift 2 ;;
    --grid) (($# >= 2)) || die "--grid needs KEY=V1,V2"; grids+=("$2"); shift 2 ;;
    --set) (($# >= 2)) || die "--set needs KEY=VALUE"; base_sets+=("$2"); shift 2 ;;
    --out) (($# >= 2)) || die "--out needs a folder"; out=$2; shift 2 ;;
    --jobs) (($# >= 2)) || die "--jobs needs a number"; jobs=$2; shift 2 ;;
    --threads-per-job) (($# >= 2)) || die "--threads-per-job needs a number"; threads=$2; shift 2 ;;
    --gpus) (($# >= 2)) || die "--gpus needs a list like \"0 1\""; gpus=$2; shift 2 ;;
    --dltrain) (($# >= 2)) || die "--dltrain needs a path"; dltrain=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage 0 ;;
    *) die "unknown argument '$1' (see scripts/sweep.sh --help)" ;;
  esac
done

((${#configs[@]})) || die "give --config BASE.yaml or --networks DIR"
[[ -n $out ]] || die "give --out DIR (one subfolder per point goes there)"
# A quoted glob in --config is expanded here; a plain path must exist.
expanded=()
for c in "${configs[@]}"; do
  if [[ -f $c ]]; then expanded+=("$c"); continue; fi
  shopt -s nullglob; matches=($c); shopt -u nullglob
  ((${#matches[@]})) || die "--config $c: no such file"
  expanded+=("${matches[@]}")
done
configs=("${expanded[@]}")

if [[ -z $dltrain ]]; then
  if command -v dltrain >/dev/null; then dltrain=$(command -v dltrain)
  else dltrain="$(dirname "$0")/../build/dltrain"; fi
fi
[[ -x $dltrain ]] || die "dltrain binary '$dltrain' not found (build it, or give --dltrain PATH)"

cores=$(nproc 2>/dev/null || echo 1)
gpu_list=()
if [[ -n $gpus ]]; then
  read -r -a gpu_list <<< "$gpus"
  [[ -n $jobs && $jobs != "${#gpu_list[@]}" ]] && echo "sweep.sh: note: --gpus gives ${#gpu_list[@]} jobs; --jobs $jobs ignored" >&2
  jobs=${#gpu_list[@]}
fi
jobs=${jobs:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer, got '$jobs'"
threads=${threads:-$(( cores / jobs > 0 ? cores / jobs : 1 ))}
[[ $threads =~ ^[1-9][0-9]*$ ]] || die "--threads-per-job must be a positive integer, got '$threads'"

# ---------------------------------------------------------------- the points
# split_values "a,[1,2],b" -> one value per line; commas inside [...] do not split.
split_values() {
  local s=$1 cur="" depth=0 ch i
  for ((i = 0; i < ${#s}; i++)); do
    ch=${s:i:1}
    case $ch in
      '[') depth=$((depth + 1)) ;;
      ']') depth=$((depth - 1)) ;;
      ',') if ((depth == 0)); then printf '%s\n' "$cur"; cur=""; continue; fi ;;
    esac
    cur+=$ch
  done
  printf '%s\n' "$cur"
}

grid_keys=()
combos=("")  # each combo: overrides separated by newlines
for g in "${grids[@]}"; do
  [[ $g == *=* ]] || die "--grid '$g': expected KEY=V1,V2 (e.g. training.InitialLearnRate=0.01,0.001)"
  key=${g%%=*}
  mapfile -t values < <(split_values "${g#*=}")
  grid_keys+=("$key")
  next=()
  for c in "${combos[@]}"; do
    for v in "${values[@]}"; do next+=("${c:+$c$'\n'}$key=$v"); done
  done
  combos=("${next[@]}")
done

# point_name CONFIG COMBO: the config's name (when several) and each override as key=value,
# without the section word (training./data./layers.), joined by '_', safe for a folder name.
point_name() {
  local name="" kv k
  ((${#configs[@]} > 1 || ${#grids[@]} == 0)) && name=$(basename "$1" .yaml)
  while IFS= read -r kv; do
    [[ -z $kv ]] && continue
    k=${kv%%=*}
    k=${k#*.}
    name+="${name:+_}$k=${kv#*=}"
  done <<< "$2"
  printf '%s' "$name" | tr -c 'A-Za-z0-9._=+-' '_'
}

P_CONFIG=() P_SETS=() P_NAME=()
for cfg in "${configs[@]}"; do
  for c in "${combos[@]}"; do
    P_CONFIG+=("$cfg") P_SETS+=("$c") P_NAME+=("$(point_name "$cfg" "$c")")
  done
done
n=${#P_NAME[@]}
[[ $(printf '%s\n' "${P_NAME[@]}" | sort | uniq -d) == "" ]] || die "two points get the same folder name; use distinct config names"

device_sets=()
((${#gpu_list[@]})) && device_sets=(training.ExecutionEnvironment=gpu)

# The point's identity (config + every override) decides whether an old result still counts.
point_identity() {
  local i=$1 s
  printf 'config: %s\n' "${P_CONFIG[i]}"
  for s in "${device_sets[@]}" "${base_sets[@]}"; do printf 'set: %s\n' "$s"; done
  while IFS= read -r s; do [[ -n $s ]] && printf 'set: %s\n' "$s"; done <<< "${P_SETS[i]}"
}

# json_field FILE KEY: a value from a one-line JSON object (strings unquoted, null -> empty).
json_field() {
  local v
  v=$(grep -o "\"$2\":\(\"[^\"]*\"\|[^,}]*\)" "$1" 2>/dev/null | head -n 1)
  v=${v#*:}; v=${v#\"}; v=${v%\"}
  [[ $v == null ]] && v=""
  printf '%s' "$v"
}

point_done() {  # finished earlier with the same identity
  local dir=$out/${P_NAME[$1]} st
  [[ -f $dir/summary.json && ! -f $dir/exit_code ]] || return 1
  st=$(json_field "$dir/summary.json" status)
  [[ $st == completed || $st == stopped-early ]] || return 1
  [[ -f $dir/point.txt && $(cat "$dir/point.txt") == "$(point_identity "$1")" ]]
}

# ---------------------------------------------------------------- running
point_command() {  # fills the array `cmd` for point $1 (threads per job, overrides)
  local i=$1 s
  # --overwrite: a point trained again (failed, or its config changed) replaces its earlier outputs
  cmd=("$dltrain" train "${P_CONFIG[i]}" --output-dir "$out/${P_NAME[i]}" --overwrite --threads "$threads")
  for s in "${device_sets[@]}" "${base_sets[@]}"; do cmd+=(--set "$s"); done
  while IFS= read -r s; do [[ -n $s ]] && cmd+=(--set "$s"); done <<< "${P_SETS[i]}"
}

run_point() {  # runs point $1 on slot $2 (in the background); leaves its files in its folder
  local i=$1 slot=$2 dir=$out/${P_NAME[$1]} rc=0 start=$SECONDS
  local -a cmd
  point_command "$i"
  mkdir -p "$dir"
  rm -f "$dir/summary.json" "$dir/exit_code" "$dir/error.txt"
  point_identity "$i" > "$dir/point.txt"
  printf '%q ' "${cmd[@]}" > "$dir/command.sh"; echo >> "$dir/command.sh"
  if ((${#gpu_list[@]})); then
    CUDA_VISIBLE_DEVICES=${gpu_list[slot]} "${cmd[@]}" > "$dir/stdout.log" 2> "$dir/stderr.log" || rc=$?
  else
    "${cmd[@]}" > "$dir/stdout.log" 2> "$dir/stderr.log" || rc=$?
  fi
  if ((rc != 0)); then
    echo "$rc" > "$dir/exit_code"
    grep -v '^[[:space:]]*$' "$dir/stderr.log" | tail -n 1 > "$dir/error.txt"
    echo "[sweep] FAILED    ${P_NAME[i]} (exit $rc after $((SECONDS - start)) s): $(cat "$dir/error.txt")"
  else
    echo "[sweep] $(json_field "$dir/summary.json" status) ${P_NAME[i]} in $((SECONDS - start)) s," \
         "validation accuracy $(json_field "$dir/summary.json" validation_accuracy)"
  fi
  return "$rc"
}

mkdir -p "$out" || die "cannot create $out"
where="CPU, $threads thread(s) per job"
((${#gpu_list[@]})) && where="GPUs ${gpu_list[*]}, one job each"
echo "[sweep] $n points, $jobs at once ($where), results in $out"

free_slots=()
for ((s = 0; s < jobs; s++)); do free_slots+=("$s"); done
declare -A slot_of_pid=()
for ((i = 0; i < n; i++)); do
  if point_done "$i"; then
    echo "[sweep] skip      ${P_NAME[i]} (already completed)"
    continue
  fi
  if ((dry_run)); then
    declare -a cmd; point_command "$i"
    slot=$((i % jobs)); prefix=""
    ((${#gpu_list[@]})) && prefix="CUDA_VISIBLE_DEVICES=${gpu_list[slot]} "
    echo "$prefix$(printf '%q ' "${cmd[@]}")"
    continue
  fi
  while ((${#free_slots[@]} == 0)); do  # all slots busy: wait for one job to end
    done_pid=""
    wait -n -p done_pid || true
    [[ -n $done_pid ]] || break
    free_slots+=("${slot_of_pid[$done_pid]}")
    unset "slot_of_pid[$done_pid]"
  done
  slot=${free_slots[0]}
  free_slots=("${free_slots[@]:1}")
  echo "[sweep] start     ${P_NAME[i]}${gpu_list[*]:+ on GPU ${gpu_list[slot]}}"
  run_point "$i" "$slot" &
  slot_of_pid[$!]=$slot
done
wait
((dry_run)) && exit 0

# ---------------------------------------------------------------- results.csv
csv_quote() {  # a CSV field: quoted when it holds a comma, a quote or a newline
  local s=$1
  if [[ $s == *[,\"$'\n']* ]]; then s=${s//\"/\"\"}; printf '"%s"' "$s"; else printf '%s' "$s"; fi
}
metrics=(validation_accuracy minibatch_accuracy total_learnables memory_bytes wall_seconds train_images_per_second)
finished=0
{
  header="point,config"
  for k in "${grid_keys[@]}"; do header+=",$(csv_quote "$k")"; done
  echo "$header,status,$(IFS=,; echo "${metrics[*]}"),exit_code,error"
  for ((i = 0; i < n; i++)); do
    dir=$out/${P_NAME[i]}
    row="$(csv_quote "${P_NAME[i]}"),$(csv_quote "${P_CONFIG[i]}")"
    for k in "${grid_keys[@]}"; do
      v=$(grep -m 1 "^$k=" <<< "${P_SETS[i]}")
      row+=",$(csv_quote "${v#*=}")"
    done
    code="" err="" status=not-run
    if [[ -f $dir/exit_code ]]; then
      status=failed code=$(cat "$dir/exit_code") err=$(cat "$dir/error.txt" 2>/dev/null)
    elif [[ -f $dir/summary.json ]]; then
      status=$(json_field "$dir/summary.json" status)
    fi
    row+=",$status"
    [[ $status == completed || $status == stopped-early ]] && finished=$((finished + 1))
    for m in "${metrics[@]}"; do
      v=""
      [[ $status != failed && -f $dir/summary.json ]] && v=$(json_field "$dir/summary.json" "$m")
      row+=",$v"
    done
    echo "$row,$code,$(csv_quote "$err")"
  done
} > "$out/results.csv.tmp" && mv "$out/results.csv.tmp" "$out/results.csv"

echo "[sweep] $finished of $n points finished; table: $out/results.csv; plot: $dltrain report $out"
((finished == n)) && exit 0 || exit 1

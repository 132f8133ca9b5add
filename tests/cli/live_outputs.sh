#!/usr/bin/env bash
# A run can be watched while it trains: config.yaml appears as training starts, log.csv grows
# by whole rows, progress.png is redrawn (at each validation and every PlotIntervalSeconds) and
# summary.json appears only at the end; the final files are complete. Plots: none writes no plot.
source "$(dirname "$0")/common.sh" "$@"
make_shapes "$TMP/data" 150
run="$TMP/run"
# One thread and 30 epochs of 7 iterations: about 20 s on a small CPU; validation every
# 4 iterations and a 0.5 s plot interval, so the watched files change many times.
"$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --threads 1 --output-dir "$run" \
  --set data.train="$TMP/data/train" --set data.validation="$TMP/data/test" \
  --set training.MaxEpochs=30 --set training.ValidationFrequency=4 --set training.PlotIntervalSeconds=0.5 \
  > "$TMP/train.out" 2> "$TMP/train.err" &
pid=$!
at_exit 'kill $pid 2>/dev/null || true'
running() { kill -0 $pid 2>/dev/null; }
# rows FILE: the complete (newline-terminated) data rows of a log.csv snapshot
rows() { local n; n=$(wc -l < "$1"); echo $((n > 0 ? n - 1 : 0)); }
# check_rows FILE: every complete line of a snapshot has the 8 columns of the header
check_rows() {
  head -n "$(wc -l < "$1")" "$1" | awk -F, 'NF != 8 { bad = 1 } END { exit bad }' \
    || fail "log.csv has a partial row among its complete lines: $(cat "$1")"
}

# config.yaml early: before the first rows, while the process runs.
for _ in $(seq 1 600); do
  [[ -s "$run/config.yaml" ]] && break
  running || fail "the run ended before config.yaml appeared: $(cat "$TMP/train.err")"
  sleep 0.05
done
[[ -s "$run/config.yaml" ]] || fail "no config.yaml 30 s after the start"
running || fail "the run ended before it could be watched"
grep -q "PlotIntervalSeconds: 0.5" "$run/config.yaml" || fail "config.yaml is not the resolved config"
[[ ! -e "$run/summary.json" ]] || fail "summary.json exists while the run trains"
echo "ok: config.yaml while running"

# log.csv grows and progress.png changes, seen between two reads while the process runs.
first_rows=-1 first_sum="" grew=0 changed=0 snaps=0
for _ in $(seq 1 1200); do
  running || break
  if [[ -f "$run/log.csv" && -f "$run/progress.png" ]]; then
    cp "$run/log.csv" "$TMP/snap.csv"
    sum=$(md5sum < "$run/progress.png")
    check_rows "$TMP/snap.csv"
    cp "$TMP/snap.csv" "$TMP/snap-$((snaps++)).csv"
    n=$(rows "$TMP/snap.csv")
    if [[ $first_rows -lt 0 ]]; then
      first_rows=$n first_sum=$sum
    else
      [[ $n -gt $first_rows ]] && grew=1
      [[ $sum != "$first_sum" ]] && changed=1
    fi
    if [[ $grew -eq 1 && $changed -eq 1 ]] && running; then break; fi
  fi
  sleep 0.1
done
running || fail "the run ended before log.csv grew ($grew) and progress.png changed ($changed)"
[[ $grew -eq 1 ]] || fail "log.csv did not grow while the run trained (rows: $first_rows)"
[[ $changed -eq 1 ]] || fail "progress.png did not change while the run trained"
[[ "$(head -c 8 "$run/progress.png" | od -An -tx1 | tr -d ' \n')" == "89504e470d0a1a0a" ]] \
  || fail "the live progress.png is not a PNG"
[[ ! -e "$run/summary.json" ]] || fail "summary.json exists while the run trains"
echo "ok: log.csv grew from $first_rows rows and progress.png changed while running"

rc=0
wait $pid || rc=$?
[[ $rc -eq 0 ]] || fail "the watched run failed (exit $rc): $(cat "$TMP/train.err")"
# The final files: complete, and the live rows were their first rows.
for f in model.bin summary.json log.csv config.yaml progress.png; do
  [[ -s "$run/$f" ]] || fail "missing $run/$f"
done
if ls "$run" | grep -q 'tmp'; then fail "temporary files left in $run: $(ls "$run")"; fi
iters=$(json_number "$run/summary.json" iterations)
[[ $(json_number "$run/summary.json" epochs) -eq 30 && $iters -eq 210 ]] || fail "iterations $iters, expected 30 epochs of 7"
[[ $(rows "$run/log.csv") -eq $iters ]] || fail "log.csv rows $(rows "$run/log.csv") != iterations $iters"
check_rows "$run/log.csv"
for snap in "$TMP"/snap-*.csv; do
  n=$(wc -l < "$snap")
  head -n "$n" "$run/log.csv" | cmp -s - <(head -n "$n" "$snap") \
    || fail "a live log.csv row differs from the final file ($snap)"
done
grep -q '"warnings":\[\]' "$run/summary.json" || fail "summary.json lacks an empty warnings list"
echo "ok: final files complete ($iters rows, $snaps live snapshots were prefixes of the final log.csv)"

# Plots: none: the same files but no progress.png, neither live nor at the end.
"$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$TMP/noplot" \
  --set data.train="$TMP/data/train" --set data.validation="$TMP/data/test" \
  --set training.MaxEpochs=1 --set training.Plots=none > /dev/null
[[ -s "$TMP/noplot/summary.json" && -s "$TMP/noplot/log.csv" ]] || fail "Plots none: missing files"
[[ ! -e "$TMP/noplot/progress.png" ]] || fail "Plots none wrote progress.png"
echo "live_outputs: ok"

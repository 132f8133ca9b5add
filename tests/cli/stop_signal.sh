#!/usr/bin/env bash
# A single-process run stopped by a signal ends as an early stop does: the first SIGINT or
# SIGTERM finishes the current iteration, then model.bin, log.csv, summary.json (status
# interrupted, stop_reason kind signal, naming log.csv's last iteration) are written and the
# exit code is 128 + the signal (130, 143). Two signals end the process at once (no summary);
# so does one to the launcher of local workers.
# Synchronisation: the runs are signalled once log.csv holds some complete rows (polled), and
# every wait has a generous deadline, so a loaded machine only makes it slower.
source "$(dirname "$0")/common.sh" "$@"
set -m  # background jobs keep SIGINT (without job control a shell starts them ignoring it)
make_shapes "$TMP/data" 40
cfg=(--set data.train="$TMP/data/train" --set data.validation="$TMP/data/test" --set training.MaxEpochs=1000
     --set training.MiniBatchSize=16 --set training.ValidationFrequency=3 --set training.Threads=1)

# complete_rows FILE: newline-terminated data rows of a live log.csv (0 while it does not exist)
complete_rows() {
  local n=0
  [[ -f $1 ]] && n=$(tr -cd '\n' < "$1" | wc -c)
  echo $((n > 0 ? n - 1 : 0))
}

# start OUT [args...]: a run in the background; its pid in $pid
start() {
  local out=$1
  shift
  "$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$TMP/$out" "${cfg[@]}" "$@" \
    > "$TMP/$out.stdout" 2> "$TMP/$out.stderr" &
  pid=$!
}
# wait_rows OUT N: until the run's log.csv has N complete rows (the run must still be going)
wait_rows() {
  local deadline=$((SECONDS + 600))
  while (($(complete_rows "$TMP/$1/log.csv") < $2)); do
    kill -0 "$pid" 2> /dev/null || fail "$1: the run ended before log.csv had $2 rows: $(cat "$TMP/$1.stderr")"
    ((SECONDS < deadline)) || fail "$1: log.csv has fewer than $2 rows after 600 s"
    sleep 0.2
  done
}
# finish_within PID SECONDS: wait for it; its exit code in $rc
finish_within() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2> /dev/null; do
    ((SECONDS < deadline)) || { kill -9 "$1"; fail "the run did not end within $2 s of the signal"; }
    sleep 0.2
  done
  rc=0
  wait "$1" || rc=$?
}
# check_stopped OUT SIGNAME CODE NETWORK: the outputs of a run stopped by SIGNAME
check_stopped() {
  local out=$1 sig=$2 code=$3 network=$4 run="$TMP/$1"
  [[ $rc -eq $code ]] || fail "$out: exit code $rc after $sig, expected $code: $(cat "$TMP/$out.stderr")"
  for f in model.bin summary.json log.csv config.yaml progress.png; do
    [[ -s "$run/$f" ]] || fail "$out: no $f after $sig: $(ls "$run")"
  done
  grep -q "$sig: stopping after this iteration" "$TMP/$out.stderr" \
    || fail "$out: no 'stopping after this iteration' line: $(cat "$TMP/$out.stderr")"
  local last
  last=$(tail -1 "$run/log.csv" | cut -d, -f2)
  [[ $last =~ ^[0-9]+$ ]] || fail "$out: log.csv's last row has no iteration: $(tail -1 "$run/log.csv")"
  local want="stopped by $sig after $last iterations; model.bin is the $network"
  python3 - "$run/summary.json" "$want" <<'PYEOF' || fail "$out: summary.json: $(cat "$run/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "interrupted", s["status"]
assert s["stop_reason"]["kind"] == "signal", s["stop_reason"]
assert s["stop_reason"]["message"].startswith(sys.argv[2]), (s["stop_reason"]["message"], sys.argv[2])
PYEOF
  grep -q "interrupted: $want" "$TMP/$out.stderr" || fail "$out: no 'interrupted: $want' line: $(cat "$TMP/$out.stderr")"
  grep -q "^interrupted: model $run/model.bin" "$TMP/$out.stdout" || fail "$out: stdout: $(cat "$TMP/$out.stdout")"
  "$DLTRAIN" classify "$run/model.bin" "$TMP/data/test" --output "$TMP/$out.csv" > "$TMP/$out.classify" \
    || fail "$out: classify with the interrupted run's model.bin failed"
  grep -q 'Accuracy:' "$TMP/$out.classify" || fail "$out: classify printed no accuracy: $(cat "$TMP/$out.classify")"
  [[ $(($(wc -l < "$TMP/$out.csv") - 1)) -eq $(find "$TMP/data/test" -name '*.png' | wc -l) ]] \
    || fail "$out: classify did not label every test image"
  echo "ok: $sig -> exit $rc, $(grep -o '"message":"[^"]*"' "$run/summary.json")"
}

# SIGINT (Ctrl-C): the final network.
start int
wait_rows int 4
kill -INT "$pid"
finish_within "$pid" 600
check_stopped int SIGINT 130 "final network, after"

# SIGTERM (a cluster's or a container's stop) with OutputNetwork best-validation: the kept one.
start term --set training.OutputNetwork=best-validation
wait_rows term 7
kill -TERM "$pid"
finish_within "$pid" 600
check_stopped term SIGTERM 143 "best-validation network, after"

# A second signal stops at once: the default action, no summary.json. Both are sent while the
# process is stopped, so both are pending when it continues: one asks to stop, the other kills.
start twice
wait_rows twice 2
kill -STOP "$pid"
kill -INT "$pid"
kill -TERM "$pid"
kill -CONT "$pid"
finish_within "$pid" 600
[[ $rc -eq 130 || $rc -eq 143 ]] || fail "twice: exit code $rc, expected 130 or 143"
[[ ! -e "$TMP/twice/summary.json" ]] || fail "twice: a second signal still let the run write summary.json"
grep -q "stopping after this iteration" "$TMP/twice.stderr" || fail "twice: no first-signal line: $(cat "$TMP/twice.stderr")"
echo "ok: a second signal ended the run at once (exit $rc, no summary.json)"

# Two local workers keep the default action (they could not agree on an iteration): Ctrl-C to
# the launcher stops both at once, exit 130, no summary.json, and nothing hangs.
start parallel --set training.ExecutionEnvironment=parallel
wait_rows parallel 2
workers=$(pgrep -P "$pid" | tr '\n' ' ' || true)
[[ $(wc -w <<< "$workers") -eq 2 ]] || fail "parallel: expected 2 workers, found '$workers': $(cat "$TMP/parallel.stderr")"
kill -INT "$pid"
finish_within "$pid" 120
[[ $rc -eq 130 ]] || fail "parallel: exit code $rc, expected 130: $(cat "$TMP/parallel.stderr")"
grep -q "interrupted by signal 2 (Interrupt); stopped all 2 workers" "$TMP/parallel.stderr" \
  || fail "parallel: no launcher line: $(cat "$TMP/parallel.stderr")"
[[ ! -e "$TMP/parallel/summary.json" ]] || fail "parallel: a summary.json after Ctrl-C of several processes"
for w in $workers; do
  ! kill -0 "$w" 2> /dev/null || fail "parallel: worker $w still runs after the launcher ended"
done
echo "ok: Ctrl-C to a 2-worker run: exit 130, $(grep -o 'interrupted by signal.*' "$TMP/parallel.stderr")"

# dltrain report lists an interrupted run without ranking it.
"$DLTRAIN" report "$TMP" > "$TMP/report.txt" 2>&1 || true
grep -q "interrupted" "$TMP/report.txt" || fail "report does not list the interrupted runs: $(cat "$TMP/report.txt")"
echo "ok: dltrain report lists interrupted runs"

#!/usr/bin/env bash
# The progress bar and the verbose table fit the terminal (issue 22 item 3): dltrain train runs
# inside tmux at 80 and at 140 columns. The whole pane history, wrapped lines joined (-J), must
# have no line wider than the terminal, table rows whole ('|' ... '|', the expected number),
# the compact table at 80 and MATLAB's wide one at 140, and no leftover progress bar; the raw
# terminal stream (pipe-pane) must show the bar redrawn in place every iteration, each draw
# narrower than the terminal. Then VerboseLayout and the COLUMNS fallback without a terminal.
source "$(dirname "$0")/common.sh" "$@"
if ! command -v tmux > /dev/null; then
  skip "tmux is not installed (apt-get install tmux); the terminal-width checks need it"
fi

"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 4 --per-class 30 --size 16x16 --seed 3 > /dev/null
ntrain=$(find "$TMP/data/train" -name '*.png' | wc -l)
# MiniBatchSize 1 over 3 epochs: a few hundred iterations, so the bar's counts have 3 digits.
cat > "$TMP/tiny.yaml" <<YAML
layers:
  - {type: imageInput, Name: input, InputSize: [16, 16, 3], Normalization: zscore}
  - {type: convolution2d, Name: conv1, FilterSize: 3, NumFilters: 4, Padding: 1}
  - {type: relu, Name: relu1}
  - {type: maxPooling2d, Name: pool1, PoolSize: 2, Stride: 2}
  - {type: fullyConnected, Name: fc, OutputSize: 4}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
data: {train: $TMP/data/train, validation: $TMP/data/test}
training: {MaxEpochs: 3, MiniBatchSize: 1, InitialLearnRate: 0.0001, VerboseFrequency: 25,
           ValidationFrequency: 100, Threads: 1, Seed: 1}
YAML
iters=$((ntrain * 3))
((iters >= 100)) || fail "only $iters iterations: the bar's counts need 3 digits"

sock="dlt-termwidth-$$"
tmuxc() { tmux -L "$sock" -f /dev/null "$@"; }
# kill-server leaves the socket file behind: remove it too.
at_exit 'tmuxc kill-server 2> /dev/null || true; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"'

# run_in_tmux COLUMNS NAME: trains in a detached COLUMNSx50 pane; leaves NAME.pane (the joined
# history), NAME.raw (every byte written to the terminal) and NAME.run (the run folder).
run_in_tmux() {
  local cols=$1 name=$2 out="$TMP/$2"
  cat > "$out.sh" <<SH
while [ ! -e "$out.go" ]; do sleep 0.05; done
"$DLTRAIN" train "$TMP/tiny.yaml" --output-dir "$out.run"
echo "exit=\$?" > "$out.done"
sleep 600
SH
  tmuxc new-session -d -s "$name" -x "$cols" -y 50 "bash $out.sh"
  tmuxc pipe-pane -t "$name" -o "cat > $out.raw"
  [[ $(tmuxc display-message -p -t "$name" '#{pane_width}') -eq $cols ]] || fail "$name: pane is not $cols wide"
  touch "$out.go"
  for _ in $(seq 6000); do [[ -e "$out.done" ]] && break; sleep 0.1; done  # a hang guard
  [[ -e "$out.done" ]] || fail "$name: dltrain train did not finish in 600 s"
  [[ $(cat "$out.done") == exit=0 ]] || fail "$name: dltrain train $(cat "$out.done"): $(tmuxc capture-pane -p -t "$name")"
  sleep 0.3  # let tmux take in the last bytes
  tmuxc capture-pane -p -J -S - -t "$name" > "$out.pane"
  tmuxc kill-session -t "$name"
}

# check_pane NAME COLUMNS TABLE_WIDTH HEADING: the assertions on one run.
check_pane() {
  local name=$1 cols=$2 table_w=$3 heading=$4 pane="$TMP/$1.pane" raw="$TMP/$1.raw"
  # Lines of the table or the bar (or holding pieces of them) must fit. Messages ("info: ...",
  # "completed: model PATH") are plain text the terminal may wrap; they are only counted.
  local progress='[|]|\] +[0-9]+%|ETA [0-9]|iteration [0-9]' widest messages
  widest=$(grep -E "$progress" "$pane" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
  ((widest <= cols)) || fail "$name: a line of $widest characters in a $cols-column terminal:
$(grep -E "$progress" "$pane" | awk -v c="$cols" 'length($0) > c' | head -3)"
  messages=$(grep -vE "$progress" "$pane" | awk -v c="$cols" 'length($0) > c' | wc -l)
  # Table lines: every line holding '|' is a whole row of the expected width.
  local broken
  broken=$(grep '|' "$pane" | awk -v w="$table_w" '!/^\|.*\|$/ || length($0) != w' | head -3)
  [[ -z $broken ]] || fail "$name: broken table lines (expected $table_w wide, '|' at both ends):
$broken"
  grep -qxF -- "$heading" "$pane" || fail "$name: no heading line '$heading':
$(grep '|' "$pane" | head -4)"
  # Rows printed: iteration 1, every VerboseFrequency (25), each validation (100) and the last.
  local expect rows
  expect=$(awk -F, -v n="$iters" 'NR > 1 && ($2 == 1 || $2 % 25 == 0 || $5 != "" || $2 == n)' "$TMP/$name.run/log.csv" | wc -l)
  rows=$(grep -cE '^\| +[0-9]+ \| +[0-9]+ \|' "$pane")
  ((rows == expect && rows >= iters / 25)) || fail "$name: $rows table rows, expected $expect"
  grep -qE "^\| +3 \| +$iters \|" "$pane" || fail "$name: no row for the last iteration $iters"
  # No bar left on screen: footer() clears it (before the fix ~$iters wrapped bar pieces stayed).
  local bars
  bars=$(grep -cE '\[[=> ]+\] +[0-9]+%' "$pane" || true)
  ((bars <= 1)) || fail "$name: $bars progress bar lines left in the pane"
  # The raw stream: the bar drawn every iteration after a '\r', each draw under the width.
  tr '\r' '\n' < "$raw" | grep -aE '^\[[=> ]+\] +[0-9]+%' > "$TMP/$name.bars" || fail "$name: the bar was never drawn"
  local draws longest
  draws=$(wc -l < "$TMP/$name.bars")
  longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$TMP/$name.bars")
  ((draws >= iters)) || fail "$name: the bar was drawn $draws times for $iters iterations"
  ((longest <= cols - 1)) || fail "$name: a bar draw of $longest characters at $cols columns"
  grep -qE "(iteration )?$iters/$iters" "$TMP/$name.bars" || fail "$name: no bar at $iters/$iters"
  echo "ok: $cols columns: widest table/bar line $widest, $rows whole table rows of $table_w," \
    "$draws bar draws of <= $longest, $bars bar lines left ($messages longer message lines)"
}

run_in_tmux 80 narrow
check_pane narrow 80 79 "| Epoch | Iteration |   Time   |  Batch  |   Val   | Batch  |  Val   |  Base  |"
grep -qE "iteration $iters/$iters  ETA" "$TMP/narrow.bars" || fail "narrow: the bar lost its words at 80 columns"

run_in_tmux 140 wide
check_pane wide 140 120 "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base Learning  |"

# Not a terminal: COLUMNS decides auto (else 80: compact); VerboseLayout overrides it.
layout_of() {  # the width of the run's first table line
  "$DLTRAIN" train "$TMP/tiny.yaml" --output-dir "$TMP/l" --overwrite --set training.MaxEpochs=1 "$@" > "$TMP/l.out" 2> /dev/null ||
    fail "dltrain train $*: exit $?"
  grep -m1 '^|' "$TMP/l.out" | awk '{ print length($0) }'
}
[[ $(unset COLUMNS; layout_of) -eq 79 ]] || fail "no terminal, no COLUMNS: expected the compact table"
[[ $(COLUMNS=140 layout_of) -eq 120 ]] || fail "COLUMNS=140: expected the wide table"
[[ $(COLUMNS=119 layout_of) -eq 79 ]] || fail "COLUMNS=119: expected the compact table"
[[ $(COLUMNS=140 layout_of --set training.VerboseLayout=compact) -eq 79 ]] || fail "VerboseLayout compact at 140"
[[ $(COLUMNS=80 layout_of --set training.VerboseLayout=wide) -eq 120 ]] || fail "VerboseLayout wide at 80"
grep -q 'VerboseLayout: wide' "$TMP/l/config.yaml" || fail "config.yaml does not record VerboseLayout"
expect_error "VerboseLayout typo" 2 "training.VerboseLayout must be one of auto, wide, compact" -- \
  "$DLTRAIN" train "$TMP/tiny.yaml" --output-dir "$TMP/l" --set training.VerboseLayout=compakt
echo "ok: VerboseLayout and the COLUMNS fallback"

# Shared helpers for the CLI end-to-end tests (sourced, not run).
# Usage in a test: source "$(dirname "$0")/common.sh" "$@"
set -euo pipefail
DLTRAIN=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# json_number FILE KEY: the number after "KEY": in a one-line JSON file
json_number() { grep -o "\"$2\":[-0-9.e+]*" "$1" | head -1 | cut -d: -f2; }
# at_least VALUE MIN
at_least() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v + 0 >= m + 0) }'; }
# expect_error "what" EXPECTED_CODE PATTERN -- command...: one clear line, the code, the pattern
expect_error() {
  local what=$1 code=$2 pattern=$3
  shift 4
  local out rc=0
  out=$("$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq $code ]] || fail "$what: exit code $rc, expected $code (stderr: $out)"
  local lines
  lines=$(printf '%s\n' "$out" | grep -c 'error' || true)
  [[ $lines -eq 1 ]] || fail "$what: expected one error line, got: $out"
  printf '%s\n' "$out" | grep -q -- "$pattern" || fail "$what: stderr does not mention '$pattern': $out"
  echo "ok: $what -> $(printf '%s' "$out" | grep error)"
}
# make_shapes DIR [per-class]: a small generated dataset
make_shapes() {
  "$DLTRAIN" make-dataset shapes "$1" --classes 4 --per-class "${2:-150}" --size 32x32 --seed 3 >/dev/null
}
# last_checkpoint DIR: the highest N of DIR/checkpoint-iteration-N.bin, empty when there is none
# (a temporary checkpoint-iteration-N.bin.tmp-PID does not count)
last_checkpoint() {
  local f n best=""
  for f in "$1"/checkpoint-iteration-*.bin; do
    [[ -f $f ]] || continue
    n=${f##*-}
    n=${n%.bin}
    if [[ -z $best ]] || ((n > best)); then best=$n; fi
  done
  echo "$best"
}

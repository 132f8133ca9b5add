#!/usr/bin/env bash
# The CLI tests' exit status (common.sh): 77 is CTest's skip code, so only skip exits 77; an
# `exit 77` or a command failing with status 77 under set -e exits 1 (a failure, not a skip);
# at_exit's clean-up runs; and no test sets its own EXIT trap, which would replace common.sh's.
source "$(dirname "$0")/common.sh" "$@"

# run_case NAME BODY: a script that sources common.sh and runs BODY; prints its exit status
run_case() {
  printf 'source "%s/tests/cli/common.sh" "%s" "%s"\n%s\n' "$SRC" "$DLTRAIN" "$SRC" "$2" > "$TMP/$1.sh"
  local rc=0
  bash "$TMP/$1.sh" > "$TMP/$1.out" 2>&1 || rc=$?
  echo "$rc"
}
# expect NAME BODY CODE PATTERN: BODY exits CODE and its output has PATTERN
expect() {
  local rc
  rc=$(run_case "$1" "$2")
  [[ $rc -eq $3 ]] || fail "$1: exit status $rc, expected $3 (output: $(cat "$TMP/$1.out"))"
  grep -q -- "$4" "$TMP/$1.out" || fail "$1: output lacks '$4': $(cat "$TMP/$1.out")"
  echo "ok: $1 -> exit $rc, $(grep -- "$4" "$TMP/$1.out" | head -1)"
}

expect "exit 77" 'exit 77' 1 "FAIL: exit status 77 that did not come from skip"
expect "a command failing with 77" 'bash -c "exit 77"; echo not reached' 1 "FAIL: exit status 77"
expect "skip from a subshell" 'x=$(skip "inner"); echo "not reached $x"' 1 "FAIL: exit status 77"
expect "skip" 'skip "the reason"' 77 "^SKIP: the reason$"
expect "a failure" 'fail "it broke"' 1 "FAIL: it broke"
expect "a pass" 'echo passed' 0 "^passed$"
marker=$TMP/cleaned
expect "at_exit" "at_exit 'echo cleaned > $marker'; echo exiting; exit 3" 3 "^exiting$"
[[ $(cat "$marker" 2> /dev/null) == cleaned ]] || fail "at_exit: the clean-up did not run"
echo "ok: at_exit ran its clean-up"

own_traps=$(grep -l "^[^#]*trap .*EXIT" "$SRC"/tests/cli/*.sh | grep -v "/common\.sh$" || true)
[[ -z $own_traps ]] || fail "these tests set their own EXIT trap (use at_exit): $own_traps"
echo "ok: no CLI test replaces common.sh's EXIT trap"

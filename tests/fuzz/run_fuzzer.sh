#!/usr/bin/env bash
# Runs one fuzz target as a CTest test: first every committed regression input once, then
# libFuzzer for SECONDS on the seed corpus (read only; new inputs go to a scratch folder).
# The random seed is fixed (DLTRAIN_FUZZ_SEED, default 1; 0 = a new one each run) so that a
# test run explores the same inputs each time: CI fails on a change of the code, not on luck
# (an unlucky random seed found a new stb_image defect in CI once). New inputs are the long
# campaign's job (docs/reliability.md).
# Exits non-zero on any crash, leak, timeout (10 s per input) or out-of-memory (2 GiB); the
# failing input is kept in fuzz-artifacts/ of the working folder.
#   run_fuzzer.sh TARGET_BINARY SEED_DIR REGRESSION_DIR SECONDS
set -euo pipefail
bin=$1 seeds=$2 regressions=$3 seconds=$4
name=$(basename "$bin")
opts=(-rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [[ -d $regressions ]] && compgen -G "$regressions/*" > /dev/null; then
  echo "== $name: replaying $(ls "$regressions" | wc -l) regression inputs"
  "$bin" "${opts[@]}" "$regressions"/*
fi
dirs=("$work")
if [[ -d $seeds ]] && compgen -G "$seeds/*" > /dev/null; then
  dirs+=("$seeds")
else
  echo "== $name: no seed corpus in $seeds (tests/fuzz/make_corpus.sh makes it); starting from nothing"
fi
[[ -d $regressions ]] && dirs+=("$regressions")
echo "== $name: fuzzing for $seconds s"
set +e
"$bin" "${opts[@]}" -seed="${DLTRAIN_FUZZ_SEED:-1}" -max_total_time="$seconds" -artifact_prefix="$work/" "${dirs[@]}" > "$work/log" 2>&1
status=$?
set -e
grep -v '^#[0-9]*	\(NEW\|REDUCE\|pulse\)' "$work/log" || true
if [[ $status -ne 0 ]]; then
  mkdir -p fuzz-artifacts
  for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work"/slow-unit-*; do
    [[ -e $f ]] || continue
    cp "$f" "fuzz-artifacts/$name-$(basename "$f")"
    echo "== $name: failing input kept as $PWD/fuzz-artifacts/$name-$(basename "$f")"
  done
  echo "== $name: FAILED (libFuzzer exit $status)"
  exit 1
fi

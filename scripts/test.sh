#!/usr/bin/env bash
# The test command: set-up (Debian packages), build, and every test through CTest; then the
# fuzz build (clang, AddressSanitizer + UndefinedBehaviorSanitizer, in build-fuzz) and its
# fuzz tests, about 30 s per target (DLTRAIN_SKIP_FUZZ=1 skips them; docs/reliability.md).
# Every test that cannot run on this machine or build is reported by CTest as skipped, and the
# list of skipped entries with their reasons is printed after the tests (scripts/ctest-skips.py;
# docs/reliability.md#what-ci-runs-skips-and-bounds); a skip that scripts/allowed-skips.txt does
# not allow on this machine fails the run. Prints each stage's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$SECONDS
scripts/setup.sh
echo "== set-up: $((SECONDS - t)) s"; t=$SECONDS
scripts/build.sh "$@"
echo "== build: $((SECONDS - t)) s"; t=$SECONDS
build_dir=${DLTRAIN_BUILD_DIR:-build}
junit=$PWD/$build_dir/ctest-results.xml
rc=0
ctest --test-dir "$build_dir" --output-on-failure --timeout 2400 -j "$(nproc)" --output-junit "$junit" || rc=$?
skips_rc=0
python3 scripts/ctest-skips.py "$junit" --build-dir "$build_dir" || skips_rc=$?
echo "== tests: $((SECONDS - t)) s"; t=$SECONDS
[[ $rc -eq 0 ]] || { echo "== tests FAILED (ctest exit $rc)"; exit "$rc"; }
[[ $skips_rc -eq 0 ]] || { echo "== tests FAILED: skips not allowed on this machine (scripts/allowed-skips.txt)"; exit 1; }
if [[ "${DLTRAIN_SKIP_FUZZ:-0}" != "1" ]]; then
  fuzz_dir=${DLTRAIN_FUZZ_BUILD_DIR:-build-fuzz}
  cmake -S . -B "$fuzz_dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLTRAIN_CUDA=OFF -DDLTRAIN_TESTS=OFF -DDLTRAIN_FUZZ=ON > /dev/null
  cmake --build "$fuzz_dir" -j "$(nproc)" --target dltrain_fuzzers
  echo "== fuzz build: $((SECONDS - t)) s"; t=$SECONDS
  tests/fuzz/make_corpus.sh "$build_dir/dltrain" "$fuzz_dir/tests/fuzz/fuzz_make_seeds" "$fuzz_dir/fuzz-corpus"
  fuzz_junit=$PWD/$fuzz_dir/ctest-results.xml
  rc=0
  ctest --test-dir "$fuzz_dir" -L fuzz --output-on-failure -j "$(nproc)" --output-junit "$fuzz_junit" || rc=$?
  python3 scripts/ctest-skips.py "$fuzz_junit"
  [[ $rc -eq 0 ]] || { echo "== fuzz tests FAILED (ctest exit $rc)"; exit "$rc"; }
  echo "== fuzz tests: $((SECONDS - t)) s"
fi
# Deliberately broken builds (scripts/broken-builds.sh): each must fail the tests it names.
t=$SECONDS
if [[ "${DLTRAIN_SKIP_BROKEN_BUILDS:-0}" != "1" ]]; then
  scripts/broken-builds.sh || { echo "== broken builds FAILED"; exit 1; }
  echo "== broken builds: $((SECONDS - t)) s"
else
  echo "== broken builds: skipped (DLTRAIN_SKIP_BROKEN_BUILDS=1)"
fi

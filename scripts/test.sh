#!/usr/bin/env bash
# The test command: set-up (Debian packages), build, and every test through CTest.
# GPU tests report 'skipped' on machines without a GPU. Prints each stage's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$SECONDS
scripts/setup.sh
echo "== set-up: $((SECONDS - t)) s"; t=$SECONDS
scripts/build.sh "$@"
echo "== build: $((SECONDS - t)) s"; t=$SECONDS
build_dir=${DLTRAIN_BUILD_DIR:-build}
cd "$build_dir"
ctest --output-on-failure --timeout 900 -j "$(nproc)"
echo "== tests: $((SECONDS - t)) s"

#!/usr/bin/env bash
# The test command: set-up (Debian packages), build, and every test through CTest.
# GPU tests report 'skipped' on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh "$@"
build_dir=${DLTRAIN_BUILD_DIR:-build}
cd "$build_dir"
ctest --output-on-failure --timeout 900 -j "$(nproc)"

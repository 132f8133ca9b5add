#!/usr/bin/env bash
# Configures and builds dltrain in build/ (Release). Extra arguments go to cmake, e.g.
#   scripts/build.sh -DDLTRAIN_CUDA=OFF
# With CI=true: warnings are errors, and configure fails when Gloo or ONNX is missing
# (DLTRAIN_REQUIRE_ALL), so that no test area silently drops out.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache: paths below the repository's parent hash relatively (scripts/broken-builds.sh reuses these objects).
if command -v ccache >/dev/null && [[ -z $(ccache -k base_dir 2>/dev/null) ]]; then export CCACHE_BASEDIR=${PWD%/*}; fi
build_dir=${DLTRAIN_BUILD_DIR:-build}
werror=OFF
require_all=OFF
if [[ "${CI:-}" == "true" ]]; then werror=ON; require_all=ON; fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLTRAIN_WERROR=$werror \
  -DDLTRAIN_REQUIRE_ALL=$require_all "$@"
cmake --build "$build_dir" -j "$(nproc)"

#!/usr/bin/env bash
# Configures and builds dltrain in build/ (Release). Extra arguments go to cmake, e.g.
#   scripts/build.sh -DDLTRAIN_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache: paths below the repository's parent hash relatively (scripts/broken-builds.sh reuses these objects).
if command -v ccache >/dev/null && [[ -z $(ccache -k base_dir 2>/dev/null) ]]; then export CCACHE_BASEDIR=${PWD%/*}; fi
build_dir=${DLTRAIN_BUILD_DIR:-build}
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLTRAIN_WERROR=$werror "$@"
cmake --build "$build_dir" -j "$(nproc)"

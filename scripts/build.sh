#!/usr/bin/env bash
# Configures and builds dltrain in build/ (Release). Extra arguments go to cmake, e.g.
#   scripts/build.sh -DDLTRAIN_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${DLTRAIN_BUILD_DIR:-build}
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLTRAIN_WERROR=$werror "$@"
cmake --build "$build_dir" -j "$(nproc)"

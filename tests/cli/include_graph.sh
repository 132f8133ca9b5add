#!/usr/bin/env bash
# lib/'s folders include one way (docs/architecture.md's table): scripts/check-includes.py
# passes on the repository and fails, naming file:line and the rule, on an include against the
# folder order, a cycle between folders, the CUDA plugin's internals or a CUDA header outside
# lib/backend/cuda, and train/draw reaching past util, train/progress.h and train/run_status.h;
# and a cast to a layer class outside lib/layers or a device test in the fusion code.
source "$(dirname "$0")/common.sh" "$@"
PY=$(command -v python3 || echo /usr/bin/python3)
CHECK="$SRC/scripts/check-includes.py"

out=$("$PY" "$CHECK" "$SRC") || fail "the repository's includes: $out"
grep -q '^tensor -> util$' <<< "$out" || fail "the graph does not show tensor -> util: $out"
echo "ok: $(tail -1 <<< "$out")"

# expect_rejected WHAT PATTERN: the copy in $TMP/src fails the check with PATTERN, then is restored
expect_rejected() {
  local rc=0 got
  got=$("$PY" "$CHECK" "$TMP/src" 2>&1) || rc=$?
  [[ $rc -eq 1 ]] || fail "$1: exit $rc, expected 1 ($got)"
  grep -q -- "$2" <<< "$got" || fail "$1: the output does not say '$2': $got"
  echo "ok: $1 -> $(grep -- "$2" <<< "$got" | head -1)"
  rm -rf "$TMP/src/lib" && cp -r "$SRC/lib" "$TMP/src/lib"
}
mkdir -p "$TMP/src" && cp -r "$SRC/lib" "$TMP/src/lib"

sed -i '0,/#include "util\/error.h"/s//#include "util\/error.h"\n#include "backend\/backend.h"/' "$TMP/src/lib/tensor/tensor.cpp"
expect_rejected "tensor including backend" 'lib/tensor/tensor.cpp:[0-9]*: tensor/ includes backend/backend.h, but tensor/ may include only util'

echo '#include "train/trainer.h"' >> "$TMP/src/lib/data/datastore.cpp"
expect_rejected "data including train" 'data/ includes train/trainer.h'

echo '#include "dist/communicator.h"' >> "$TMP/src/lib/backend/backend.cpp"
expect_rejected "a backend -> dist cycle" 'a cycle between folders: backend -> dist -> backend'

echo '#include "backend/cuda/cuda_common.h"' >> "$TMP/src/lib/dist/join_world.cpp"
expect_rejected "dist including the plugin's internals" "lib/dist/join_world.cpp:[0-9]*: includes backend/cuda/cuda_common.h: the CUDA plugin's internals"

echo '#include <nccl.h>' >> "$TMP/src/lib/dist/join_world.cpp"
expect_rejected "an NCCL header in dist" 'CUDA headers belong in lib/backend/cuda/ only'

echo '#include "train/trainer.h"' >> "$TMP/src/lib/train/draw/canvas.cpp"
expect_rejected "train/draw including the trainer" 'train/draw/ includes train/trainer.h'

# Issue 49's rules beside the includes: no cast to a layer class outside lib/layers, no device
# test in the fusion code.
echo 'static int f(dlt::Layer* l) { return dynamic_cast<dlt::BatchNormLayer*>(l) != nullptr; }' >> "$TMP/src/lib/net/network.cpp"
expect_rejected "a cast to a layer class in net/" 'lib/net/network.cpp:[0-9]*: dynamic_cast to the layer class BatchNormLayer outside lib/layers/'
echo 'static bool planned(bool cpu) { return cpu; }' >> "$TMP/src/lib/net/fusion_plan.cpp"
expect_rejected "a device test in the fusion plan" 'lib/net/fusion_plan.cpp:[0-9]*: a device test in the fusion code'

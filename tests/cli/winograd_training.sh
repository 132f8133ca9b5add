#!/usr/bin/env bash
# Training through dltrain's own Winograd (lib/backend/cpu/winograd.h): a shapes network whose
# conv2 and conv3 are 3x3 64->64 layers, trained with oneDNN capped at AVX2 (on a CPU with
# AVX2 and FMA those layers then run the Winograd op in all three passes; test_cpu_conv_impl.cpp
# checks that choice) and again with ConvolutionAlgorithm: direct (oneDNN's direct kernels).
# Both must reach >= 95% validation accuracy from the same seed, within 3 points of each other.
source "$(dirname "$0")/common.sh" "$@"
make_shapes "$TMP/data" 800
sets=(--set data.train="$TMP/data/train" --set data.validation="$TMP/data/test" --set training.Seed=7
      --set layers.conv1.NumFilters=64 --set layers.conv2.NumFilters=64 --set layers.conv3.NumFilters=64)
DNNL_MAX_CPU_ISA=AVX2 "$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$TMP/wino" "${sets[@]}" \
  > /dev/null
DNNL_MAX_CPU_ISA=AVX2 "$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$TMP/direct" "${sets[@]}" \
  --set training.ConvolutionAlgorithm=direct > /dev/null
a=$(json_number "$TMP/wino/summary.json" validation_accuracy)
b=$(json_number "$TMP/direct/summary.json" validation_accuracy)
echo "validation accuracy: Winograd (AVX2 cap) $a%, direct $b%"
if grep -qw fma /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo; then echo "(this CPU has AVX2 and FMA: Winograd ran)"; fi
at_least "$a" 95 || fail "Winograd run: validation accuracy $a% < 95%"
at_least "$b" 95 || fail "direct run: validation accuracy $b% < 95%"
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d < 3 && d > -3) }' || fail "accuracies $a% and $b% differ by 3+ points"
echo "ok"

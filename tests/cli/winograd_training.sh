#!/usr/bin/env bash
# Training through dltrain's own Winograd (lib/backend/cpu/winograd.h): a shapes network whose
# conv2 and conv3 are 3x3 64->64 layers, trained with oneDNN capped at AVX2 (on a CPU with
# AVX2 and FMA those layers then run the Winograd op in all three passes; test_cpu_conv_impl.cpp
# checks that choice) and again with ConvolutionAlgorithm: direct (oneDNN's direct kernels).
# Both must reach >= 95% validation accuracy from the same seed, within 3 points of each other.
# Which kernels ran is read from oneDNN's own report (DNNL_VERBOSE) of each run: with
# Winograd (dltrain's own kernel on AVX2 + FMA) oneDNN executes no 64->64 convolution; with
# ConvolutionAlgorithm: direct it executes them. On a CPU without AVX2 and FMA the test skips.
source "$(dirname "$0")/common.sh" "$@"
grep -qw fma /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo || skip "this CPU has no AVX2 and FMA: dltrain's Winograd does not run"
make_shapes "$TMP/data" 800
sets=(--set data.train="$TMP/data/train" --set data.validation="$TMP/data/test" --set training.Seed=7
      --set layers.conv1.NumFilters=64 --set layers.conv2.NumFilters=64 --set layers.conv3.NumFilters=64)
# conv2 / conv3 forwards (mb.._ic64oc64_...) oneDNN reports executing in each run
onednn_64() {
  DNNL_MAX_CPU_ISA=AVX2 DNNL_VERBOSE=1 "$DLTRAIN" train "$SRC/configs/shapes.yaml" --quiet --output-dir "$TMP/$1" \
    "${sets[@]}" "${@:2}" | grep -c ',exec,cpu,convolution,.*forward_training.*ic64oc64' || true
}
w64=$(onednn_64 wino) d64=$(onednn_64 direct --set training.ConvolutionAlgorithm=direct)
[[ -s $TMP/wino/summary.json && -s $TMP/direct/summary.json ]] || fail "a training run failed"
echo "oneDNN 64->64 convolution forwards executed: Winograd run $w64, direct run $d64"
((w64 == 0)) || fail "the Winograd run executed $w64 oneDNN 64->64 convolutions: Winograd did not run"
((d64 > 0)) || fail "the direct run executed no oneDNN 64->64 convolution (the check above cannot tell)"
a=$(json_number "$TMP/wino/summary.json" validation_accuracy)
b=$(json_number "$TMP/direct/summary.json" validation_accuracy)
echo "validation accuracy: Winograd (AVX2 cap) $a%, direct $b%"
at_least "$a" 95 || fail "Winograd run: validation accuracy $a% < 95%"
at_least "$b" 95 || fail "direct run: validation accuracy $b% < 95%"
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d < 3 && d > -3) }' || fail "accuracies $a% and $b% differ by 3+ points"
echo "ok"

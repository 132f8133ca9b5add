#!/usr/bin/env bash
# scripts/device/failed_tests.py, which names the failed cases of a GPU test log for gpu_session.sh
# to re-run alone: a name Catch2 wrapped onto a second line comes back whole (it was cut at the
# wrap, so the re-run matched no test), a failure inside a section names its test case, passed
# cases and sections are not named, and each failed case once.
source "$(dirname "$0")/common.sh" "$@"
cat > "$TMP/gpu_tests.log" <<'LOG'
dltrain_gpu_tests: 1 GPU(s); testing cuda:0 against the CPU backend

-------------------------------------------------------------------------------
gpu conv: graph-API plans at real batch sizes give the legacy algorithms'
          results
-------------------------------------------------------------------------------
../tests/gpu/test_gpu_conv_engines.cpp:82
...............................................................................

../tests/gpu/test_gpu_conv_engines.cpp:174: FAILED:
  CHECK( cmp.rel <= tol )
with expansion:
  0.0077934302 <= 0.0001

40.632 s: gpu conv: graph-API plans at real batch sizes give the legacy algorithms' results
-------------------------------------------------------------------------------
gpu conv plans: runtime-compiled engines against the double reference
-------------------------------------------------------------------------------
../tests/gpu/test_gpu_conv_plans.cpp:211
...............................................................................

../tests/gpu/test_gpu_conv_plans.cpp:163: warning:
  float32 8x14x14x32 depthwise 5x5, backward filter: engine 17 (fma,
  deterministic) is rel 0.000960759 from the double reference

-------------------------------------------------------------------------------
gpu optimizers: sgdm, adam, rmsprop over several steps
  adam
-------------------------------------------------------------------------------
../tests/gpu/test_gpu_elementwise.cpp:120
...............................................................................

../tests/gpu/test_gpu_elementwise.cpp:131: FAILED:
  CHECK( got == want )

-------------------------------------------------------------------------------
gpu optimizers: sgdm, adam, rmsprop over several steps
  rmsprop
-------------------------------------------------------------------------------
../tests/gpu/test_gpu_elementwise.cpp:120
...............................................................................

../tests/gpu/test_gpu_elementwise.cpp:131: FAILED:
  CHECK( got == want )

===============================================================================
test cases: 42 | 40 passed | 2 failed
LOG
got=$(python3 "$SRC/scripts/device/failed_tests.py" "$TMP/gpu_tests.log")
want="gpu conv: graph-API plans at real batch sizes give the legacy algorithms' results
gpu optimizers: sgdm, adam, rmsprop over several steps"
[[ "$got" == "$want" ]] || fail "failed_tests.py named:
$got
instead of:
$want"
echo "ok: failed_tests.py names the two failed cases, the wrapped one whole"

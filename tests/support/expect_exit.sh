#!/usr/bin/env bash
# expect_exit.sh CODE COMMAND...: runs COMMAND and succeeds (exit 0) only when it exits with
# exactly CODE; otherwise prints what it got and exits 1 (never 77, which CTest would read as a
# skip). For the test_infra.* CTest entries (tests/CMakeLists.txt) that check the test binaries'
# own exit status.
want=$1
shift
"$@"
rc=$?
if [[ $rc -ne $want ]]; then
  echo "FAIL: '$*' exited $rc, expected $want"
  exit 1
fi
echo "ok: '$*' exited $rc as expected"

#!/usr/bin/env bash
# The long fuzzing campaign (issue 21, item 1): runs every libFuzzer target of a fuzz build
# (tests/fuzz, -DDLTRAIN_FUZZ=ON) for a wall-clock budget each, all targets at once, from the
# seed corpora (tests/fuzz/make_corpus.sh) plus the committed regression inputs. A target
# that stops on a finding has its input kept in OUTPUT/findings/ and goes on with the rest of
# its budget, so one finding does not end its campaign. Writes OUTPUT/summary.md: per target
# the minutes, sessions, executions, libFuzzer's final cov/ft, the findings and slow units.
#   scripts/fuzz_campaign.sh [--minutes 60] [--build build-fuzz] [--output DIR]
#                            [--targets "fuzz_config ..."] [--timeout 30] [--nice 10]
# --timeout is libFuzzer's per-input limit in seconds (wall clock: keep it above the 10 s of
# the CI tests when the targets share few cores). Exit 0 when no target found anything, 1 otherwise.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
minutes=60
build="$root/build-fuzz"
output=""
targets=""
timeout=30
niceness=10
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --nice) niceness="$2"; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "fuzz_campaign.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
die() { echo "fuzz_campaign.sh: error: $*" >&2; exit 2; }
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -ge 1 ]] || die "--minutes must be an integer >= 1, got '$minutes'"
[[ "$timeout" =~ ^[0-9]+$ && "$timeout" -ge 1 ]] || die "--timeout must be an integer >= 1, got '$timeout'"
bindir="$build/tests/fuzz"
[ -d "$bindir" ] || die "no fuzz build in $build (docs/reliability.md, 'Build and run')"
if [ -z "$targets" ]; then
  targets=$(cd "$bindir" && ls fuzz_* | grep -v '^fuzz_make_seeds$' | grep -v '\.' | tr '\n' ' ')
fi
[ -n "$output" ] || output="$(mktemp -d /tmp/fuzz-campaign.XXXXXX)"
mkdir -p "$output/findings" "$output/bin"

# One target's campaign: libFuzzer sessions until the budget is spent.
campaign() {
  local t=$1 left=$((minutes * 60)) session=0 start
  local corpus="$output/corpus/$t" seeds="$build/fuzz-corpus/$t" regressions="$root/tests/fuzz/regressions/$t"
  mkdir -p "$corpus" "$output/$t"
  # A copy of the binary: a rebuild during the campaign does not replace it under the run.
  cp "$bindir/$t" "$output/bin/$t"
  local dirs=("$corpus")
  [ -d "$seeds" ] && dirs+=("$seeds")
  [ -d "$regressions" ] && dirs+=("$regressions")
  while [ "$left" -gt 5 ]; do
    session=$((session + 1))
    start=$SECONDS
    set +e
    nice -n "$niceness" "$output/bin/$t" -max_total_time="$left" -rss_limit_mb=2048 -timeout="$timeout" \
      -print_final_stats=1 -artifact_prefix="$output/findings/$t-" "${dirs[@]}" > "$output/$t/session$session.log" 2>&1
    local status=$?
    set -e
    echo "$session $status $((SECONDS - start))" >> "$output/$t/sessions"
    left=$((left - (SECONDS - start)))
    [ "$status" -eq 0 ] && break
  done
}

echo "fuzz_campaign: ${targets} for $minutes min each, all at once; output in $output"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; started $(date -u +%FT%TZ)"
pids=()
for t in $targets; do
  [ -x "$bindir/$t" ] || die "no target $bindir/$t"
  campaign "$t" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

# The summary: executions summed over sessions; cov / ft from the last status line. Findings
# are crash-, leak-, timeout- and oom- inputs; slow-unit- inputs (over 10 s, not failures)
# are listed apart.
listing() {  # target kinds...
  local t=$1; shift
  (cd "$output/findings" && for k in "$@"; do ls "$t-$k"-* 2> /dev/null || true; done) | sed "s/^$t-//" | tr '\n' ' '
}
found=0
for t in $targets; do [ -n "$(listing "$t" crash leak timeout oom)" ] && found=1; done
{
  echo "| target | minutes | sessions | executions | exec/s | cov | ft | findings | slow units |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|---|"
  for t in $targets; do
    secs=$(awk '{s += $3} END {print s + 0}' "$output/$t/sessions")
    sessions=$(wc -l < "$output/$t/sessions")
    execs=$(cat "$output/$t"/session*.log | awk '/^stat::number_of_executed_units/ {s += $NF} END {print s + 0}')
    last=$(cat "$output/$t"/session*.log | grep -E '^#[0-9]+.*cov: ' | tail -n 1)
    cov=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<< "$last")
    ft=$(sed -E 's/.*ft: ([0-9]+).*/\1/' <<< "$last")
    findings=$(listing "$t" crash leak timeout oom)
    slow=$(listing "$t" slow-unit)
    printf "| %s | %.1f | %d | %d | %.0f | %s | %s | %s | %s |\n" "$t" "$(bc -l <<< "$secs / 60")" "$sessions" \
      "$execs" "$(bc -l <<< "$execs / ($secs + 0.001)")" "${cov:-?}" "${ft:-?}" "${findings:-none}" "${slow:-none}"
  done
} | tee "$output/summary.md"
echo "finished $(date -u +%FT%TZ)"
exit $found

#!/usr/bin/env bash
# Deliberately broken builds (docs/reliability.md#broken-builds): each tests/broken_builds/*.patch
# puts one bug into the library (a wrong gradient, a skipped optimizer step, a dropped class, a
# wrong fused kernel) and names, on "Must fail: <CTest entry>" lines of its header, the tests
# that must catch it. In a scratch copy of the source beside the repository (never the real
# tree) the named tests run once unpatched, where they must pass, then under each patch in turn,
# where every one named must fail. Only the targets those tests need are built.
#
#   scripts/broken-builds.sh [--keep] [PATCH...]    (default: every tests/broken_builds/*.patch)
#
# Exit 0 when every patch was caught; 1 when a patch no longer applies or no longer builds, a
# broken build passes a test named for it, or a named test does not pass unpatched; 2 on a usage
# error. The last line is "broken builds: N caught, N missed". --keep keeps the scratch copy
# (it is also kept when something fails); its logs are in <scratch>/<build>/broken-builds-logs.
#
# The scratch copy is <repo>.broken-builds next to the repository (DLTRAIN_BROKEN_BUILDS_DIR
# to choose another folder: the script creates it and deletes it again, and refuses a folder
# it did not create). Its build copies the main build's configuration (CMakeCache.txt of
# DLTRAIN_BUILD_DIR, default build/), so that ccache reuses the main build's objects: both trees
# lie below ccache's base_dir (scripts/build.sh sets it to the repository's parent unless it is
# set), at the same depth, and generate the same build_config.h. Without ccache it compiles
# everything (about 15 minutes on 2 cores).
set -euo pipefail

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }
keep=0
patches=()
while (($#)); do
  case $1 in
    --keep) keep=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "broken-builds: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) patches+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")") ;;
  esac
  shift
done
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
[[ ${#patches[@]} -gt 0 ]] || patches=("$repo"/tests/broken_builds/*.patch)
for p in "${patches[@]}"; do
  [[ -f $p ]] || { echo "broken-builds: no patch $p" >&2; exit 2; }
  grep -q '^Must fail: ' "$p" || { echo "broken-builds: $p names no test (a line 'Must fail: <CTest entry>')" >&2; exit 2; }
done

build_name=${DLTRAIN_BUILD_DIR:-build}
if [[ $build_name == /* ]]; then main_build=$build_name build_name=build; else main_build=$repo/$build_name; fi
scratch=${DLTRAIN_BROKEN_BUILDS_DIR:-$(dirname "$repo")/$(basename "$repo").broken-builds}
mkdir -p "$(dirname "$scratch")"
scratch=$(cd "$(dirname "$scratch")" && pwd)/$(basename "$scratch")
case $scratch/ in
  "$repo"/*) echo "broken-builds: the scratch copy $scratch would be inside the repository; choose another DLTRAIN_BROKEN_BUILDS_DIR" >&2
    exit 2 ;;
esac
marker=$scratch/.dltrain-broken-builds
if [[ -e $scratch && ! -e $marker ]]; then
  echo "broken-builds: $scratch exists and is not a scratch copy made by this script; remove it or set DLTRAIN_BROKEN_BUILDS_DIR" >&2
  exit 2
fi
sb=$scratch/$build_name
logs=$sb/broken-builds-logs

say() { echo "broken builds: $*"; }
show_log() { tail -n "${2:-25}" "$1" | sed 's/^/    | /'; }  # indented: never read as a test summary
targets_for() {  # the build targets a CTest entry needs
  case $1 in
    cli.*) echo dltrain ;;
    gpu | gpu.*) echo dltrain_gpu_tests ;;
    *) echo dltrain_tests ;;
  esac
}
must_fail() { sed -n 's/^Must fail: *//p' "$1"; }
join() { local out=$1; shift; for x in "$@"; do out+=", $x"; done; echo "$out"; }

# ccache: the main build's objects hit only when both trees are below one base_dir.
if command -v ccache >/dev/null 2>&1; then
  [[ -n $(ccache -k base_dir 2>/dev/null) ]] || export CCACHE_BASEDIR=${repo%/*}
  base=$(ccache -k base_dir)
  case $repo/ in "${base%/}"/*) ;; *) say "note: $repo is not below ccache's base_dir $base: the scratch build will not reuse the main build's objects" ;; esac
else
  say "note: no ccache: the scratch build compiles everything"
fi
# ccache_note STATSLOG: the hits and misses of the builds that wrote that stats log (ccache's
# stats_log: "# <source>" and then its counters), the missed sources named when few.
ccache_note() {
  [[ -f $1 ]] || return 0
  awk '/^# / { f = substr($0, 3) } $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h++ }
    $1 == "cache_miss" { m++; n = split(f, p, "/"); missed = missed (m > 1 ? ", " : "") p[n] }
    END { printf ", ccache %d hits and %d misses", h, m; if (m > 0 && m <= 5) printf " (%s)", missed }' "$1"
}

# The scratch copy: the files git tracks or would track (no build folders, data or runs), or
# without git (a `git archive` export) everything but the top-level folders .gitignore names.
rm -rf --one-file-system "$scratch"
mkdir -p "$scratch"
touch "$marker"
if [[ $(git -C "$repo" rev-parse --show-toplevel 2>/dev/null) == "$repo" ]]; then
  git -C "$repo" ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do if [[ -e $f || -L $f ]]; then printf '%s\0' "$f"; fi; done |
    tar -C "$repo" --null -T - -cf - | tar -C "$scratch" -xf -
else
  excludes=(--exclude=./.git)
  if [[ -f .gitignore ]]; then
    while IFS= read -r top; do excludes+=("--exclude=./$top"); done < <(sed -n 's|^/\([^/]*\)/\{0,1\}$|\1|p' .gitignore)
  fi
  tar -C "$repo" "${excludes[@]}" -cf - . | tar -C "$scratch" -xf -
fi
mkdir -p "$logs"

# The main build's configuration (its CMake options, compilers and flags, CUDA or not).
config=(-DCMAKE_BUILD_TYPE=Release)
generator=Ninja
if [[ -f $main_build/CMakeCache.txt ]]; then
  config=()
  while IFS= read -r line; do config+=("-D$line"); done < <(grep -E '^(DLTRAIN_[A-Z0-9_]+|CMAKE_BUILD_TYPE|CMAKE_(C|CXX|CUDA)_COMPILER|CMAKE_CUDA_HOST_COMPILER|CMAKE_CUDA_ARCHITECTURES|CMAKE_(C|CXX|CUDA)_FLAGS(_[A-Z]+)?|CMAKE_(EXE|SHARED)_LINKER_FLAGS(_[A-Z]+)?):[A-Z]+=' "$main_build/CMakeCache.txt")
  generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$main_build/CMakeCache.txt")
else
  say "note: no main build in $main_build: the scratch build uses the default configuration"
fi

failed=0
finish() {  # finish CAUGHT MISSED [NOTE]
  if [[ $failed -eq 0 && $keep -eq 0 ]]; then
    rm -rf --one-file-system "$scratch"
  else
    say "scratch copy kept in $scratch (logs in $logs)"
  fi
  say "$1 caught, $2 missed${3:+, $3}"
  exit $((failed ? 1 : 0))
}

all_tests=()
while IFS= read -r t; do all_tests+=("$t"); done < <(for p in "${patches[@]}"; do must_fail "$p"; done | sort -u)
all_targets=()
while IFS= read -r t; do all_targets+=("$t"); done < <(for t in "${all_tests[@]}"; do targets_for "$t"; done | sort -u)

# run_test NAME LOG: prints passed, failed, skipped or missing (no CTest entry of that name).
run_test() {
  local re rc=0
  re=$(printf '%s' "$1" | sed 's/[][\\.*^$+?(){}|]/\\&/g')
  ctest --test-dir "$sb" -R "^$re\$" --no-tests=error --output-on-failure >"$2" 2>&1 || rc=$?
  if grep -qE 'No tests were found|out of (0|[2-9]|[1-9][0-9]+)$' "$2"; then
    echo missing
  elif grep -qE 'Test +#[0-9]+: .* Passed ' "$2" && [[ $rc -eq 0 ]]; then
    echo passed
  elif grep -qE '\*\*\*Skipped|Not Run|\*Not Run' "$2"; then
    echo skipped
  else
    echo failed
  fi
}

# Unpatched: the scratch build and the named tests, which must pass.
t0=$SECONDS
if ! cmake -S "$scratch" -B "$sb" -G "$generator" "${config[@]}" >"$logs/configure.log" 2>&1; then
  say "the scratch copy does not configure:"; show_log "$logs/configure.log"; failed=1; finish 0 0 "none tried"
fi
if [[ -f $main_build/generated/build_config.h ]] &&
  ! cmp -s "$main_build/generated/build_config.h" "$sb/generated/build_config.h"; then
  say "note: build_config.h differs from the main build's: ccache will miss"
fi
if ! CCACHE_STATSLOG=$logs/ccache-unpatched.log cmake --build "$sb" -j "$(nproc)" --target "${all_targets[@]}" \
  >"$logs/build-unpatched.log" 2>&1; then
  say "the unpatched scratch copy does not build:"; show_log "$logs/build-unpatched.log"; failed=1; finish 0 0 "none tried"
fi
build_note="build $((SECONDS - t0)) s$(ccache_note "$logs/ccache-unpatched.log")"
t0=$SECONDS
passing=0
for t in "${all_tests[@]}"; do
  log=$logs/unpatched-$(printf '%s' "$t" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-80).log
  r=$(run_test "$t" "$log")
  case $r in
    passed) passing=$((passing + 1)) ;;
    missing) say "'$t' is no CTest entry (\`ctest -N\` lists them): correct the patch's Must fail line"; failed=1 ;;
    *) say "'$t' does not pass without a patch ($r): a failure under a patch would prove nothing"
      show_log "$log"; failed=1 ;;
  esac
done
say "unpatched: $passing of ${#all_tests[@]} named tests pass ($build_note; tests $((SECONDS - t0)) s)"
[[ $failed -eq 0 ]] || finish 0 0 "none tried"

# Each patch in turn: apply, build what its tests need, run them, take the patch out again.
# (GIT_CEILING_DIRECTORIES: git apply treats the scratch copy as a plain folder even when a
# folder above it is a git repository.)
caught=0 missed=0
gitp() { GIT_CEILING_DIRECTORIES=$(dirname "$scratch") git -C "$scratch" apply "$@"; }
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  if ! gitp --check "$p" >"$logs/$name-apply.log" 2>&1; then
    say "MISSED $name: the patch no longer applies (update it to today's code):"; show_log "$logs/$name-apply.log"
    missed=$((missed + 1)) failed=1
    continue
  fi
  gitp "$p"
  t0=$SECONDS
  targets=()
  while IFS= read -r t; do targets+=("$t"); done < <(must_fail "$p" | while IFS= read -r t; do targets_for "$t"; done | sort -u)
  if ! CCACHE_STATSLOG=$logs/ccache-$name.log cmake --build "$sb" -j "$(nproc)" --target "${targets[@]}" \
    >"$logs/$name-build.log" 2>&1; then
    say "MISSED $name: the patched copy does not build (a broken build must compile):"
    grep -m3 -E 'error|Error' "$logs/$name-build.log" | sed 's/^/    | /' || show_log "$logs/$name-build.log"
    missed=$((missed + 1)) failed=1
  else
    build_note="build $((SECONDS - t0)) s$(ccache_note "$logs/ccache-$name.log")"
    t0=$SECONDS
    by=() escaped=()
    while IFS= read -r t; do
      log=$logs/$name-$(printf '%s' "$t" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-80).log
      r=$(run_test "$t" "$log")
      if [[ $r == failed ]]; then by+=("'$t'"); else escaped+=("'$t' ($r)"); fi
    done < <(must_fail "$p")
    if [[ ${#escaped[@]} -eq 0 ]]; then
      say "caught $name by $(join "${by[@]}") ($build_note; tests $((SECONDS - t0)) s)"
      caught=$((caught + 1))
    else
      say "MISSED $name: with the patch applied these named tests did not fail: $(join "${escaped[@]}")"
      missed=$((missed + 1)) failed=1
    fi
  fi
  gitp -R "$p" || { say "cannot take $name out of the scratch copy again"; failed=1; finish "$caught" "$missed"; }
done
finish "$caught" "$missed"

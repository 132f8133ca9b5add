#!/usr/bin/env bash
# Packs a CUDA build of dltrain for a lent GPU machine (docs/gpu.md): the binaries dltrain,
# dltrain_tests and dltrain_gpu_tests in bin/, the CUDA plugin libdltrain_cuda.so in lib/ (where
# dltrain looks for it: ../lib beside its folder), plus every shared library they need that the
# device image lacks (oneDNN, yaml-cpp, spdlog/fmt, Gloo, protobuf/ONNX, turbojpeg, stb, ...), stripped
# (the test binaries keep their symbols; the CUDA code has -lineinfo), into
# one xz archive .devbundle/dltrain-bundle.tar.xz that a device call carries (carry: .devbundle).
# Left out on purpose: glibc, libstdc++, libgcc_s (the device's are newer) and the large CUDA
# libraries (libcuda, cuBLAS/cuBLASLt, cuDNN, NCCL), which the device has in /usr/local/cuda and
# its pip nvidia-* packages; scripts/device/gpu_session.sh finds them there at run time.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/device/bundle.sh [--build-dir DIR] [--no-build] [--allow-cpu-build] [--jobs N]
  --build-dir DIR     the CUDA build to pack (default build-gpu-tests; configured with
                      -DDLTRAIN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 when it has no build.ninja)
  --no-build          pack what is there; do not run ninja
  --allow-cpu-build   pack a build without the CUDA backend (only to test this script)
  --jobs N            ninja -j (default 2)
Writes .devbundle/dltrain-bundle.tar.xz and .devbundle/MANIFEST.txt; prints the sizes against
the device tool's 64 MiB limit (tracked + untracked-not-ignored files + carried paths).
EOF
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-gpu-tests"
do_build=1
allow_cpu=0
jobs=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$(realpath -m "$2")"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --allow-cpu-build) allow_cpu=1; shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bundle.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

bins=(dltrain dltrain_tests dltrain_gpu_tests)
plugin=libdltrain_cuda.so  # the CUDA backend, dlopen'ed by dltrain (docs/gpu.md "The CUDA plugin")
if [[ $do_build == 1 ]]; then
  if [[ ! -f "$build/build.ninja" ]]; then
    echo "== configuring $build (CUDA on, sm_90)" >&2
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLTRAIN_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
      -DCMAKE_CUDA_FLAGS=-lineinfo >&2  # compute-sanitizer and crash reports name source lines
  fi
  echo "== building ${bins[*]} and the CUDA plugin in $build" >&2
  ninja -C "$build" -j "$jobs" "${bins[@]}" $(grep -q '#define DLT_HAVE_CUDA 1' "$build/generated/build_config.h" && echo dltrain_cuda) >&2
fi

cfg="$build/generated/build_config.h"
[[ -f "$cfg" ]] || { echo "bundle.sh: $cfg missing: is $build a dltrain build? (--build-dir)" >&2; exit 1; }
if ! grep -q '#define DLT_HAVE_CUDA 1' "$cfg"; then
  if [[ $allow_cpu == 1 ]]; then
    echo "bundle.sh: WARNING: $build has no CUDA backend; packing it only to test this script" >&2
  else
    echo "bundle.sh: $build was built without the CUDA backend (DLT_HAVE_CUDA 0): reconfigure with" \
         "-DDLTRAIN_CUDA=ON, or pass --build-dir of a CUDA build" >&2
    exit 1
  fi
fi
# Where a target's binary is: dltrain at the top of the build, the tests under tests/.
bin_path() { if [[ -x "$build/$1" ]]; then echo "$build/$1"; else echo "$build/tests/$1"; fi; }
for b in "${bins[@]}"; do
  [[ -x "$(bin_path "$b")" ]] || { echo "bundle.sh: $(bin_path "$b") missing (build it, or drop --no-build)" >&2; exit 1; }
done
has_plugin=0
if grep -q '#define DLT_HAVE_CUDA 1' "$cfg"; then
  [[ -f "$build/$plugin" ]] || { echo "bundle.sh: $build/$plugin missing (ninja dltrain_cuda, or drop --no-build)" >&2; exit 1; }
  has_plugin=1
fi

# Libraries that must come from the device: its C/C++ runtime (newer than ours) and the big
# NVIDIA libraries (cuBLASLt alone is 517 MB here). libcudart (0.7 MB) is bundled so the
# runtime is the one we compiled against (CUDA 13.0; the device's driver supports 13.0).
from_device_re='^(ld-linux.*|libc\.so.*|libm\.so.*|libdl\.so.*|libpthread\.so.*|librt\.so.*|libstdc\+\+\.so.*|libgcc_s\.so.*|libcuda\.so.*|libnvidia-.*|libcublas.*|libcudnn.*|libnccl.*|linux-vdso.*)$'

out="$root/.devbundle"
stage="$build/devbundle-stage"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$out"
# Keep the bundle out of git status. A fresh clone may have no .git/info/, a worktree keeps it
# elsewhere, and a git archive has no .git at all: ask git where, and create the folder.
if exclude=$(git -C "$root" rev-parse --path-format=absolute --git-path info/exclude 2> /dev/null); then
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.devbundle/' "$exclude" 2> /dev/null || echo '/.devbundle/' >> "$exclude"
fi

declare -A seen=()
missing=()
elves=("${bins[@]}")
if [[ $has_plugin == 1 ]]; then
  cp "$build/$plugin" "$stage/lib/$plugin"
  strip --strip-unneeded "$stage/lib/$plugin"  # its dynamic symbols still name functions
  seen[$plugin]=1
  elves+=("$plugin")
fi
for b in "${elves[@]}"; do
  if [[ $b == "$plugin" ]]; then
    src="$build/$plugin"
  else
    src="$(bin_path "$b")"
    cp "$src" "$stage/bin/$b"
    # The test binaries keep their symbols: a first GPU run's backtraces must name functions.
    [[ $b == dltrain ]] && strip --strip-unneeded "$stage/bin/$b"
  fi
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    if [[ "$name" =~ $from_device_re ]]; then continue; fi
    if [[ "$path" == "not" ]]; then missing+=("$b: $name"); continue; fi
    [[ -n "${seen[$name]:-}" ]] && continue
    seen[$name]=1
    cp -L "$path" "$stage/lib/$name"
    chmod u+w "$stage/lib/$name"
    strip --strip-unneeded "$stage/lib/$name" 2> /dev/null || true
  done < <(ldd "$src")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "bundle.sh: libraries not found here (install them, or they cannot be bundled):" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
cp "$cfg" "$stage/build_config.h"
git -C "$root" rev-parse HEAD > "$stage/COMMIT" 2> /dev/null || true
git -C "$root" status --porcelain --untracked-files=no -- lib apps tests cmake CMakeLists.txt > "$stage/DIRTY" 2> /dev/null || true

# Check: with the bundle first on the library path, everything but the libraries the device
# provides must resolve into the bundle.
checked=("${bins[@]/#/$stage/bin/}")
[[ $has_plugin == 1 ]] && checked+=("$stage/lib/$plugin")
leftover=$(for f in "${checked[@]}"; do LD_LIBRARY_PATH="$stage/lib" ldd "$f"; done |
           awk '$2 == "=>" {print $1, $3}' | sort -u | while read -r name path; do
             [[ "$name" =~ $from_device_re ]] && continue
             [[ "$path" == "$stage/lib/"* ]] || echo "$name ($path)"
           done)
if [[ -n "$leftover" ]]; then
  echo "bundle.sh: not resolved into the bundle: $leftover" >&2
  exit 1
fi

# Every kernel must have sm_90 machine code (no JIT from PTX on the device, which would hide
# compile errors until run time and cost start-up time), and none may spill registers to local
# memory (a slow path nobody chose).
# cuobjdump: on PATH, in the toolkit, or NVIDIA's PyPI wheel unpacked under the build folder
# (this machine's toolkit ships without it; the wheel is a tool for this check, not a dependency).
cuobjdump=$(command -v cuobjdump || true)
[[ -z $cuobjdump && -x /usr/local/cuda/bin/cuobjdump ]] && cuobjdump=/usr/local/cuda/bin/cuobjdump
if [[ -z $cuobjdump ]]; then
  wheel="$build/cuobjdump"
  if [[ ! -x $wheel/nvidia/cu13/bin/cuobjdump ]]; then
    mkdir -p "$wheel"
    python3 -m pip download -q --no-deps -d "$wheel" nvidia-cuda-cuobjdump >&2 &&
      (cd "$wheel" && python3 -m zipfile -e nvidia_cuda_cuobjdump-*.whl .) || true
    chmod +x "$wheel/nvidia/cu13/bin/cuobjdump" 2> /dev/null || true
  fi
  [[ -x $wheel/nvidia/cu13/bin/cuobjdump ]] && cuobjdump=$wheel/nvidia/cu13/bin/cuobjdump
fi
kernels_in="$stage/lib/$plugin"  # the kernels are in the CUDA plugin
if [[ -n $cuobjdump && -f $kernels_in ]]; then
  elfs=$("$cuobjdump" --list-elf "$kernels_in" 2> /dev/null || true)
  if [[ $(grep -c 'sm_90' <<< "$elfs") -lt 1 ]] || grep -v 'sm_90' <<< "$elfs" | grep -q 'ELF'; then
    echo "bundle.sh: $plugin's kernels are not all sm_90 ELF (cuobjdump --list-elf: ${elfs:-none})" >&2
    exit 1
  fi
  usage=$("$cuobjdump" --dump-resource-usage "$kernels_in" 2> /dev/null | grep -A1 'Function' || true)
  kernels=$(grep -c 'Function' <<< "$usage" || true)
  spills=$(grep -B1 -E 'LOCAL:[1-9]' <<< "$usage" | grep 'Function' | c++filt || true)
  if [[ -n "$spills" ]]; then
    echo "bundle.sh: kernels using local memory (register spills):" >&2
    echo "$spills" | sed 's/^/  /' >&2
    exit 1
  fi
  stacks=$(grep -B1 -E 'STACK:[1-9]' <<< "$usage" | grep 'Function' | c++filt | sed 's/^ *Function //; s/(anonymous namespace)/{anon}/g; s/(.*//' | tr '\n' ' ' || true)
  echo "== $(wc -l <<< "$elfs") sm_90 cubins, $kernels kernels, none spills registers (LOCAL 0)${stacks:+; with a stack frame: $stacks}" >&2
elif [[ ! -f $kernels_in ]]; then
  echo "bundle.sh: no CUDA plugin in this build: kernels not checked" >&2
else
  echo "bundle.sh: no cuobjdump (not on PATH, not in /usr/local/cuda/bin, pip download failed): sm_90 code and spills not checked" >&2
fi

echo "== packing" >&2
tar -C "$stage" -cf - bin lib build_config.h COMMIT DIRTY | xz -T"$jobs" -6 > "$out/dltrain-bundle.tar.xz.tmp"
mv "$out/dltrain-bundle.tar.xz.tmp" "$out/dltrain-bundle.tar.xz"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
raw=$(du -sb "$stage" | cut -f1)
packed=$(stat -c %s "$out/dltrain-bundle.tar.xz")
tracked=$(git -C "$root" ls-files -z | (cd "$root" && xargs -0 stat -c %s 2> /dev/null) | awk '{s += $1} END {print s + 0}')
untracked=$(git -C "$root" ls-files -z --others --exclude-standard | (cd "$root" && xargs -0 -r stat -c %s 2> /dev/null) | awk '{s += $1} END {print s + 0}')
shared=0
[[ -d "$root/shared" ]] && shared=$(du -sb "$root/shared" | cut -f1)
total=$((packed + tracked + untracked + shared))
{
  echo "dltrain device bundle, $(date -u +%Y-%m-%dT%H:%MZ), build $build, commit $(cat "$stage/COMMIT" 2> /dev/null)"
  echo "CUDA backend: $(grep -c '#define DLT_HAVE_CUDA 1' "$cfg")  NCCL: $(grep -c '#define DLT_HAVE_NCCL 1' "$cfg")"
  echo
  echo "files (stripped, uncompressed bytes):"
  (cd "$stage" && find bin lib -type f -printf '%s\t%p\n' | sort -k2)
  echo
  need() { (cd "$stage" && for f in bin/* lib/*; do objdump -T "$f" 2> /dev/null; done) | grep -o "$1[0-9.]*" | sort -uV | tail -1; }
  echo "needs from the device: glibc $(need GLIBC_2 | sed 's/GLIBC_//'), libstdc++ $(need GLIBCXX_3 | sed 's/GLIBCXX_//') (Ubuntu 22.04 and later have both)"
  echo
  echo "left to the device (ldd of the bundled binaries and the plugin, not bundled):"
  for f in "$stage"/bin/* "$stage/lib/$plugin"; do [[ -f $f ]] && ldd "$f"; done | awk '$2 == "=>" {print $1}' | sort -u |
    grep -E "$from_device_re" | sed 's/^/  /' || true
  echo
  echo "sizes: bundle $(mib "$raw") uncompressed, $(mib "$packed") as tar.xz; repo tracked $(mib "$tracked"), untracked-not-ignored $(mib "$untracked"), shared/ $(mib "$shared"); total that travels $(mib "$total") of 64 MiB"
} > "$out/MANIFEST.txt"
cat "$out/MANIFEST.txt" >&2
if [[ $total -gt $((62 * 1048576)) ]]; then
  echo "bundle.sh: what travels ($(mib "$total")) is too close to the 64 MiB limit" >&2
  exit 1
fi
echo "bundle.sh: ok: .devbundle/dltrain-bundle.tar.xz ($(mib "$packed")); carry [\".devbundle\"]" >&2

#!/usr/bin/env bash
# Installs the Debian packages dltrain needs to build, test and benchmark, when missing.
# Runs as root or through sudo. Safe to run again: installed packages are skipped.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache git
  libyaml-cpp-dev libcli11-dev libstb-dev libspdlog-dev catch2
  libdnnl-dev libgloo-dev libturbojpeg0-dev
  # Debian's oneDNN is built with its OpenCL runtime: dnnl-config.cmake calls
  # find_package(OpenCL REQUIRED), and libdnnl-dev only recommends the package that has it.
  ocl-icd-opencl-dev
  libonnx-dev libprotobuf-dev
  # The ONNX tests check dltrain against PyTorch and OpenCV's dnn on the same networks;
  # tests/cli/pytorch_segment_twin.sh runs the segmentation twin (PIL reads its images, YAML its
  # config).
  python3-torch python3-numpy python3-onnx python3-opencv python3-pil python3-yaml
  # The CLI tests measure peak memory with GNU time (tests/cli/common.sh peak_rss_kib) and
  # find worker processes with pgrep (procps); neither is in a minimal Debian.
  time procps
  # tests/cli/terminal_width.sh runs training inside tmux at 80 and 140 columns.
  tmux
  # tests/cli/faults_between_hosts.sh builds hosts from network namespaces (ip netns, veth,
  # bridge, blackhole routes; tc for netem where the kernel has it).
  iproute2
  # The fuzz build (tests/fuzz, docs/reliability.md): clang 14 with libFuzzer and the sanitizer
  # runtimes (libclang-rt-14-dev), and LLVM's OpenMP for clang (libomp-dev).
  clang libclang-rt-14-dev libomp-dev
)
# The benchmarks also use tcmalloc from Debian (not needed to build or test).
if [[ "${DLTRAIN_BENCH:-0}" == "1" ]]; then
  packages+=(libtcmalloc-minimal4)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  sudo_cmd=()
elif command -v sudo >/dev/null 2>&1; then
  sudo_cmd=(sudo)
else
  echo "setup: missing packages (${missing[*]}) and not root; install them as root or install sudo" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

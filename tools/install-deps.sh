#!/usr/bin/env bash
# Installs what zpp's build, tests and tools need, with apt-get. Idempotent; prints nothing when
# everything is present. The CUDA toolkit (nvcc, NCCL headers) is not a Debian package here: it
# must be under /usr/local/cuda or on PATH.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config   # the build
  clang libclang-rt-14-dev           # make fuzz (libFuzzer)
  clang-format                       # make format
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwloc-dev hwloc                 # topology discovery
  libucx-dev                         # the multi-process CPU transport
  nlohmann-json3-dev libcli11-dev    # JSON output, command-line parsing
  python3-matplotlib                 # make demo's plots (tools/plot_bench.py)
  fortunes                           # the English text the training runs learn (bench/fsdp)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install-deps: nvcc not found (PATH, /usr/local/cuda/bin): configure with" \
       "-DZPP_ENABLE_CUDA=OFF to build without the CUDA kernels" >&2
fi

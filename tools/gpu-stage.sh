#!/usr/bin/env bash
# Copies what tools/gpu-check.sh runs out of a build folder into a small one (stripped binaries,
# libzpp.so, and the hwloc library and training text that the GPU machine's image lacks), so
# that it fits the device tool's 64 MiB carry limit; a whole build folder (test binaries of every
# label, objects) does not.
#   tools/gpu-stage.sh [BUILD] [DEST]      (defaults: build, .gpu/build; .gpu/ is git-ignored)
# Then carry .gpu and, on the device machine: bash tools/gpu-check.sh .gpu/build PART...
set -euo pipefail
build=$(realpath "${1:-build}")
dest=$(realpath -m "${2:-.gpu/build}")
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
for binary in zpp_codec_gpu_tests zpp-collective-check zpp-codec-gpu-bench zpp-bench; do
  strip -o "$dest/bin/$binary" "$build/bin/$binary"
done
strip -o "$dest/lib/libzpp.so" "$build/lib/libzpp.so"
cp -a "$build/python" "$dest/python"
# libhwloc (and nothing else of the system's) travels: the image has CUDA and NCCL, not hwloc.
hwloc=$(ldd "$build/lib/libzpp.so" | awk '/libhwloc/{print $3}')
[[ -n "$hwloc" ]] && cp -L "$hwloc" "$dest/lib/"
# The training text of bench/fsdp and bench/deepspeed (gpu-check.sh points ZPP_CORPUS_DIR here).
[[ -d /usr/share/games/fortunes ]] && cp -a /usr/share/games/fortunes "$dest/corpus"
du -sh "$dest"

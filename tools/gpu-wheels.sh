#!/usr/bin/env bash
# The Python packages the GPU check needs that the GPU machine's image lacks, as wheels in .whl/
# (carried to that machine, which cannot reach a registry): DeepSpeed (a source package, built
# into a pure-Python wheel here) and what it needs beyond the image's torch, numpy, msgpack,
# ninja, psutil, py-cpuinfo, tqdm, einops and packaging. The image's python is 3.12.
#   tools/gpu-wheels.sh            -> .whl/*.whl
# On the GPU machine: python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
# and PYTHONPATH=/tmp/site (tools/gpu-check.sh does that itself when .whl/ is there).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/.whl"
DEEPSPEED_VERSION=0.19.8
python=$(bash "$root/tools/install-torch.sh")
rm -rf "$out"
mkdir -p "$out"
"$python" -m pip wheel -q --disable-pip-version-check --no-deps "deepspeed==$DEEPSPEED_VERSION" \
  -w "$out"
# Binary wheels for the image's CPython 3.12 (pydantic-core is compiled).
"$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$out" \
  hjson "pydantic==$("$python" -c 'import pydantic; print(pydantic.VERSION)')" \
  "pydantic-core==$("$python" -c 'import pydantic_core; print(pydantic_core.__version__)')" \
  annotated-types typing-inspection
ls "$out"

#!/usr/bin/env bash
# Installs the pinned static-analysis tools from PyPI into one virtual environment per machine:
# lizard (function lengths, tools/check_function_length.py) and cuobjdump with its nvdisasm
# (SASS instruction counts, tools/kernel_instructions.py; not in the CUDA toolkit here). Idempotent: prints the
# environment's python, or with --cuobjdump its cuobjdump, and nothing else when it is already
# complete.
#   ZPP_LINT_VENV  where the environment lives
#                  (default /opt/zpp/venv-lint-$LIZARD_VERSION-$CUOBJDUMP_VERSION)
set -euo pipefail

LIZARD_VERSION=1.24.3
CUOBJDUMP_VERSION=13.2.51  # reads the sm_80 and sm_90 code that nvcc 13.0 makes
venv=${ZPP_LINT_VENV:-/opt/zpp/venv-lint-$LIZARD_VERSION-$CUOBJDUMP_VERSION}
stamp="$venv/.zpp-complete"

mkdir -p "$(dirname "$venv")"
# make test runs several checks at once that need the environment: one installs, the others wait.
exec 9>"$venv.lock"
flock 9
if [[ ! -f $stamp ]]; then
  rm -rf "$venv"  # a half-made environment (an interrupted install) is made again
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "lizard==$LIZARD_VERSION" \
    "nvidia-cuda-cuobjdump==$CUOBJDUMP_VERSION" "nvidia-cuda-nvdisasm==$CUOBJDUMP_VERSION" >&2
  touch "$stamp"
fi
if [[ "${1:-}" == --cuobjdump ]]; then
  echo "$venv"/lib/python3*/site-packages/nvidia/cu13/bin/cuobjdump
else
  echo "$venv/bin/python"
fi

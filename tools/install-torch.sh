#!/usr/bin/env bash
# Installs the pinned PyTorch from PyPI into one virtual environment per machine (not per clone),
# for the tests and harnesses that drive zpp from a real framework. Idempotent: prints the
# environment's python and nothing else when it is already complete. pip torch pulls its CUDA
# library wheels even for CPU use (about 5.4 GB, ~3 min); `import torch` needs them.
#   ZPP_VENV  where the environment lives (default /opt/zpp/venv-torch-$TORCH_VERSION)
set -euo pipefail

TORCH_VERSION=2.15.0
venv=${ZPP_VENV:-/opt/zpp/venv-torch-$TORCH_VERSION}
stamp="$venv/.zpp-complete"

if [[ -f $stamp ]]; then
  echo "$venv/bin/python"
  exit 0
fi

# A half-made environment (an interrupted install) is removed and made again.
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" >&2
"$venv/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" numpy >&2
"$venv/bin/python" -c "import torch; assert torch.__version__.startswith('$TORCH_VERSION')" >&2
touch "$stamp"
echo "$venv/bin/python"

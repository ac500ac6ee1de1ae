#!/usr/bin/env bash
# Installs the pinned PyTorch and DeepSpeed from PyPI into one virtual environment per machine
# (not per clone), for the tests and harnesses that drive zpp from a real framework. Idempotent:
# prints the environment's python and nothing else when it is already complete. pip torch pulls
# its CUDA library wheels even for CPU use (about 5.4 GB, ~3 min); `import torch` needs them.
# DeepSpeed comes as a source package with no prebuilt ops (about 1 min); on the CPU it runs
# with DS_ACCELERATOR=cpu.
#   ZPP_VENV  where the environment lives (default /opt/zpp/venv-torch-$TORCH_VERSION)
set -euo pipefail

TORCH_VERSION=2.15.0
DEEPSPEED_VERSION=0.19.8
venv=${ZPP_VENV:-/opt/zpp/venv-torch-$TORCH_VERSION}
torch_stamp="$venv/.zpp-complete"  # torch and numpy (the first set)
stamp="$venv/.zpp-complete-deepspeed-$DEEPSPEED_VERSION"

if [[ -f $stamp ]]; then
  echo "$venv/bin/python"
  exit 0
fi

if [[ ! -f $torch_stamp ]]; then
  # A half-made environment (an interrupted install) is removed and made again.
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" numpy >&2
  "$venv/bin/python" -c "import torch; assert torch.__version__.startswith('$TORCH_VERSION')" >&2
  touch "$torch_stamp"
fi
# Pinned beside torch: pip must not move torch to satisfy DeepSpeed.
"$venv/bin/pip" install -q --disable-pip-version-check "deepspeed==$DEEPSPEED_VERSION" \
  "torch==$TORCH_VERSION" >&2
DS_ACCELERATOR=cpu "$venv/bin/python" -c \
  "import deepspeed; assert deepspeed.__version__ == '$DEEPSPEED_VERSION'" >&2
touch "$stamp"
echo "$venv/bin/python"

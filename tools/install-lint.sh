#!/usr/bin/env bash
# Installs the pinned lizard (function lengths, tools/check_function_length.py) from PyPI into one
# virtual environment per machine. Idempotent: prints the environment's python and nothing else
# when it is already complete.
#   ZPP_LINT_VENV  where the environment lives (default /opt/zpp/venv-lint-$LIZARD_VERSION)
set -euo pipefail

LIZARD_VERSION=1.24.3
venv=${ZPP_LINT_VENV:-/opt/zpp/venv-lint-$LIZARD_VERSION}
stamp="$venv/.zpp-complete"

if [[ ! -f $stamp ]]; then
  rm -rf "$venv"  # a half-made environment (an interrupted install) is made again
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "lizard==$LIZARD_VERSION" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"

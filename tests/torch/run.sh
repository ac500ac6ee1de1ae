#!/usr/bin/env bash
# Runs a Python test with the pinned torch (tools/install-torch.sh: once per machine; make test
# runs it before ctest) and the zpp_torch package of build folder $1.
#   tests/torch/run.sh BUILD_DIR SCRIPT [ARGS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
shift
python=$(bash "$here/../../tools/install-torch.sh")
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" "$@"

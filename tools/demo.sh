#!/usr/bin/env bash
# make demo: on a machine with a GPU, the benchmark against plain NCCL; without one, the CPU
# simulation. Pieces that have not landed yet are named, not faked.
set -euo pipefail
build=${1:-build}

if nvidia-smi -L >/dev/null 2>&1; then
  echo "demo: GPU found ($(nvidia-smi -L | head -1))"
  have_gpu=1
else
  echo "demo: no GPU on this machine: CPU simulation"
  have_gpu=0
fi

echo
echo "== zpp configuration taken from this environment (build/bin/zpp-env)"
"$build/bin/zpp-env"

echo
echo "== how zpp groups a simulated 2-node x 4-GPU cluster (build/bin/zpp-topo)"
"$build/bin/zpp-topo" --ranks 8 --local-size 4

echo
echo "== codec error per block size, CPU reference (build/bin/zpp-codec-sweep)"
"$build/bin/zpp-codec-sweep" --count 262144

if [[ -x "$build/bin/zpp-bench" ]]; then
  if ((have_gpu)); then
    exec bash tools/gpu-check.sh "$build"
  fi
  exec "$build/bin/zpp-bench" --demo
fi

echo
echo "demo: zpp-bench (the collective benchmark and the simulated 2-node x 4-GPU cluster) has" \
     "not landed yet: issue 'zpp-bench and the demo'."

#!/usr/bin/env bash
# make demo: on a machine with a GPU (and tools/gpu-check.sh), the benchmark against plain NCCL;
# without one, the CPU simulation of a 2-node x 4-GPU cluster: zpp-bench's table for plain,
# qwZ, qwZ+hpZ, qgZ and all three, error against bit width, the ZeRO-3 step replay of GPT-style
# 125M / 1.3B / 7B layer lists, plots, and one closing line per mode (volume saved, error).
#   tools/demo.sh [BUILD_DIR] [--quick]     --quick: fewer sizes and steps (the ctest variant)
# Outputs go to BUILD_DIR/demo (BUILD_DIR/demo-quick); the sim's exact figures are bytes and
# errors, its times are CPU times of a simulation.
set -euo pipefail
build=${1:-build}
quick=0
[[ ${2:-} == --quick ]] && quick=1
root=$(cd "$(dirname "$0")/.." && pwd)
SECONDS=0

if nvidia-smi -L >/dev/null 2>&1; then
  echo "demo: GPU found ($(nvidia-smi -L | head -1))"
  have_gpu=1
else
  echo "demo: no GPU on this machine: CPU simulation"
  have_gpu=0
fi

if ((have_gpu && !quick)); then
  if [[ -f "$root/tools/gpu-check.sh" ]]; then
    exec bash "$root/tools/gpu-check.sh" "$build"
  fi
  echo "demo: tools/gpu-check.sh is missing: the CPU simulation instead"
fi

bench="$build/bin/zpp-bench"
if [[ ! -x "$bench" ]]; then
  echo "demo: $bench is missing: build first (make)" >&2
  exit 1
fi
if ((quick)); then
  out="$build/demo-quick"
  sweep=(-b 256K -e 1M -f 4 -w 0 -n 1)
  steps=(--step-model 125M --steps 3 --step-elements 262144)
  bits_sizes=(-b 1M -e 1M -w 0 -n 1)
else
  out="$build/demo"
  sweep=(-b 64K -e 4M -f 4 -w 1 -n 3)
  steps=(--step-model 125M,1.3B,7B --steps 4 --step-elements 1048576)
  bits_sizes=(-b 1M -e 4M -f 4 -w 0 -n 1)
fi
mkdir -p "$out"
cluster=(--backend sim --nodes 2 --gpus-per-node 4)

echo
echo "== zpp configuration taken from this environment ($build/bin/zpp-env)"
"$build/bin/zpp-env"

echo
echo "== how zpp groups a simulated 2-node x 4-GPU cluster ($build/bin/zpp-topo)"
"$build/bin/zpp-topo" --ranks 8 --local-size 4

echo
echo "== zpp-bench: plain NCCL, qwZ, qwZ+hpZ, qgZ and all three on the simulated cluster"
echo "   (below ZPP_MIN_BYTES, 1 MiB by default, zpp passes calls through to plain NCCL)"
"$bench" "${cluster[@]}" "${sweep[@]}" --modes plain,qwz,qwz+hpz,qgz,qwz+hpz+qgz \
  "${steps[@]}" --step-configs plain,qwz8,qwz8+hpz,qgz8/4,zero++ \
  --json "$out/zpp-bench.json" | tee "$out/zpp-bench.txt" | sed '/^== summary/,$d'

echo
echo "== error against bit width (qwZ weights int8/int4; qgZ gradients intra/inter bits)"
"$bench" "${cluster[@]}" "${bits_sizes[@]}" --ops allgather,reducescatter \
  --modes qwz8,qwz4,qgz8/8,qgz8/4,qgz4/4 --json "$out/bits.json" | tee "$out/bits.txt"

echo
echo "== plots"
# Debian's python3-matplotlib is for the system's python3, which a pyenv or venv may shadow.
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import matplotlib" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [[ -n "$python" ]]; then
  "$python" "$root/tools/plot_bench.py" --out "$out" "$out/zpp-bench.json" "$out/bits.json"
else
  echo "demo: no plots: python3-matplotlib is missing (tools/install-deps.sh installs it)"
fi

echo
echo "== projection to 48 nodes x 8 GPUs at 100 Gbit/s per node (cost model, NOT a measurement)"
"$bench" --project --nodes 48 --gpus-per-node 8 --inter-gbps 100 --intra-gbps 2400 \
  --step-model 7B

echo
echo "demo: its runs took ${SECONDS} s (the build before them not counted); results in $out"
echo "      (zpp-bench.json, bits.json, *.png)"
sed -n '/^== summary/,$p' "$out/zpp-bench.txt"

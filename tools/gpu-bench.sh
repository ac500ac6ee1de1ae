#!/usr/bin/env bash
# zpp-bench on a GPU machine: 4 ranks as processes sharing the GPU (each its own NCCL_HOSTID,
# so NCCL talks over its socket transport on loopback: a slow "network"), grouped by zpp as
# 2 nodes x 2 (ZPP_LOCAL_SIZE=2). Plain NCCL and each zpp mode in the same run, sizes 8 B to
# 256 MiB. Writes bench/results/zpp_bench_gpu_<gpu>.{json,md} and the plots; tools/gpu-check.sh
# runs it. Usage: tools/gpu-bench.sh [BUILD_DIR] [extra zpp-bench flags...]
#   ZPP_BENCH_MODES  the modes (default: plain NCCL and each technique, zero++)
#   ZPP_BENCH_NAME   the results' file name (default zpp_bench_gpu)
#   ZPP_BENCH_MPS    1: the ranks run as clients of an MPS daemon this script starts and quits
#                    (tools/mps.sh). A daemon that does not start leaves the run time-sliced,
#                    and the table's header says so.
set -uo pipefail
build=$(realpath -m "${1:-build}")
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[[ -z "$gpu" ]] && { echo "gpu-bench: no GPU here" >&2; exit 77; }
tag=$(echo "$gpu" | tr 'A-Z ' 'a-z_' | tr -cd 'a-z0-9_')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=tools/mps.sh
source "$root/tools/mps.sh"
mps_start "$work" "${ZPP_BENCH_MPS:-0}" ZPP_BENCH_MPS
# Quit the daemon before the folder that holds its pipes goes: nothing is left running.
trap 'mps_quit; rm -rf "$work"' EXIT
echo "gpu-bench: $mps"
results=$(realpath -m "${ZPP_RESULTS:-bench/results}")
name=${ZPP_BENCH_NAME:-zpp_bench_gpu}
modes=${ZPP_BENCH_MODES:-plain,qwz8,qwz4,qwz8+hpz,qgz8/4,zero++}
json="$results/${name}_${tag}.json"
table="$results/${name}_${tag}.md"
mkdir -p "$results"

pids=()
for rank in 0 1 2 3; do
  # Never under LD_PRELOAD=libzpp.so: "plain" rows must be the real NCCL. Each mode's communicator
  # reserves ZPP_POOL_MB, four ranks share the GPU: 1 GiB holds a 256M case's staging.
  env -u LD_PRELOAD NCCL_HOSTID="zpp-bench-host$rank" ZPP_LOCAL_SIZE=2 ZPP_POOL_MB=1024 timeout 450 \
    "$build/bin/zpp-bench" --backend nccl --nodes 2 --gpus-per-node 2 --rank "$rank" \
    --dir "$work" -b 8 -e 256M -f 2 -w 2 -n 10 \
    --modes "$modes" --json "$work/out.json" "$@" \
    > "$work/rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
if ((status != 0)); then
  tail -20 "$work"/rank*.log
  exit 1
fi
cp "$work/out.json" "$json"
{
  echo "# zpp-bench on $gpu ($(date -u +%Y-%m-%d))"
  echo
  echo "4 ranks on one GPU, NCCL_HOSTID per rank (NCCL's socket transport), ZPP_LOCAL_SIZE=2;"
  echo "$mps."
  echo "Command: tools/gpu-bench.sh $build $*"
  echo
  echo '```'
  cat "$work/rank0.log"
  echo '```'
} > "$table"
python3 tools/plot_bench.py "$json" --out "$results/${name}_${tag}" 2>/dev/null ||
  echo "gpu-bench: plots skipped (tools/plot_bench.py failed)"
echo "gpu-bench: $table, $json"

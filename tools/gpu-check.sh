#!/usr/bin/env bash
# The whole check on a GPU machine, in one run (make demo runs it when a GPU is there):
#   1. what the machine is (GPU, driver, NCCL, MPS), recorded with the results;
#   2. the codec's GPU tests (ctest -L gpu) and compute-sanitizer memcheck on them;
#   3. the plugin: 4 ranks as separate processes sharing the GPU (each its own NCCL_HOSTID), as
#      2 nodes x 2 (ZPP_LOCAL_SIZE=2), for every mode: zpp-collective-check compares the
#      intercepted calls with plain NCCL and with the CPU simulation (see its header);
#   4. compute-sanitizer memcheck and racecheck on one small run of each mode;
#   5. the codec's throughput against a device-to-device copy.
#   6. FSDP2 four ways (plain, zpp-run --qwz, --qwz --hpz, --preset zero++);
#   7. zpp-bench against plain NCCL (tools/gpu-bench.sh).
# Results: bench/results/plugin_gpu_<gpu>.md (and codec_gpu_*, fsdp_loss_*, zpp_bench_gpu_*);
# exit status 0 only when every part passed. The whole check may not fit one 10-minute call:
#   tools/gpu-check.sh BUILD [codec] [plugin] [sanitizer] [fsdp] [bench]   runs only those parts.
set -uo pipefail
build=${1:-build}
shift || true
parts=" ${*:-codec plugin sanitizer fsdp bench} "
want() { [[ "$parts" == *" $1 "* ]]; }
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [[ -z "$gpu" ]]; then
  echo "gpu-check: no GPU here (nvidia-smi found none)" >&2
  exit 77
fi
tag=$(echo "$gpu" | tr 'A-Z ' 'a-z_' | tr -cd 'a-z0-9_')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
nccl_lib=$(ldconfig -p 2>/dev/null | awk '/libnccl.so.2/{print $NF; exit}')
[[ -z "$nccl_lib" && -e /usr/local/cuda/lib/libnccl.so.2 ]] && nccl_lib=/usr/local/cuda/lib/libnccl.so.2
nccl_version=$(strings "$nccl_lib" 2>/dev/null | grep -m1 -oE 'NCCL version [0-9.+a-z]+' || echo unknown)
mps=$(pgrep -f nvidia-cuda-mps-control >/dev/null && echo "running" || echo "not running")
report="bench/results/plugin_gpu_${tag}.md"
mkdir -p bench/results
export LD_LIBRARY_PATH="$root/$build/lib:$(dirname "${nccl_lib:-/usr/local/cuda/lib/x}"):${LD_LIBRARY_PATH:-}"

{
  echo "# zpp plugin on a GPU: $gpu"
  echo
  echo "- date: $(date -u +%Y-%m-%d), host: $(hostname), driver $driver, $nccl_version ($nccl_lib), MPS $mps"
  echo "- ranks: 4 processes on the one GPU, NCCL_HOSTID per rank, ZPP_LOCAL_SIZE=2 (2 nodes x 2)"
  echo "- command: tools/gpu-check.sh $build"
  echo
} > "$report"

if want codec; then
echo "== codec GPU tests"
if (cd "$build" && ctest -L gpu --output-on-failure --timeout 600 > "$work/ctest_gpu.log" 2>&1); then
  echo "- ctest -L gpu: $(grep -E 'tests passed' "$work/ctest_gpu.log")" >> "$report"
else
  failures=$((failures + 1))
  echo "- ctest -L gpu: FAILED ($(grep -E 'tests passed' "$work/ctest_gpu.log"))" >> "$report"
  tail -30 "$work/ctest_gpu.log"
fi
if command -v compute-sanitizer >/dev/null; then
  if compute-sanitizer --tool memcheck --error-exitcode 1 "$build/bin/zpp_codec_gpu_tests" \
      > "$work/memcheck_codec.log" 2>&1; then
    echo "- compute-sanitizer memcheck, zpp_codec_gpu_tests: clean" >> "$report"
  else
    failures=$((failures + 1))
    echo "- compute-sanitizer memcheck, zpp_codec_gpu_tests: ERRORS" >> "$report"
    tail -20 "$work/memcheck_codec.log"
  fi
fi
fi

# run_mode NAME SANITIZER COUNTS VARS...: 4 ranks of zpp-collective-check, zpp preloaded unless
# NAME is nccl. Appends the ranks' JSON lines to $work/NAME.jsonl.
run_mode() {
  local name=$1 sanitizer=$2 counts=$3
  shift 3
  local dir="$work/$name.$sanitizer"
  mkdir -p "$dir"
  local pids=()
  for rank in 0 1 2 3; do
    local env_vars=(NCCL_HOSTID="zpp-check-host$rank" ZPP_LOCAL_SIZE=2 "$@")
    [[ "$name" != nccl ]] && env_vars+=(LD_PRELOAD="$root/$build/lib/libzpp.so")
    local prefix=()
    [[ "$sanitizer" != none ]] && prefix=(compute-sanitizer --tool "$sanitizer" --error-exitcode 3)
    env "${env_vars[@]}" timeout 900 "${prefix[@]}" "$build/bin/zpp-collective-check" \
      --rank "$rank" --ranks 4 --local-size 2 --dir "$dir" --out "$dir/rank$rank.jsonl" \
      --counts $counts --replays $([[ "$sanitizer" == none ]] && echo 100 || echo 2) \
      > "$dir/rank$rank.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  cat "$dir"/rank*.jsonl 2>/dev/null | sed "s/^{/{\"mode\":\"$name\",/" >> "$work/$name.jsonl"
  if ((status != 0)); then
    tail -5 "$dir"/rank*.log
  fi
  return $status
}

declare -A modes=(
  [nccl]=""
  [qwz8]="ZPP_QWZ=1 ZPP_QWZ_BITS=8"
  [qwz4]="ZPP_QWZ=1 ZPP_QWZ_BITS=4"
  [hpz]="ZPP_HPZ=1"
  [qwz8_hpz]="ZPP_QWZ=1 ZPP_HPZ=1"
  [qgz]="ZPP_QGZ=1"
  [zero++]="ZPP_QWZ=1 ZPP_HPZ=1 ZPP_QGZ=1 ZPP_QGZ_BITS_INTRA=8 ZPP_QGZ_BITS_INTER=4"
)
order=(nccl qwz8 qwz4 hpz qwz8_hpz qgz zero++)

if want plugin; then
echo "== plugin: every mode against plain NCCL and the simulation"
echo "| mode | checks | passed | zpp calls | worst rel. L2 | notes |" >> "$report"
echo "|---|---:|---:|---:|---:|---|" >> "$report"
for mode in "${order[@]}"; do
  # shellcheck disable=SC2086
  if run_mode "$mode" none "1000 262144 1048613" ${modes[$mode]}; then note=""; else
    note="a rank failed"; failures=$((failures + 1)); fi
  python3 - "$work/$mode.jsonl" "$mode" "$note" >> "$report" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if sys.argv[1] else []
ok = sum(r["ok"] for r in rows)
calls = sum(r.get("zpp_calls", 0) for r in rows)
worst = max((r.get("rel_l2_err", 0) for r in rows), default=0)
bad = [f'{r.get("case")}/{r.get("op","")}/{r.get("dtype","")}/{r.get("count","")}' for r in rows if not r["ok"]]
note = "; ".join(filter(None, [sys.argv[3], ("failed: " + ", ".join(bad[:6])) if bad else ""]))
print(f"| {sys.argv[2]} | {len(rows)} | {ok} | {calls} | {worst:.4g} | {note} |")
PY
done
fi

if want sanitizer && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer on one small run of each mode"
  echo >> "$report"
  echo "| mode | memcheck | racecheck |" >> "$report"
  echo "|---|---|---|" >> "$report"
  for mode in "${order[@]}"; do
    line="| $mode |"
    for tool in memcheck racecheck; do
      # shellcheck disable=SC2086
      if run_mode "$mode" "$tool" "262144" ${modes[$mode]} > /dev/null 2>&1; then line+=" clean |"; else
        line+=" ERRORS |"; failures=$((failures + 1)); fi
    done
    echo "$line" >> "$report"
  done
fi

echo "== an unmodified framework: FSDP2, 4 ranks, 100 steps, four ways"
if ! want fsdp; then
  :
elif python3 -c "import torch.distributed.fsdp" 2>/dev/null; then
  echo >> "$report"
  echo "FSDP2 (bench/fsdp/train_fsdp2.py, ZPP_LOCAL_SIZE=2, ZPP_MIN_BYTES=65536):" >> "$report"
  echo >> "$report"
  runs=()
  for way in "nccl:" "qwz:--qwz" "qwz_hpz:--qwz --hpz" "zero++:--preset zero++"; do
    name=${way%%:*}
    flags=${way#*:}
    launcher=()
    # shellcheck disable=SC2206
    [[ -n "$flags" ]] && launcher=(tools/zpp-run --lib "$build/lib/libzpp.so" --stats $flags --)
    csv="bench/results/fsdp_loss_${tag}_${name}.csv"
    if env ZPP_LOCAL_SIZE=2 ZPP_MIN_BYTES=65536 timeout 900 "${launcher[@]}" \
        python3 -m torch.distributed.run --nproc-per-node 4 bench/fsdp/train_fsdp2.py \
        --one-gpu --csv "$csv" > "$work/fsdp_$name.log" 2>&1; then
      runs+=("$name=$csv")
      grep -E "final loss|step epoch|qwZ|hpZ|qgZ|pass-through reasons" "$work/fsdp_$name.log" \
        | sed "s/^/    $name: /" >> "$report"
    else
      failures=$((failures + 1))
      echo "- $name: FAILED" >> "$report"
      tail -20 "$work/fsdp_$name.log"
    fi
  done
  echo >> "$report"
  if ((${#runs[@]} > 0)) && [[ "${runs[0]}" == nccl=* ]]; then
    python3 bench/fsdp/plot_losses.py "bench/results/fsdp_loss_${tag}.png" "${runs[@]}" >> "$report"
  fi
else
  echo "- FSDP2: torch is not installed here" >> "$report"
fi

if want bench; then
  echo "== zpp-bench against plain NCCL"
  if bash tools/gpu-bench.sh "$build"; then
    echo "- zpp-bench: bench/results/zpp_bench_gpu_${tag}.md" >> "$report"
  else
    failures=$((failures + 1))
    echo "- zpp-bench: FAILED" >> "$report"
  fi
fi

echo "== codec throughput"
if want codec && [[ -x "$build/bin/zpp-codec-gpu-bench" ]]; then
  "$build/bin/zpp-codec-gpu-bench" --out "bench/results/codec_gpu_${tag}.md" || failures=$((failures + 1))
fi

echo >> "$report"
echo "gpu-check: $failures part(s) failed" | tee -a "$report"
echo "report: $report"
((failures == 0))

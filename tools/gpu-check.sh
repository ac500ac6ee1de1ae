#!/usr/bin/env bash
# The whole check on a GPU machine, one part per device call (a call may run 600 s at most, so
# every command below has its own time limit and every part ends under 540 s):
#
#   part         what                                                        budget (unmeasured)
#   probe        the machine (GPU, driver, NCCL, MPS) and whether CUDA can use it       20 s
#   codec        ctest -L gpu (codec kernels bitwise = CPU reference)                  300 s
#   codec-mem    compute-sanitizer memcheck on the codec GPU tests                     400 s
#   plugin       4 ranks (processes on the one GPU, own NCCL_HOSTID, 2 nodes x 2) per   9 x 55 s
#                mode: zpp-collective-check against plain NCCL and the CPU simulation, and
#                a communicator's life (simulate-end, restart loop, revoke, shrink-abort)
#   memcheck     compute-sanitizer memcheck on one small run of each mode,         9 x 150 s
#                without the communicator's life (--no-lifecycle)
#   racecheck    compute-sanitizer racecheck, likewise                                 9 x 150 s
#                (measured on the H100: racecheck 108 s for 3 modes; memcheck outlasted
#                40 s a mode: name 3 modes a call with ZPP_CHECK_MODES)
#   fsdp         FSDP2 (bench/fsdp/train_fsdp2.py) five ways, the last with weight     5 x 100 s
#                deltas and error feedback (their CUDA kernels); ZPP_STATS must show
#                that each zpp way took all-gathers (and reduce-scatters with qgZ)
#   hpz-loops    FSDP2's stochastic-depth and EMA-swap loops over plain NCCL (no        2 x 90 s
#                zpp) and under zpp-run --hpz (tests/torch/hpz_loops_gpu.py; 4 ranks,
#                2 nodes x 2): per-step losses and final shards bitwise equal, hpZ hits on
#                every rank (zppGetStats), no verification failure or skipped step
#                (expected about 2 minutes in all)
#   ddp          DDP (train_fsdp2.py --parallel ddp) over NCCL, then with the           5 x 100 s
#                compressed all-reduce at 8 bits and at 4 with error feedback; HSDP
#                (--parallel hsdp, 2 x 2 mesh) over NCCL and with qAR at 8 bits: qAR must
#                take the all-reduces and every rank's parameter digest must agree with
#                its replicas' every step
#   deepspeed    DeepSpeed ZeRO-3 (bench/deepspeed/train_zero3.py) over NCCL, and     4 x 120 s
#                plain / hpz / zero++ through libzpp.so (bench/convergence/run.py --check)
#   deepspeed-own  DeepSpeed's own hpZ and full ZeRO++ (its quantizer ops are built     2 x 250 s
#                on first use), no zpp: the anchor rows
#   bench        zpp-bench against plain NCCL (tools/gpu-bench.sh)                     500 s
#   allreduce-bench  the all-reduce against plain NCCL in all_reduce_perf's form       400 s
#                (zpp-bench --ops allreduce: plain, qar8, qar4+ef; busbw 2(n-1)/n)
#   tune         ZPP_TUNE=auto against plain NCCL and zero++ (zpp-bench mode auto),    500 s
#                with the agreed figures and the decision table in the log (TUNE)
#   codec-bench  codec throughput against a device-to-device copy                      300 s
#   speed        issue 45's run, under 8 minutes: codec throughput (1 GiB rows, the    460 s
#                copy beside them); under MPS, zpp-bench all-gather and reduce-scatter
#                1 MiB to 256 MiB for plain, qwz4, zero++ and auto (its trials in the log,
#                TUNE), the all-reduce for plain, qar8 and qar4+ef, and plain against the
#                same calls through zpp's hooks (passthrough); whether root may make
#                network namespaces and tc qdiscs here (the shaped runs are not built)
#
# DeepSpeed is not in the GPU machine's image: run tools/gpu-wheels.sh here first and carry
# .whl/ (the parts install it into a scratch folder there).
#
# Usage: tools/gpu-check.sh [--dry-run] [BUILD] [PART...]   (BUILD: default ./build; no PART: all,
#        in the order above)
#        tools/gpu-check.sh --help   (this text)
#   ZPP_CHECK_MPS=1  the ranks as clients of an MPS daemon (not with the sanitizer parts)
#   --dry-run    print every part's commands instead of running them (needs no GPU)
#   ZPP_RESULTS  where reports go (default bench/results; on the device machine, $OUT)
# Exit status 0 only when every part run passed; 77 when there is no GPU.
set -uo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  # The header above, without its comment marks.
  sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi
dry=0
if [[ "${1:-}" == --dry-run ]]; then
  dry=1
  shift
fi
all_parts="probe codec codec-mem plugin memcheck racecheck fsdp hpz-loops ddp deepspeed
  deepspeed-own bench allreduce-bench tune codec-bench speed"
all_parts=$(echo $all_parts)
# An absolute or relative BUILD both work: everything below uses its real path. A first argument
# that names a part leaves BUILD at its default (`gpu-check.sh --dry-run speed`).
if [[ " $all_parts " == *" ${1:-build} "* ]]; then
  build=$(realpath -m build)
else
  build=$(realpath -m "${1:-build}")
  shift || true
fi
parts=" ${*:-$all_parts} "
for part in $parts; do
  [[ " $all_parts " == *" $part "* ]] || { echo "gpu-check: unknown part '$part'" >&2; exit 2; }
done
want() { [[ "$parts" == *" $1 "* ]]; }
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
results=$(realpath -m "${ZPP_RESULTS:-bench/results}")
# ZPP_CHECK_LOGS: a folder that keeps every rank's and part's log (the device machine returns
# only what is left under $OUT, and a part cut off by a time limit leaves no trap to copy them).
if [[ -n "${ZPP_CHECK_LOGS:-}" ]]; then
  work=$(realpath -m "$ZPP_CHECK_LOGS")
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
# ZPP_CHECK_RANK_TIMEOUT: seconds one rank of a plugin run may take (default 55).
rank_timeout=${ZPP_CHECK_RANK_TIMEOUT:-55}
# ZPP_CHECK_SANITIZER_TIMEOUT: the same under compute-sanitizer (default 150): on the H100
# (2026-11-27) memcheck's 4 ranks, time-sliced, had not finished one mode's small run in 40 s.
sanitizer_timeout=${ZPP_CHECK_SANITIZER_TIMEOUT:-150}
failures=0

# run CMD...: runs it, or with --dry-run prints it (on fd 3, the script's own output, so that
# a redirection of the command does not swallow the line).
exec 3>&1
run() {
  if ((dry)); then
    printf '  %q' "$@" >&3
    echo >&3
    return 0
  fi
  "$@"
}

if ((dry)); then
  gpu="(dry run)" tag=dry_run driver=? nccl_lib=? nccl_version=? mps=?
else
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  if [[ -z "$gpu" ]]; then
    echo "gpu-check: no GPU here (nvidia-smi found none)" >&2
    exit 77
  fi
  tag=$(echo "$gpu" | tr 'A-Z ' 'a-z_' | tr -cd 'a-z0-9_')
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
  # The NCCL the frameworks load (PyTorch's wheel, nvidia-nccl-*) first, so that the plugin part
  # and the training parts test one library; then the system's. ZPP_CHECK_NCCL names another.
  # (The first run used the image's system 2.28.3, which lacks ncclCommRevoke, while PyTorch
  # brought 2.28.9.)
  nccl_lib=${ZPP_CHECK_NCCL:-}
  if [[ -z "$nccl_lib" ]]; then
    nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
    [[ -e "$nccl_lib" ]] || nccl_lib=""
  fi
  [[ -z "$nccl_lib" ]] && nccl_lib=$(ldconfig -p 2>/dev/null | awk '/libnccl.so.2/{print $NF; exit}')
  [[ -z "$nccl_lib" && -e /usr/local/cuda/lib/libnccl.so.2 ]] && nccl_lib=/usr/local/cuda/lib/libnccl.so.2
  # Not `strings | grep -m1 || echo`: grep stopping early fails the pipeline (pipefail) and
  # would append "unknown" to a version it found.
  nccl_version=$(strings "$nccl_lib" 2>/dev/null | grep -oE 'NCCL version [0-9.+a-z]+' | head -1)
  nccl_version=${nccl_version:-NCCL version unknown}
  mps=$(pgrep -f nvidia-cuda-mps-control >/dev/null && echo "running" || echo "not running")
fi
libzpp="$build/lib/libzpp.so"
# The training text: a staged build carries a copy where the machine has no fortunes package.
if [[ ! -d /usr/share/games/fortunes && -d "$build/corpus" ]]; then
  export ZPP_CORPUS_DIR="$build/corpus"
fi
report="$results/plugin_gpu_${tag}.md"
((dry)) && report=/dev/null  # a dry run writes nothing
((dry)) || mkdir -p "$results"
export LD_LIBRARY_PATH="$build/lib:$(dirname "${nccl_lib:-/usr/local/cuda/lib/x}"):${LD_LIBRARY_PATH:-}"
if ((dry == 0)) && [[ ! -f "$libzpp" ]]; then
  echo "gpu-check: $libzpp does not exist: build first (make), or pass the build folder" >&2
  exit 2
fi

section() { echo "== $1"; ((dry)) || echo -e "\n## $1 ($(date -u +%H:%M:%S))\n" >> "$report"; }
note() { ((dry)) || echo "$*" >> "$report"; }

if [[ ! -f "$report" ]] && ((dry == 0)); then
  {
    echo "# zpp on a GPU: $gpu"
    echo
    echo "- date: $(date -u +%Y-%m-%d), host: $(hostname), driver $driver, $nccl_version ($nccl_lib), MPS $mps"
    echo "- ranks: 4 processes on the one GPU, NCCL_HOSTID per rank, ZPP_LOCAL_SIZE=2 (2 nodes x 2)"
  } > "$report"
fi

# ZPP_CHECK_MPS=1: every part's ranks run as clients of an MPS daemon this script starts and
# quits (tools/mps.sh): calls take 0.1 ms instead of 9 and a part its fraction of the time. The
# sanitizer parts stay out of it (compute-sanitizer is not known to work under MPS here):
# run them in a call of their own.
if [[ "${ZPP_CHECK_MPS:-0}" == 1 ]]; then
  for part in codec-mem memcheck racecheck; do
    if want "$part"; then
      echo "gpu-check: $part runs without MPS: leave ZPP_CHECK_MPS out of its call" >&2
      exit 2
    fi
  done
  if ((dry)); then
    echo "  (an MPS daemon of this run's own: ZPP_CHECK_MPS=1)"
  else
    # shellcheck source=tools/mps.sh
    source "$root/tools/mps.sh"
    mps_start "$work" 1 ZPP_CHECK_MPS
    # Quit it before its pipes' folder goes, and keep ZPP_CHECK_LOGS' folder as before.
    if [[ -n "${ZPP_CHECK_LOGS:-}" ]]; then trap 'mps_quit' EXIT
    else trap 'mps_quit; rm -rf "$work"' EXIT; fi
    note "- $mps"
    echo "gpu-check: $mps"
  fi
fi

if want probe; then
  section "probe"
  run nvidia-smi
  note "- parts run: $parts"
fi

# A GPU that CUDA cannot use (say, a driver older than CUDA 13 needs) makes every GPU test skip:
# that is a failure here, not a pass.
if want codec; then
  section "codec GPU tests (zpp_codec_gpu_tests: kernels bitwise = CPU reference)"
  # The test binary itself, not ctest: a staged build (tools/gpu-stage.sh) has no ctest files.
  command=(timeout 300 "$build/bin/zpp_codec_gpu_tests" --gtest_brief=1)
  if ((dry)); then
    run "${command[@]}"
  else
    "${command[@]}" > "$work/codec_gpu.log" 2>&1
    status=$?
    summary=$(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$work/codec_gpu.log" | tr '\n' ' ')
    skipped=$(grep -m1 -E '^\[  SKIPPED \] [0-9]+ test' "$work/codec_gpu.log")
    if ((status != 0)); then
      failures=$((failures + 1)); note "- FAILED (exit $status): $summary"
      grep -E '^\[  FAILED  \]' "$work/codec_gpu.log" | head -40 | sed 's/^/    /' >> "$report"
      tail -30 "$work/codec_gpu.log"
    elif [[ -n "$skipped" ]]; then
      failures=$((failures + 1))
      why=$(grep -m1 -iE 'skip|driver' "$work/codec_gpu.log")
      note "- FAILED: $skipped on a machine with a GPU (driver $driver): $why"
    else
      note "- $summary"
    fi
  fi
fi

if want codec-mem; then
  section "compute-sanitizer memcheck, codec GPU tests"
  if run timeout 380 compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$build/bin/zpp_codec_gpu_tests" > "$work/memcheck_codec.log" 2>&1; then
    note "- clean"
  else
    failures=$((failures + 1)); note "- ERRORS (or timed out)"; tail -20 "$work/memcheck_codec.log"
  fi
fi

# run_mode NAME SANITIZER COUNTS VARS...: 4 ranks of zpp-collective-check, zpp preloaded unless
# NAME is nccl, 60 s at most. Appends the ranks' JSON lines to $work/NAME.jsonl.
run_mode() {
  local name=$1 sanitizer=$2 counts=$3
  shift 3
  local dir="$work/$name.$sanitizer"
  mkdir -p "$dir"
  local pids=() status=0
  for rank in 0 1 2 3; do
    local env_vars=(NCCL_HOSTID="zpp-check-host$rank" ZPP_LOCAL_SIZE=2 ZPP_STATS=1 "$@")
    [[ "$name" != nccl ]] && env_vars+=(LD_PRELOAD="$libzpp")
    local prefix=()
    [[ "$sanitizer" != none ]] && prefix=(compute-sanitizer --tool "$sanitizer" --error-exitcode 3)
    # NCCL's init asks cudaFuncGetAttributes of kernels its build lacks for this GPU and clears
    # the error (enqueue.cc, ncclInitKernelsForDevice): memcheck counted 8 such API errors per
    # rank. zpp checks and logs every CUDA call it makes itself, and a failed one fails the run.
    [[ "$sanitizer" == memcheck ]] && prefix+=(--report-api-errors no)
    local limit=$rank_timeout
    [[ "$sanitizer" != none ]] && limit=$sanitizer_timeout
    local command=(env "${env_vars[@]}" timeout "$limit" "${prefix[@]}" "$build/bin/zpp-collective-check"
      --rank "$rank" --ranks 4 --local-size 2 --dir "$dir" --out "$dir/rank$rank.jsonl"
      --counts $counts --replays "$([[ "$sanitizer" == none ]] && echo 100 || echo 2)")
    # Under a sanitizer the communicator's life (7 more communicators, each minutes to set up
    # there) is left to the plugin part: the sanitizers are for the kernels' accesses.
    [[ "$sanitizer" != none ]] && command+=(--no-lifecycle)
    if ((dry)); then
      run "${command[@]}"
    else
      "${command[@]}" > "$dir/rank$rank.log" 2>&1 &
      pids+=($!)
    fi
  done
  # 124: a rank ran out of time (timeout's status), which a report must tell from a finding.
  for pid in "${pids[@]}"; do
    wait "$pid"
    local rc=$?
    ((rc == 124)) && status=124
    ((rc != 0 && status == 0)) && status=1
  done
  ((dry)) && return 0
  cat "$dir"/rank*.jsonl 2>/dev/null | sed "s/^{/{\"mode\":\"$name\",/" >> "$work/$name.jsonl"
  ((status != 0)) && tail -n 5 "$dir"/rank*.log
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
  [qar8]="ZPP_QAR=1 ZPP_QAR_BITS=8"
  [qar4_ef]="ZPP_QAR=1 ZPP_QAR_BITS=4 ZPP_QAR_EF=1"
)
order=(nccl qwz8 qwz4 hpz qwz8_hpz qgz zero++ qar8 qar4_ef)
# ZPP_CHECK_MODES: run only these of the plugin and sanitizer parts' modes (a rerun of one).
if [[ -n "${ZPP_CHECK_MODES:-}" ]]; then
  for mode in $ZPP_CHECK_MODES; do
    [[ -v "modes[$mode]" ]] || { echo "gpu-check: unknown mode '$mode'" >&2; exit 2; }
  done
  read -r -a order <<< "$ZPP_CHECK_MODES"
fi

if want plugin; then
  section "plugin: every mode against plain NCCL and the simulation"
  note "| mode | checks | passed | zpp calls | worst rel. L2 | notes |"
  note "|---|---:|---:|---:|---:|---|"
  for mode in "${order[@]}"; do
    # shellcheck disable=SC2086
    if run_mode "$mode" none "1000 262144 1048613" ${modes[$mode]}; then note_text=""; else
      note_text="a rank failed or timed out"; failures=$((failures + 1)); fi
    ((dry)) && continue
    python3 - "$work/$mode.jsonl" "$mode" "$note_text" >> "$report" <<'PY'
import json, os, sys
path = sys.argv[1]
rows = [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
# A check whose entry points this NCCL lacks ran nothing: counted apart, never as passed.
skipped = [r for r in rows if r.get("not_run")]
ok = sum(r["ok"] for r in rows if not r.get("not_run"))
calls = sum(r.get("zpp_calls", 0) for r in rows)
worst = max((r.get("rel_l2_err", 0) for r in rows), default=0)
bad = [f'{r.get("case")}/{r.get("op","")}/{r.get("dtype","")}/{r.get("count","")}' for r in rows if not r["ok"]]
why = sorted({f'{r.get("case")}: {r["not_run"].strip("; ")}' for r in skipped})
note = "; ".join(filter(None, [sys.argv[3], ("failed: " + ", ".join(bad[:6])) if bad else "",
                               (f"{len(skipped)} not run ({'; '.join(why)})") if skipped else ""]))
print(f"| {sys.argv[2]} | {len(rows) - len(skipped)} | {ok} | {calls} | {worst:.4g} | {note} |")
PY
    if [[ "$mode" != nccl ]] && ! grep -q '"zpp_calls": *[1-9]' "$work/$mode.jsonl" 2>/dev/null; then
      failures=$((failures + 1)); note "- $mode: zpp took no call (is libzpp.so preloaded?)"
    fi
  done
fi

for tool in memcheck racecheck; do
  want "$tool" || continue
  section "compute-sanitizer $tool on one small run of each mode"
  note "| mode | $tool |"
  note "|---|---|"
  for mode in "${order[@]}"; do
    # shellcheck disable=SC2086
    run_mode "$mode" "$tool" "262144" ${modes[$mode]} > /dev/null 2>&1
    status=$?
    # The first finding and the frame under it: enough to tell NCCL's from zpp's kernels.
    first=$(grep -m1 -A1 -E 'Invalid|Program hit|Race|Leaked' "$work/$mode.$tool"/rank*.log 2>/dev/null |
      sed 's/=========//g; s/  */ /g' | tr '\n' ' ' | cut -c1-300)
    # The check writes each result as it goes: how far the ranks got.
    done_rows=$(cat "$work/$mode.$tool"/rank*.jsonl 2>/dev/null | wc -l)
    if ((status == 0)); then
      note "| $mode | clean ($done_rows checks) |"
    elif ((status == 124)); then
      note "| $mode | TIMED OUT after ${sanitizer_timeout} s a rank (ZPP_CHECK_SANITIZER_TIMEOUT), $done_rows checks done; ${first:-no finding before it} |"
      failures=$((failures + 1))
    else
      note "| $mode | ERRORS ($done_rows checks done): ${first:-none named in the logs (rank*.log under ZPP_CHECK_LOGS)} |"
      failures=$((failures + 1))
    fi
  done
done

if want ddp; then
  section "unmodified frameworks: DDP and HSDP, 4 ranks, plain NCCL and the compressed all-reduce"
  if ((dry == 0)) && ! python3 -c "import torch.distributed" 2>/dev/null; then
    failures=$((failures + 1)); note "- FAILED: torch is not installed here"
  else
    # HSDP's replicate groups ({0, 2}, {1, 3}) are sub-communicators: ZPP_LOCAL_SIZE places
    # them by each process's RANK, one rank per simulated node (the flat qAR plan).
    for way in "ddp:nccl::" "ddp:qar8:--qar=8:qAR" "ddp:qar4_ef:--qar=4:qAR:ZPP_QAR_EF=1" \
        "hsdp:nccl::" "hsdp:qar8:--qar=8:qAR"; do
      IFS=: read -r parallel name flags takes extra <<< "$way"
      name="${parallel}_$name"
      # shellcheck disable=SC2206
      extra=($extra)
      launcher=()
      # shellcheck disable=SC2206
      [[ -n "$flags" ]] && launcher=(tools/zpp-run --lib "$libzpp" --stats --per-rank $flags --)
      log="$work/$name.log"
      stats="$work/${name}_stats"
      if run env ZPP_LOCAL_SIZE=2 ZPP_MIN_BYTES=0 "${extra[@]}" timeout 100 "${launcher[@]}" \
          python3 -m torch.distributed.run --nproc-per-node 4 bench/fsdp/train_fsdp2.py \
          --parallel "$parallel" --one-gpu --steps 50 --csv "$results/${parallel}_loss_${tag}_${name#*_}.csv" \
          --stats-dir "$stats" > "$log" 2>&1; then
        ((dry)) || grep -E "final loss" "$log" | sed "s/^/    $name: /" >> "$report"
        if [[ -n "$takes" ]] && ! run python3 tools/zpp_stats_check.py --ranks 4 --require "$takes" "$log" \
            >> "$report" 2>&1; then
          failures=$((failures + 1)); note "- $name: zpp did not take the all-reduces"
        fi
        # Replicas: the parameter digests of the ranks holding the same parameters (all of them
        # under DDP, the same shard, rank % 2, under HSDP) equal at every step (stats files).
        if [[ -n "$takes" ]] && ((dry == 0)) && ! python3 - "$stats" "$parallel" >> "$report" 2>&1 <<'PY'
import json, sys
ranks = [json.load(open(f"{sys.argv[1]}/stats{r}.json"))["steps"] for r in range(4)]
groups = [[0, 2], [1, 3]] if sys.argv[2] == "hsdp" else [[0, 1, 2, 3]]
bad = [s for s in range(len(ranks[0]))
       if any(len({ranks[r][s]["param_digest"] for r in group}) != 1 for group in groups)]
print(f"    replicas identical at {len(ranks[0]) - len(bad)} of {len(ranks[0])} steps")
sys.exit(1 if bad else 0)
PY
        then
          failures=$((failures + 1)); note "- $name: the replicas' parameters differed"
        fi
      else
        failures=$((failures + 1)); note "- $name: FAILED or timed out"; tail -20 "$log"
      fi
    done
  fi
fi

if want fsdp; then
  section "an unmodified framework: FSDP2, 4 ranks, four ways"
  if ((dry == 0)) && ! python3 -c "import torch.distributed.fsdp" 2>/dev/null; then
    failures=$((failures + 1)); note "- FAILED: torch is not installed here"
  else
    runs=()
    for way in "nccl::" "qwz:--qwz:qwZ" "qwz_hpz:--qwz --hpz:qwZ|hpZ" "zero++:--preset zero++:qwZ|hpZ,qgZ" \
        "delta4_ef2:--preset zero++:qwZ|hpZ,qgZ:ZPP_QWZ_DELTA=1 ZPP_QGZ_EF=1 ZPP_QGZ_BITS_INTER=2"; do
      IFS=: read -r name flags takes extra <<< "$way"
      # shellcheck disable=SC2206
      extra=($extra)
      launcher=()
      # shellcheck disable=SC2206
      [[ -n "$flags" ]] && launcher=(tools/zpp-run --lib "$libzpp" --stats --per-rank $flags --)
      csv="$results/fsdp_loss_${tag}_${name}.csv"
      log="$work/fsdp_$name.log"
      if run env ZPP_LOCAL_SIZE=2 ZPP_MIN_BYTES=65536 "${extra[@]}" timeout 100 "${launcher[@]}" \
          python3 -m torch.distributed.run --nproc-per-node 4 bench/fsdp/train_fsdp2.py \
          --one-gpu --csv "$csv" > "$log" 2>&1; then
        runs+=("$name=$csv")
        ((dry)) || grep -E "final loss" "$log" | sed "s/^/    $name: /" >> "$report"
        # Exit code 0 is not enough: zpp must have taken the calls (on blocking and
        # non-blocking communicators alike).
        if [[ -n "$takes" ]] && ! run python3 tools/zpp_stats_check.py --ranks 4 --require "$takes" "$log" \
            >> "$report" 2>&1; then
          failures=$((failures + 1)); note "- $name: zpp did not take the calls it should"
        fi
      else
        failures=$((failures + 1)); note "- $name: FAILED or timed out"; tail -20 "$log"
      fi
    done
    if ((dry == 0 && ${#runs[@]} > 0)) && [[ "${runs[0]}" == nccl=* ]]; then
      python3 bench/fsdp/plot_losses.py "$results/fsdp_loss_${tag}.png" "${runs[@]}" >> "$report"
    fi
  fi
fi

# hpZ pairs each backward all-gather with its own step's forward fill, the pass told by the
# calling thread (the autograd engine's pt_autograd_<device> threads run a CUDA backward): two
# loops that change what a step gathers, against plain NCCL. The driver starts the 4 ranks
# itself (tests/torch/launch.py; each its own NCCL_HOSTID), each mode's job at most 90 s.
if want hpz-loops; then
  section "hpZ under FSDP2's training loops (stochastic depth, EMA swap): plain NCCL against zpp-run --hpz"
  if ((dry == 0)) && ! python3 -c "import torch.distributed.fsdp" 2>/dev/null; then
    failures=$((failures + 1)); note "- FAILED: torch is not installed here"
  else
    log="$work/hpz_loops.log"
    run timeout 200 python3 tests/torch/hpz_loops_gpu.py "$build" --loops stochastic_depth,ema_eval \
      --timeout 90 --keep "$work/hpz_loops" --json "$results/hpz_loops_${tag}.json" > "$log" 2>&1
    status=$?
    if ((dry == 0)); then
      # The driver's table, its failures (first lines) and its last line.
      grep -E '^\|' "$log" | sed 's/^/    /' >> "$report"
      grep -E '^FAIL ' "$log" | cut -c1-400 | sed 's/^/    /' >> "$report"
      last=$(grep -E '^hpz_loops_gpu: ' "$log" | tail -1)
      if ((status == 0)); then
        note "- $last"
      else
        failures=$((failures + 1))
        case $status in
          124) note "- FAILED: timed out after 200 s (each job's ranks: rank*.log under ZPP_CHECK_LOGS)" ;;
          77) note "- FAILED: ${last:-the driver found no GPU} (exit 77)" ;;
          *) note "- FAILED (exit $status): ${last:-no summary line: the end of the log is in the output (hpz_loops.log under ZPP_CHECK_LOGS)}" ;;
        esac
        tail -30 "$log"
      fi
    fi
  fi
fi

# DeepSpeed from the carried wheels (tools/gpu-wheels.sh), into a scratch folder.
deepspeed_ready() {
  ((dry)) && return 0
  if [[ -d "$root/.whl" ]] && ! python3 -c "import deepspeed" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$work/site" "$root"/.whl/*.whl > "$work/wheels.log" 2>&1 || tail -5 "$work/wheels.log"
    export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  python3 -c "import deepspeed" 2>/dev/null && return 0
  failures=$((failures + 1))
  note "- FAILED: no deepspeed here: run tools/gpu-wheels.sh on the build machine, carry .whl/"
  return 1
}

# deepspeed_run OUT MODES [run.py flags...]: the DeepSpeed harness on the one GPU.
deepspeed_run() {
  local out=$1 modes=$2
  shift 2
  if run timeout 540 python3 bench/convergence/run.py --device cuda --python python3 \
      --build "$build" --frameworks deepspeed --steps 30 --modes "$modes" --timeout 250 \
      --out "$out" "$@" > "$work/deepspeed.log" 2>&1; then
    ((dry)) || sed 's/^/    /' "$out/table.md" >> "$report"
  else
    failures=$((failures + 1)); note "- deepspeed $modes: FAILED or timed out"
    tail -30 "$work/deepspeed.log"
  fi
}

if want deepspeed; then
  section "an unmodified framework: DeepSpeed ZeRO-3 over NCCL, through libzpp.so"
  deepspeed_ready && deepspeed_run "$results/deepspeed_${tag}" plain,hpz,zero++ --check
fi

if want deepspeed-own; then
  section "DeepSpeed's own hpZ and ZeRO++ (no zpp): the anchor rows"
  deepspeed_ready && deepspeed_run "$results/deepspeed_own_${tag}" ds-hpz,ds-zero++ --no-reference
fi

if want bench; then
  section "zpp-bench against plain NCCL"
  if run timeout 500 bash tools/gpu-bench.sh "$build"; then note "- zpp-bench: zpp_bench_gpu_${tag}.md"
  else failures=$((failures + 1)); note "- zpp-bench: FAILED or timed out"; fi
fi

if want allreduce-bench; then
  section "zpp-bench all-reduce against plain NCCL (all_reduce_perf's columns)"
  if run env ZPP_BENCH_MODES=plain,qar8,qar4+ef ZPP_BENCH_NAME=zpp_bench_allreduce_gpu \
      timeout 400 bash tools/gpu-bench.sh "$build" --ops allreduce -b 8 -e 256M -f 4; then
    note "- zpp-bench all-reduce: zpp_bench_allreduce_gpu_${tag}.md"
  else failures=$((failures + 1)); note "- zpp-bench all-reduce: FAILED or timed out"; fi
fi

if want tune; then
  section "ZPP_TUNE=auto against plain NCCL and zero++"
  if run env ZPP_BENCH_MODES=plain,zero++,auto ZPP_BENCH_NAME=zpp_bench_tune_gpu ZPP_DEBUG=INFO \
      ZPP_DEBUG_SUBSYS=TUNE timeout 500 bash tools/gpu-bench.sh "$build" -b 64K -e 256M -f 4; then
    note "- zpp-bench auto: zpp_bench_tune_gpu_${tag}.md (the plan column: what auto chose)"
  else failures=$((failures + 1)); note "- zpp-bench auto: FAILED or timed out"; fi
fi

if want codec-bench; then
  section "codec throughput"
  if ! run timeout 300 "$build/bin/zpp-codec-gpu-bench" --out "$results/codec_gpu_${tag}.md"; then
    failures=$((failures + 1)); note "- FAILED or timed out"
  fi
fi

# Whether root may make a network namespace and a tc qdiscs in it, in seconds (issue 45, item 4).
netns_probe() {
  local ns="zpp-probe-$$"
  if ip netns add "$ns" 2>/dev/null; then
    if ip netns exec "$ns" tc qdisc add dev lo root tbf rate 1gbit burst 64kb latency 10ms \
        2>/dev/null; then
      note "- network namespaces and tc qdiscs: allowed (the shaped zpp-bench runs are not built)"
    else
      note "- network namespaces: allowed; tc qdiscs: refused"
    fi
    ip netns del "$ns"
  else
    note "- network namespaces: refused (no shaped runs on this machine)"
  fi
}

if want speed; then
  section "speed: codec roofline, zpp-bench under MPS, auto's trials"
  if ! run timeout 120 "$build/bin/zpp-codec-gpu-bench" --out "$results/codec_gpu_speed_${tag}.md"
  then failures=$((failures + 1)); note "- codec throughput: FAILED or timed out"; fi
  if run env ZPP_BENCH_MPS=1 ZPP_BENCH_MODES=plain,qwz4,zero++,auto \
      ZPP_BENCH_NAME=zpp_bench_speed_gpu ZPP_DEBUG=INFO ZPP_DEBUG_SUBSYS=TUNE \
      timeout 180 bash tools/gpu-bench.sh "$build" -b 1M -e 256M -f 4; then
    note "- zpp-bench: zpp_bench_speed_gpu_${tag}.md (auto's trials: TUNE lines in its log)"
  else failures=$((failures + 1)); note "- zpp-bench: FAILED or timed out"; fi
  if run env ZPP_BENCH_MPS=1 ZPP_BENCH_MODES=plain,qar8,qar4+ef \
      ZPP_BENCH_NAME=zpp_bench_speed_allreduce_gpu \
      timeout 100 bash tools/gpu-bench.sh "$build" --ops allreduce -b 1M -e 256M -f 4; then
    note "- zpp-bench all-reduce: zpp_bench_speed_allreduce_gpu_${tag}.md"
  else failures=$((failures + 1)); note "- zpp-bench all-reduce: FAILED or timed out"; fi
  # The interposer's own cost: plain NCCL, then the same calls through libzpp.so's hooks
  # (host_us in the JSON: the median host time of making a call).
  if run env ZPP_BENCH_MPS=1 ZPP_BENCH_MODES=plain,passthrough \
      ZPP_BENCH_NAME=zpp_bench_speed_passthrough_gpu \
      timeout 60 bash tools/gpu-bench.sh "$build" --ops allgather,reducescatter,allreduce \
      -b 8 -e 256M -f 16 -n 50; then
    note "- pass-through: zpp_bench_speed_passthrough_gpu_${tag}.{md,json}"
  else failures=$((failures + 1)); note "- pass-through: FAILED or timed out"; fi
  ((dry)) && echo "  (probe) ip netns add; tc qdisc add dev lo root tbf (in the namespace)" >&3
  ((dry)) || netns_probe
fi

((dry)) && exit 0
# The README's GPU tables read the loss CSVs and zpp-bench files by name (issue 46): rewrite them
# where the results landed in this checkout; elsewhere ($OUT) once they are copied here.
if [[ $results == "$(realpath -m bench/results)" ]]; then
  python3 tools/results_tables.py || failures=$((failures + 1))
else
  echo "gpu-check: copy $results into bench/results/, then run tools/results_tables.py"
fi
echo "gpu-check: $failures failure(s) in parts:$parts" | tee -a "$report"
echo "report: $report"
((failures == 0))

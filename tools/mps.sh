# Sourced by tools/gpu-bench.sh and tools/gpu-check.sh: the ranks sharing the one GPU as clients
# of an MPS daemon. Without MPS the processes' kernels never overlap (each has its own context),
# so NCCL's kernels wait on each other through the GPU's time slices: on the H100 an 8-byte call
# took 9 ms time-sliced and 0.1 ms under MPS (bench/results/gpu_run3_nvidia_h100_80gb_hbm3.md).
#
# mps_start DIR ASKED SETTING: ASKED 1 starts a daemon whose pipes and logs live under DIR
# (SETTING names the variable that asked, for the sentence). Sets mps (a sentence for reports)
# and mps_started (1 when this script's own daemon runs: the caller runs mps_quit before DIR
# goes). A daemon that does not start leaves the run time-sliced, and the sentence says so.
mps_started=0
mps_start() {
  local dir=$1 asked=$2 setting=$3
  mps="MPS off: the ranks time-slice the GPU"
  if pgrep -f nvidia-cuda-mps-control >/dev/null 2>&1; then
    mps="MPS on (a daemon this script did not start)"
  elif [[ "$asked" == 1 ]]; then
    export CUDA_MPS_PIPE_DIRECTORY="$dir/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$dir/mps-log"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d > "$dir/mps.err" 2>&1; then
      mps="MPS on ($setting=1: a daemon of this run's own)"
      mps_started=1
    else
      mps="MPS asked for, but its daemon did not start ($(head -c 200 "$dir/mps.err")): time-sliced"
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    fi
  fi
}

mps_quit() {
  ((mps_started)) || return 0
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
  mps_started=0
}

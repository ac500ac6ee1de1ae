"""zpp-run --cpu (issue 29, item 8): an unmodified gloo FSDP2 script (bench/fsdp/train_fsdp2.py
--backend gloo) under `zpp-run --cpu --preset zero++` trains with the same losses and the same
engine counters as the same script on backend `zpp`, and saves and loads a checkpoint with
torch.distributed.checkpoint (gather, scatter and object collectives on the inner gloo group).
The --cpu run also asks for --progress 2: rank 0 alone prints a line of its counters at steps 2
and 4 (issue 29, item 1).
4 CPU ranks as 2 simulated nodes of 2, started without torchrun (tests/torch/launch.py).

    tests/torch/run.sh BUILD tests/torch/cpu_switch_test.py BUILD
"""
import csv
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
RANKS, STEPS = 4, 4
# Large enough that zero++'s plans take the all-gathers and reduce-scatters (ZPP_MIN_BYTES is
# lowered to 64 KiB below), small enough for 2 cores.
MODEL = ["--layers", "2", "--width", "128", "--heads", "4", "--seq", "32", "--batch", "4"]


def train(build, folder, backend, cpu_switch):
    sys.path.insert(0, HERE)
    from launch import Ranks

    os.makedirs(folder)
    zpp_run = [os.path.join(ROOT, "tools", "zpp-run"), "--lib",
               os.path.join(build, "lib", "libzpp.so"), "--preset", "zero++"]
    if cpu_switch:
        zpp_run += ["--cpu", "--progress", "2"]
    command = zpp_run + ["--", sys.executable, os.path.join(ROOT, "bench", "fsdp",
                                                             "train_fsdp2.py"),
                         "--device", "cpu", "--backend", backend, "--steps", str(STEPS),
                         "--warmup", "2", "--csv", os.path.join(folder, "loss.csv"),
                         "--stats-dir", os.path.join(folder, "stats"),
                         "--checkpoint", os.path.join(folder, "checkpoint")] + MODEL
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPP_")}
    env.update(ZPP_LOCAL_SIZE="2", ZPP_TIMEOUT="60", ZPP_MIN_BYTES="65536")
    ranks = Ranks(command, RANKS, env=env, cwd=folder)
    hung = ranks.wait(timeout=300)
    if ranks.print_failures(hung, label=f"{backend} (--cpu {cpu_switch}) "):
        raise AssertionError(f"the {backend} run failed")
    for rank in range(RANKS):
        if "checkpoint saved and loaded" not in ranks.output(rank):
            raise AssertionError(f"{backend}: rank {rank} did not round-trip its checkpoint:\n"
                                 f"{ranks.output(rank)[-3000:]}")
    for rank in range(RANKS):
        printed = [step for step in range(1, STEPS + 1)
                   if f"zpp progress: step {step}, rank 0/{RANKS}" in ranks.output(rank)]
        expected = [2, 4] if cpu_switch and rank == 0 else []
        if printed != expected:
            raise AssertionError(f"{backend}: rank {rank} printed progress at steps {printed}, "
                                 f"expected {expected}:\n{ranks.output(rank)[-3000:]}")
    if cpu_switch:
        print(next(line for line in ranks.output(0).splitlines() if "zpp progress" in line))
    with open(os.path.join(folder, "loss.csv")) as source:
        losses = [row["loss"] for row in csv.DictReader(source)]
    stats = []
    for rank in range(RANKS):
        with open(os.path.join(folder, "stats", f"stats{rank}.json")) as source:
            stats.append(json.load(source)["steps"])
    return losses, stats


def engine_counters(step):
    """What must match between the two runs: the engine's calls, bytes and hpZ outcomes (times
    and the gloo calls' counts may differ)."""
    keys = ("calls", "input_bytes", "pass_through", "sent_bytes", "hpz_hits", "hpz_misses",
            "hpz_verify_failures", "plain_off_node_bytes")
    return {key: step[key] for key in keys}


def main():
    build = os.path.realpath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="zpp-cpu-switch-")
    try:
        gloo_losses, gloo_stats = train(build, os.path.join(work, "gloo"), "gloo", True)
        zpp_losses, zpp_stats = train(build, os.path.join(work, "zpp"), "zpp", False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(gloo_losses) != STEPS or gloo_losses != zpp_losses:
        raise AssertionError(f"losses differ: --cpu with gloo {gloo_losses}, zpp {zpp_losses}")
    for rank in range(RANKS):
        for step in range(STEPS):
            switched = engine_counters(gloo_stats[rank][step])
            written = engine_counters(zpp_stats[rank][step])
            if switched != written:
                raise AssertionError(f"rank {rank} step {step}: counters differ\n--cpu: "
                                     f"{switched}\nzpp:   {written}")
    last = gloo_stats[0][-1]
    if last["calls"]["qgz"] == 0 or last["calls"]["hpz"] + last["calls"]["qwz"] == 0:
        raise AssertionError(f"zero++ took no call under --cpu: {last['calls']}")
    print(f"cpu switch: {STEPS} steps, equal losses (last {gloo_losses[-1]}) and counters on "
          f"every rank; inter-node bytes {last['sent_bytes']['inter_node']} of plain's "
          f"{last['plain_off_node_bytes']}; checkpoint round trip on every rank")
    return 0


if __name__ == "__main__":
    sys.exit(main())

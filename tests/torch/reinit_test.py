"""A process group can be made again (issue 46): under torchrun (env://, whose agent keeps one
c10d store for the whole job, and torch names the new default group as the old one), 4 CPU ranks
as 2 simulated nodes of 2 call init_process_group("zpp") and destroy_process_group() three times
in a row; after each set-up, an all-reduce, an all-gather and a subgroup's all-reduce (the
subgroup's size changing between cycles) return the right values. Before the fix the second set-up read the first one's addresses from the store and
failed after ZPP_TIMEOUT.

    tests/torch/run.sh BUILD tests/torch/reinit_test.py
"""
import os
import subprocess
import sys

RANKS = 4
CYCLES = 3


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def one_cycle(cycle):
    import torch
    import torch.distributed as dist

    dist.init_process_group("zpp")
    rank, size = dist.get_rank(), dist.get_world_size()
    total = torch.tensor([float(rank + cycle)])
    dist.all_reduce(total)
    expect(total.item() == sum(range(size)) + size * cycle, f"cycle {cycle}: sum {total.item()}")
    pieces = [torch.zeros(2, dtype=torch.int64) for _ in range(size)]
    dist.all_gather(pieces, torch.tensor([rank, cycle]))
    expect([p.tolist() for p in pieces] == [[r, cycle] for r in range(size)],
           f"cycle {cycle}: all-gather {pieces}")
    # The subgroup takes the same name every cycle, and another size every other cycle.
    members = [0, 2] if cycle % 2 == 0 else [0, 1, 2]
    subgroup = dist.new_group(members)
    if rank in members:
        mine = torch.tensor([rank + 1.0])
        dist.all_reduce(mine, group=subgroup)
        want = sum(member + 1.0 for member in members)
        expect(mine.item() == want, f"cycle {cycle}: subgroup sum {mine.item()}, not {want}")
    dist.barrier()
    dist.destroy_process_group()


def rank_main():
    import zpp_torch  # noqa: F401 (registers the backend)

    for cycle in range(CYCLES):
        one_cycle(cycle)
    print(f"rank {os.environ['RANK']}: {CYCLES} cycles", flush=True)


def main():
    if os.environ.get("RANK") is not None:
        rank_main()
        return
    env = dict(os.environ, ZPP_LOCAL_SIZE="2", ZPP_TIMEOUT="30", OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={RANKS}", os.path.abspath(__file__)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired as expired:
        raise AssertionError(f"torchrun did not end in 240 s:\n{expired.stdout}{expired.stderr}")
    output = done.stdout + done.stderr
    expect(done.returncode == 0, f"torchrun exited {done.returncode}:\n{output[-6000:]}")
    for rank in range(RANKS):
        expect(f"rank {rank}: {CYCLES} cycles" in output, f"rank {rank} missing:\n{output[-4000:]}")
    print(f"ok: {CYCLES} destroy/init cycles on {RANKS} ranks")


if __name__ == "__main__":
    main()

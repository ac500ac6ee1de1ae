"""Mismatched calls on the torch backend `zpp` (issue 29, item 7): 4 CPU processes (2 simulated
nodes of 2), where rank 0 calls one collective and the others another. Every rank must raise a
ZppError within a second that names both calls, and never return data. Each case runs on a
process group of its own (a mismatch breaks its communicator), in plain mode and under zero++,
below and above ZPP_MIN_BYTES.

    tests/torch/run.sh BUILD tests/torch/mismatch_test.py
"""
import os
import sys
import time

RANKS = 4
SMALL, LARGE = 1024, 1 << 20  # elements per rank: below and above ZPP_MIN_BYTES (1 MiB)
DEADLINE = 1.0  # seconds from the call to the error


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def cases():
    """(name, what rank 0 calls, what the others call, words every error must hold)."""
    import torch
    import torch.distributed as dist

    def all_gather(count):
        def call(group, rank, n):
            out = torch.empty(count * n)
            dist.all_gather_into_tensor(out, torch.full((count,), float(rank)), group=group)
            return out
        return call

    def reduce_scatter(count):
        def call(group, rank, n):
            out = torch.empty(count)
            dist.reduce_scatter_tensor(out, torch.ones(count * n), group=group)
            return out
        return call

    found = []
    for count in (SMALL, LARGE):
        # Equal bytes on the wire: rank 0 gathers n x count, the others scatter n x count / n.
        found.append((f"all_gather vs reduce_scatter of {count}", all_gather(count),
                      reduce_scatter(count),
                      [f"all_gather of {count} x fp32", f"reduce_scatter (sum) of {count}"]))
        found.append((f"all_gather of {count} vs of {2 * count}", all_gather(count),
                      all_gather(2 * count),
                      [f"all_gather of {count} x fp32", f"all_gather of {2 * count} x"]))
    return found


def rank_main():
    import torch.distributed as dist

    import zpp_torch

    dist.init_process_group("zpp")
    rank, n = dist.get_rank(), dist.get_world_size()
    for name, first, others, words in cases():
        group = dist.new_group(backend="zpp")
        dist.barrier()  # on the default group: every rank starts the case together
        call = first if rank == 0 else others
        start = time.monotonic()
        try:
            out = call(group, rank, n)
        except zpp_torch.ZppError as error:
            took = time.monotonic() - start
            for word in words:
                expect(word in str(error), f"{name}: the error should name {word!r}: {error}")
            expect(took < DEADLINE, f"{name}: raised after {took:.2f} s: {error}")
            print(f"rank {rank}: {name}: raised in {took:.3f} s", flush=True)
        else:
            raise AssertionError(f"{name}: returned instead of raising: {out[:4]}")
        dist.destroy_process_group(group)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: all checks held")


def main():
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    from launch import Ranks

    failed = False
    for mode, settings in (("plain", {}), ("zero++", {"ZPP_QWZ": "1", "ZPP_HPZ": "1",
                                                     "ZPP_QGZ": "1"})):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZPP_")}
        env.update(settings, ZPP_LOCAL_SIZE="2")  # ZPP_TIMEOUT at its default: 300 s
        ranks = Ranks([os.path.realpath(__file__), "--rank"], RANKS, env=env)
        failed |= ranks.print_failures(ranks.wait(timeout=240), f"{mode}, ")
        print(f"{mode}: " + ("FAILED" if failed else "every rank raised in time, both calls named"))
    return 1 if failed else 0


if __name__ == "__main__":
    if "--rank" in sys.argv:
        rank_main()
    else:
        sys.exit(main())

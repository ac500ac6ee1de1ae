"""The compressed all-reduce (ZPP_QAR=1, issue 28) through the torch backend `zpp` on 4 CPU
processes (2 simulated nodes of 2): every rank ends with the same bytes, within int8's error of
the exact sum; what it does not compress is exact; and unmodified DDP keeps its replicas
bitwise identical at every step, with its buckets through zpp's plan.

    tests/torch/run.sh BUILD tests/torch/all_reduce_test.py
"""
import hashlib
import os
import sys

RANKS = 4


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def digest(tensors):
    import torch

    sha = hashlib.sha256()
    for tensor in tensors:
        sha.update(tensor.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return sha.hexdigest()


def same_on_every_rank(value, what):
    import torch.distributed as dist

    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    expect(all(v == gathered[0] for v in gathered), f"{what} differs across ranks: {gathered}")


def rank_main():
    import torch
    import torch.distributed as dist

    import zpp_torch

    dist.init_process_group("zpp")
    rank, n = dist.get_rank(), dist.get_world_size()

    def inputs(dtype, count):
        return [torch.randn(count, generator=torch.Generator().manual_seed(100 + r)).to(dtype)
                for r in range(n)]

    # Large enough for the plan, not a multiple of the world: compressed, identical everywhere.
    for dtype, op, budget in ((torch.float32, dist.ReduceOp.SUM, 0.012),
                              (torch.bfloat16, dist.ReduceOp.AVG, 0.014)):
        every = inputs(dtype, 100003)
        exact = torch.stack([x.double() for x in every]).sum(0)
        if op == dist.ReduceOp.AVG:
            exact /= n
        t = every[rank].clone()
        dist.all_reduce(t, op=op)
        error = ((t.double() - exact).norm() / exact.norm()).item()
        expect(0.002 < error < budget, f"{dtype} {op}: relative error {error}")
        same_on_every_rank(digest([t]), f"{dtype} all_reduce result")
    # Strided: reduced through a contiguous copy, written back.
    t = torch.arange(2 * 50000, dtype=torch.float32).reshape(50000, 2).t()
    dist.all_reduce(t)
    expect(not t.is_contiguous() and torch.allclose(
        t, n * torch.arange(2 * 50000, dtype=torch.float32).reshape(50000, 2).t(), rtol=0.02,
        atol=n * 1000), "strided all_reduce")
    same_on_every_rank(digest([t]), "strided all_reduce result")
    stats = zpp_torch.stats()
    expect(stats["calls"]["qar"] == 3, f"compressed all-reduces counted: {stats['calls']}")
    # Not compressed: exact, counted where they ran.
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    expect(t.item() == n - 1, f"all_reduce max {t}")
    t = torch.full((3,), rank, dtype=torch.int64)
    dist.all_reduce(t)
    expect(t.tolist() == [sum(range(n))] * 3, f"all_reduce of integers {t}")
    t = torch.ones(7)  # under the plan's size: the engine's exact all-reduce
    dist.all_reduce(t)
    expect(t.tolist() == [float(n)] * 7, f"small all_reduce {t}")
    stats = zpp_torch.stats()
    expect(stats["exact_ops"].get("all_reduce") == 2, f"exact all-reduces: {stats['exact_ops']}")
    expect(stats["pass_through"].get("small") == 1, f"pass-throughs: {stats['pass_through']}")

    # HSDP's replicate groups: one rank of each node. The simulated node is the process's (its
    # global rank over ZPP_LOCAL_SIZE), not its rank in the group, so the group spans 2 nodes
    # and takes the flat plan.
    replicas = [dist.new_group([0, 2]), dist.new_group([1, 3])][rank % 2]
    backend = replicas._get_backend(torch.device("cpu"))
    expect(backend.topology()["nodes"] == 2 and backend.topology()["local_size"] == 1,
           f"replicate group's topology: {backend.topology()}")
    every = inputs(torch.float32, 40000)
    t = every[rank].clone()
    dist.all_reduce(t, op=dist.ReduceOp.AVG, group=replicas)
    pair = [r for r in range(n) if r % 2 == rank % 2]
    exact = (every[pair[0]].double() + every[pair[1]].double()) / 2
    error = ((t.double() - exact).norm() / exact.norm()).item()
    expect(0.002 < error < 0.012, f"replicate group all_reduce: relative error {error}")
    expect(zpp_torch.stats(replicas)["calls"]["qar"] == 1, "the replicate group's plan")
    expect(zpp_torch.process_stats()["calls"]["qar"] == 4, "every communicator's calls summed")

    # Unmodified DDP: default buckets (rebuilt after the first step), replicas identical.
    torch.manual_seed(0)  # the same initial weights everywhere (DDP broadcasts them anyway)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 256))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    before = zpp_torch.stats()["calls"]["qar"]
    generator = torch.Generator().manual_seed(rank)
    for step in range(4):
        x = torch.randn(32, 256, generator=generator)
        loss = ddp(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        same_on_every_rank(digest(list(model.parameters())), f"DDP parameters at step {step}")
    compressed = zpp_torch.stats()["calls"]["qar"] - before
    expect(compressed >= 4, f"DDP's buckets went through the plan {compressed} times")
    dist.destroy_process_group()
    print(f"rank {rank}: all checks held")


def main():
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    from launch import Ranks

    env = dict(os.environ, ZPP_LOCAL_SIZE="2", ZPP_TIMEOUT="30", ZPP_QAR="1",
               ZPP_MIN_BYTES="65536")
    ranks = Ranks([os.path.realpath(__file__), "--rank"], RANKS, env=env)
    failed = ranks.print_failures(ranks.wait(timeout=240))
    print("torch all-reduce: " + ("FAILED" if failed else "every rank's checks held"))
    return 1 if failed else 0


if __name__ == "__main__":
    if "--rank" in sys.argv:
        rank_main()
    else:
        sys.exit(main())

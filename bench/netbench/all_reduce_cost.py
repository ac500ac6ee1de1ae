#!/usr/bin/env python3
"""One all-reduce's cost on CPU ranks: a torch.distributed job (torchrun) in which every rank
all-reduces the same fp32 tensor --iters times, timed around each call; rank 0 prints one JSON
line: the median call's wall time and the CPU time (user + system, every thread of the process)
per call, summed over the ranks. Run it under torchrun with `--backend gloo`, or through
`tools/zpp-run --cpu` with `--backend zpp`, on one machine or on the shaped links of
tools/netbed (docs/benchmarks.md, "The CPU all-reduce's own cost").

    torchrun --nproc-per-node 4 --standalone bench/netbench/all_reduce_cost.py --backend gloo
"""
import argparse
import json
import os
import resource
import statistics
import time

import torch
import torch.distributed as dist


def process_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", required=True, choices=("gloo", "zpp"))
    parser.add_argument("--mib", type=float, default=25.0, help="the tensor (DDP's bucket: 25)")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--groups", choices=("world", "replica"), default="world",
                        help="replica: HSDP's all-reduce, each rank in the group of the ranks at "
                             "its place on the other nodes (2 nodes of 2: {0, 2} and {1, 3})")
    args = parser.parse_args()
    if args.backend == "zpp":
        import zpp_torch  # noqa: F401 (registers the backend)
    dist.init_process_group(args.backend)
    group = None
    if args.groups == "replica":
        per_node = int(os.environ["LOCAL_WORLD_SIZE"])
        nodes = dist.get_world_size() // per_node
        for local in range(per_node):  # every rank makes every group, in the same order
            made = dist.new_group([node * per_node + local for node in range(nodes)])
            if local == int(os.environ["LOCAL_RANK"]):
                group = made
    tensor = torch.randn(int(args.mib * 2**20 / 4))
    for _ in range(args.warmup):
        dist.all_reduce(tensor, group=group)
    dist.barrier()
    walls = []
    cpu_before = process_cpu_seconds()
    for _ in range(args.iters):
        start = time.perf_counter()
        dist.all_reduce(tensor, group=group)
        walls.append(time.perf_counter() - start)
    cpu_per_call = (process_cpu_seconds() - cpu_before) / args.iters
    every_rank = [None] * dist.get_world_size()
    dist.all_gather_object(every_rank, cpu_per_call)
    if dist.get_rank() == 0:
        print(json.dumps({"backend": args.backend, "mib": args.mib, "iters": args.iters,
                          "groups": args.groups,
                          "ranks": dist.get_world_size(),
                          "median_wall_ms": round(1e3 * statistics.median(walls), 3),
                          "cpu_ms_per_call_all_ranks": round(1e3 * sum(every_rank), 3)}),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

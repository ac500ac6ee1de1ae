"""A GPT trained on real English text with unmodified FSDP2 (fully_shard per block and at the
root, AdamW, bf16 parameters on the wire, fp32 reduction), or with --parallel ddp (torch DDP,
default buckets, fp32) or hsdp (FSDP2 over a (nodes x ranks per node) mesh: sharded inside a
node, replicated across): the run zpp is judged by, on a GPU
(NCCL, with libzpp.so preloaded by zpp-run) and on the CPU (the torch.distributed backend `zpp`
of build/python/zpp_torch, or gloo as the reference). Model and text: gpt_text.py.

    torchrun --nproc-per-node 4 bench/fsdp/train_fsdp2.py --one-gpu --csv loss.csv
    ZPP_LOCAL_SIZE=2 torchrun --nproc-per-node 4 bench/fsdp/train_fsdp2.py --device cpu \\
        --backend zpp --csv loss.csv --stats-dir stats/

Rank 0 writes one CSV line per step (step, mean loss over ranks, seconds since the first step).
With --one-gpu every rank uses GPU 0 and its own NCCL_HOSTID, so that NCCL treats the ranks as
separate hosts (docs/architecture.md, "Testing on one GPU"). With --stats-dir and the zpp
backend, every rank writes stats<rank>.json: its engine counters after each optimizer step.
"""
import argparse
import ctypes
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import gpt_text  # noqa: E402 (beside this file; imports torch)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
import quantities  # noqa: E402 (bench/quantities.py: the final loss, defined once)


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gpt_text.add_run_arguments(parser)
    parser.add_argument("--die-at-step", type=int, default=-1,
                        help="tests: rank --die-rank SIGKILLs itself at this step")
    parser.add_argument("--die-rank", type=int, default=1)
    parser.add_argument("--die-how", choices=("kill", "stall"), default="kill",
                        help="tests: stall stops the rank (SIGSTOP) instead: alive and silent")
    parser.add_argument("--parallel", choices=("fsdp2", "ddp", "hsdp"), default="fsdp2")
    parser.add_argument("--local-size", type=int, default=None,
                        help="hsdp: ranks per node (the shard dimension; default ZPP_LOCAL_SIZE, "
                        "else LOCAL_WORLD_SIZE)")
    parser.add_argument("--comm-hook", choices=("bf16", "powersgd"),
                        help="ddp: torch's bf16_compress_hook, or PowerSGD at rank 2 (its own "
                             "error feedback, compressing from the third step)")
    parser.add_argument("--count-bytes", action="store_true",
                        help="wrap gloo to count what each collective would send across "
                             "simulated nodes (bench/deepspeed/counted_backend.py)")
    parser.add_argument("--checkpoint",
                        help="after training, save model and optimizer to this folder with "
                             "torch.distributed.checkpoint, zero the weights, load them back and "
                             "check every shard came back")
    return parser.parse_args()


def save_and_load_checkpoint(model, optimizer, folder):
    """torch.distributed.checkpoint's round trip on the sharded model: its planning collectives
    (gather, scatter, object collectives) run on the training's process group."""
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=folder)
    kept = [p.to_local().detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=folder)
    set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    for index, (parameter, before) in enumerate(zip(model.parameters(), kept, strict=True)):
        if not torch.equal(parameter.to_local(), before):
            raise AssertionError(f"checkpoint: parameter {index} differs after the load")
    return len(kept)


def preloaded_zpp_stats():
    """A reader of zppGetStats of a preloaded libzpp.so (the plugin under NCCL), as
    zpp_torch.stats gives them; None without one. The plugin counts off-node bytes for zpp's own
    plans only (the planner's prediction); what NCCL moves for pass-throughs is not counted.
    bench/deepspeed/train_zero3.py and tests/torch/hpz_loops_train.py read them through it."""
    try:
        library = ctypes.CDLL(None)
        library.zppGetStats  # noqa: B018 (AttributeError when libzpp.so is not preloaded)
    except (OSError, AttributeError):
        return None
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "plugin",
                        "torch", "zpp_torch", "_stats.py")
    spec = importlib.util.spec_from_file_location("zpp_stats", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = module.reason_names(library)

    def read():
        raw = module.Stats()
        if library.zppGetStats(ctypes.byref(raw)) != 0:
            raise RuntimeError("zppGetStats failed")
        return raw.as_dict(names)

    return read


def wrap(args, model, device, world):
    """The module the step runs: FSDP2 per block and at the root, DDP, or HSDP."""
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if args.parallel == "ddp":
        # PowerSGD's hook chains its collectives in callbacks, and two buckets' chains then reach
        # gloo in another order on each rank (a collective mismatch): one bucket for it.
        one_bucket = {"bucket_cap_mb": 1024} if args.comm_hook == "powersgd" else {}
        ddp = torch.nn.parallel.DistributedDataParallel(model, **one_bucket)
        if args.comm_hook == "bf16":
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
        elif args.comm_hook == "powersgd":
            from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

            state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=2,
                                                start_powerSGD_iter=2)
            ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
        return ddp
    mesh = None
    if args.parallel == "hsdp":
        from torch.distributed.device_mesh import init_device_mesh

        # Simulated nodes (ZPP_LOCAL_SIZE), else torchrun's ranks on this host.
        local = args.local_size or int(os.environ.get("ZPP_LOCAL_SIZE") or
                                       os.environ.get("LOCAL_WORLD_SIZE", "1"))
        mesh = init_device_mesh(device.type, (world // local, local),
                                mesh_dim_names=("replicate", "shard"))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model


def digest(model):
    """This rank's parameters (its shards under FSDP2 and HSDP), hashed: replicas must agree."""
    import hashlib

    import torch

    sha = hashlib.sha256()
    for parameter in model.parameters():
        local = parameter.to_local() if hasattr(parameter, "to_local") else parameter
        sha.update(local.detach().contiguous().view(-1).view(torch.uint8).cpu().numpy().tobytes())
    return sha.hexdigest()[:16]


def counted_stats(snapshot):
    """The byte counter's snapshot with its all-reduces in sent_bytes: DDP's and HSDP's traffic
    across nodes is all-reduce (counted as a ring reduce-scatter then all-gather)."""
    def read():
        counted = snapshot()
        reduced = counted["other_ops"].get("all_reduce", {})
        counted["sent_bytes"]["inter_node"] += reduced.get("inter_node", 0)
        counted["sent_bytes"]["intra_node"] += reduced.get("intra_node", 0)
        return counted

    return read


def init_distributed(args):
    """The process group on the device asked for; returns the device."""
    import torch
    import torch.distributed as dist

    if args.device == "cuda":
        device = torch.device("cuda", 0 if args.one_gpu else int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
        dist.init_process_group(args.backend or "nccl", device_id=device)
        return device
    backend = args.backend or "zpp"
    if backend == "zpp":
        import zpp_torch  # noqa: F401 (registers the backend)
    if args.count_bytes:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..",
                                        "deepspeed"))
        import counted_backend

        backend = counted_backend.register(backend)
    timeout = {}
    if args.pg_timeout is not None:
        import datetime

        timeout["timeout"] = datetime.timedelta(seconds=args.pg_timeout)
    dist.init_process_group(backend, **timeout)
    return torch.device("cpu")


def stats_reader(args):
    """What reads zpp's statistics after each step for --stats-dir (None: not asked)."""
    import torch.distributed as dist

    if not args.stats_dir:
        return None
    if dist.get_backend() == "zpp":
        import zpp_torch

        # HSDP's collectives run on its mesh's groups: every communicator of the process.
        return zpp_torch.process_stats if args.parallel == "hsdp" else zpp_torch.stats
    if args.count_bytes:
        import counted_backend

        return counted_stats(counted_backend.snapshot)
    return preloaded_zpp_stats()


def report_final(args, lines):
    """Rank 0's last lines: the final loss, and on a GPU zpp's step epoch."""
    final = quantities.final_loss(float(line.split(",")[1]) for line in lines)
    print(f"final loss {final:.8f} (mean of the last 10% of steps)")
    if args.device == "cuda":
        try:
            zpp = ctypes.CDLL(None)
            epoch = ctypes.c_uint64(0)
            zpp.zppGetStepEpoch(ctypes.byref(epoch))
            print(f"zpp step epoch {epoch.value}")
        except (OSError, AttributeError):
            print("zpp not loaded")


def train(args, rank, device, world):
    """The steps, the per-rank files and the checkpoint; returns rank 0's last lines' inputs."""
    import torch
    import torch.distributed as dist

    torch.manual_seed(args.seed)
    model = gpt_text.Gpt(args.layers, args.width, args.heads, args.seq).to(device)
    if args.parallel == "ddp" and rank == 0:
        # DDP's construction broadcasts the module's state from rank 0: bytes that no collective
        # of a step moves (bench/netbench/run.py adds them to the counted bytes it checks).
        state = [t for t in list(model.parameters()) + list(model.buffers())]
        print(f"ddp init sync: {sum(t.numel() * t.element_size() for t in state)} bytes "
              "broadcast from rank 0", flush=True)
    trained = wrap(args, model, device, world)
    parameters = sum(p.numel() for p in model.parameters())  # DTensors: global sizes
    optimizer = torch.optim.AdamW(trained.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / max(args.warmup, 1)))
    batches = gpt_text.Batches(gpt_text.load_corpus(), args.batch, args.seq, args.seed, rank)

    zpp_stats = stats_reader(args)
    per_step = []
    lines = []
    clock = quantities.StepClock()
    for step in range(args.steps):
        if step == args.die_at_step and rank == args.die_rank:
            if args.die_how == "stall":
                print(f"rank {rank}: stalling at step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP if args.die_how == "stall" else signal.SIGKILL)
        inputs, targets = (t.to(device) for t in batches.get(step))
        loss = gpt_text.loss_of(trained, inputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        lines.append(f"{step},{total.item() / world:.8f},{clock.seconds():.3f}")
        if zpp_stats is not None:
            with clock.aside():
                per_step.append(dict(zpp_stats(), param_digest=digest(model)))
    gpt_text.write_run(args, rank, world, lines, per_step)
    if args.checkpoint:
        count = save_and_load_checkpoint(model, optimizer, args.checkpoint)
        print(f"rank {rank}: checkpoint saved and loaded, {count} parameters equal")
    return parameters, lines


def main():
    args = parse()
    rank = int(os.environ["RANK"])
    if args.one_gpu:
        os.environ["NCCL_HOSTID"] = f"zpp-fsdp-host{rank}"  # before NCCL starts
    import gc

    import torch.distributed as dist

    device = init_distributed(args)
    parameters, lines = train(args, rank, device, dist.get_world_size())
    if rank == 0:
        print(f"parameters {parameters}, ", end="")
        report_final(args, lines)
    # The wrapped model holds the process group (DDP's reducer, FSDP2's states) in reference
    # cycles: left to the interpreter's exit, gloo's worker threads were torn down during
    # finalization and a rank aborted ("terminate called without an active exception", twice in
    # `make test`'s gloo reference run, once after a barrier). Collected here, while the
    # interpreter is whole, after every rank is done with its connections.
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    gc.collect()


if __name__ == "__main__":
    main()

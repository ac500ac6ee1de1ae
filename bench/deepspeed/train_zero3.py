"""The GPT of bench/fsdp (same model, text, seeds and data order) trained by an unmodified
DeepSpeed ZeRO-3 engine: the run that shows plain ZeRO-3 plus zpp next to DeepSpeed's own ZeRO++.

    DS_ACCELERATOR=cpu ZPP_LOCAL_SIZE=2 torchrun --nproc-per-node 4 \\
        bench/deepspeed/train_zero3.py --device cpu --backend zpp --csv loss.csv --stats-dir s/
    torchrun --nproc-per-node 4 bench/deepspeed/train_zero3.py --one-gpu --ds-zeropp 2

ZeRO stage 3 with AdamW (torch's, so that zpp-run's optimizer post-step hook sees DeepSpeed's
step) and DeepSpeed's live-parameter budgets at 0 (`stage3_max_live_parameters`,
`stage3_max_reuse_distance`, `stage3_prefetch_bucket_size`): a model larger than those budgets
(the default 1e9 parameters) is gathered again in backward, and that backward gather is what hpZ
saves; with the defaults a small model would stay gathered from forward to backward.

--ds-hpz N sets DeepSpeed's own `zero_hpz_partition_size` (the anchor row, over gloo on the CPU);
--ds-zeropp N adds its quantized weights and gradients too (GPU only: DeepSpeed's CPU
accelerator has no quantizer op). --count-bytes wraps the backend to count what each collective
would send across simulated nodes (bench/deepspeed/counted_backend.py).

Rank 0 writes one CSV line per step (step, mean loss over ranks, seconds since the first step);
with --stats-dir every rank writes stats<rank>.json: zpp's counters after each optimizer step
(zpp backend or preloaded libzpp.so), or the byte counter's (--count-bytes).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fsdp"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import gpt_text  # noqa: E402 (bench/fsdp; imports torch)
import quantities  # noqa: E402 (bench/quantities.py: the final loss, defined once)


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gpt_text.add_run_arguments(parser)
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    parser.add_argument("--reduce-bucket", type=int, default=int(5e8),
                        help="reduce_bucket_size, elements (DeepSpeed's default)")
    parser.add_argument("--sub-group-size", type=int, default=int(1e9),
                        help="sub_group_size, elements (DeepSpeed's default): ZeRO-3 steps its "
                        "optimizer once per sub-group")
    parser.add_argument("--ds-hpz", type=int, default=1,
                        help="DeepSpeed's zero_hpz_partition_size (1: off)")
    parser.add_argument("--ds-zeropp", type=int, default=0,
                        help="DeepSpeed's full ZeRO++ with this hpZ partition size (GPU)")
    parser.add_argument("--count-bytes", action="store_true",
                        help="count simulated inter-node bytes per collective (wraps --backend)")
    return parser.parse_args()


def ds_config(args):
    zero = {
        "stage": 3,
        # Gather again in backward, as for a model larger than the default budgets (docstring).
        "stage3_max_live_parameters": 0,
        "stage3_max_reuse_distance": 0,
        "stage3_prefetch_bucket_size": 0,
        "reduce_bucket_size": args.reduce_bucket,
        "sub_group_size": args.sub_group_size,
        "overlap_comm": False,
        "contiguous_gradients": True,
    }
    if args.ds_zeropp:
        zero.update(zero_hpz_partition_size=args.ds_zeropp, zero_quantized_weights=True,
                    zero_quantized_gradients=True)
    elif args.ds_hpz > 1:
        zero["zero_hpz_partition_size"] = args.ds_hpz
    config = {
        "train_micro_batch_size_per_gpu": args.batch,
        "gradient_accumulation_steps": 1,
        "zero_optimization": zero,
        "gradient_clipping": 0.0,
        "steps_per_print": 1 << 30,
        "wall_clock_breakdown": False,
    }
    if args.dtype == "bf16":
        # bf16 weights on the wire, fp32 gradient reduce-scatters: FSDP2's mixed precision in the
        # FSDP2 harness, and a sum whose rounding does not depend on the backend's order.
        config["bf16"] = {"enabled": True}
        config["communication_data_type"] = "fp32"
    return config


def counters(args):
    """A function returning this rank's counters, or None."""
    import torch.distributed as dist

    if args.count_bytes:
        import counted_backend

        return counted_backend.snapshot
    if not args.stats_dir:
        return None
    if dist.get_backend() == "zpp":
        import zpp_torch

        return zpp_torch.stats
    from train_fsdp2 import preloaded_zpp_stats

    return preloaded_zpp_stats()


def secondary_bytes(engine):
    """What DeepSpeed's hpZ keeps on this rank: its secondary copies of the parameters."""
    total = 0
    for parameter in engine.module.parameters():
        kept = getattr(parameter, "ds_secondary_tensor", None)
        if kept is not None:
            total += kept.numel() * kept.element_size()
    return total


def main():
    args = parse()
    rank = int(os.environ["RANK"])
    if args.one_gpu:
        os.environ["NCCL_HOSTID"] = f"zpp-ds-host{rank}"  # before NCCL starts
        # DeepSpeed takes LOCAL_RANK as the device index (init_process_group's device_id, the
        # engine's set_device): on a shared GPU, every rank's device is cuda:0.
        os.environ["LOCAL_RANK"] = "0"
    if args.device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import torch
    import torch.distributed as dist

    backend = args.backend or ("nccl" if args.device == "cuda" else "zpp")
    if backend == "zpp":
        import zpp_torch  # noqa: F401 (registers the backend)
    if args.count_bytes:
        import counted_backend

        backend = counted_backend.register(backend)
    if args.device == "cuda":
        device = torch.device("cuda", 0 if args.one_gpu else int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    import deepspeed

    deepspeed.init_distributed(dist_backend=backend)
    world = dist.get_world_size()
    torch.manual_seed(args.seed)
    model = gpt_text.Gpt(args.layers, args.width, args.heads, args.seq)
    parameters = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / max(args.warmup, 1)))
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer,
                                           lr_scheduler=schedule, config=ds_config(args))
    batches = gpt_text.Batches(gpt_text.load_corpus(), args.batch, args.seq, args.seed, rank)

    read = counters(args)
    per_step, lines = [], []
    clock = quantities.StepClock()
    for step in range(args.steps):
        inputs, targets = (t.to(device) for t in batches.get(step))
        loss = gpt_text.loss_of(engine, inputs, targets)
        engine.backward(loss)
        # DeepSpeed drops its secondary copies at the step: measured before it.
        with clock.aside():
            kept = secondary_bytes(engine) if read is not None else 0
        engine.step()
        total = loss.detach().float().clone()
        dist.all_reduce(total)
        lines.append(f"{step},{total.item() / world:.8f},{clock.seconds():.3f}")
        if read is not None:
            with clock.aside():
                per_step.append(dict(read(), ds_secondary_bytes=kept))
    gpt_text.write_run(args, rank, world, lines, per_step if args.stats_dir else [])
    if rank == 0:
        final = quantities.final_loss(float(line.split(",")[1]) for line in lines)
        print(f"parameters {parameters}, final loss {final:.8f} (mean of the last 10% of steps)")
    # Every rank done before any tears its connections down: gloo's teardown while a peer still
    # uses them aborted a rank at exit ("terminate called without an active exception", seen
    # once in `make test` under load, in the gloo reference run).
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Training loops that stress hpZ's reuse (issue 44, acceptance item 1): one rank of an ordinary
gloo FSDP2 script on the CPU. Under `tools/zpp-run --cpu` its gloo groups run on zpp's backend
with no code change (tools/zpp_python/sitecustomize.py); tests/torch/hpz_loops_test.py starts 4
ranks as 2 simulated nodes of 2 (ZPP_LOCAL_SIZE=2) and compares the modes.

    python hpz_loops_train.py --loop sam --out DIR            # RANK, WORLD_SIZE, MASTER_* set
    python hpz_loops_train.py --loop sam,bf16 --out DIR       # several loops, a fresh model each
    python hpz_loops_train.py --loop sam --out DIR --backend zpp   # zpp_torch without zpp-run

With the default --backend gloo and no zpp-run it is a pure gloo run (the driver's reference).
Each loop trains a fresh model on a process group of its own (dist.new_group over every rank,
FSDP2's mesh from it): under zpp a fresh communicator, so that one loop's engine state and
counters never reach the next loop's.

The model: an input projection, BLOCKS pre-LayerNorm MLP blocks of one shape (LayerNorm, Linear
WIDTH->4 WIDTH, GELU, Linear 4 WIDTH->WIDTH, residual), a final LayerNorm and a classification
head; fully_shard on each block, then on the root. Every block's all-gather (about 528 KB in
fp32, 264 KB in bf16) is well above the driver's ZPP_MIN_BYTES=65536. Data and every
control-flow choice are seeded: the same choices on every rank, each rank its own batches.

Each rank writes OUT/LOOP/rank<r>.json: per step its training losses and its evaluation losses
(exact floats), whether the optimizer step changed this rank's shards, the in-place changes made,
zpp's counters after the step (when the groups run on zpp), and at the end a sha256 and a
finite flag per local shard.

The loops (--loop):
  stochastic_depth  on odd steps, block (step // 2) % BLOCKS is skipped
  ema_eval          an EMA of the local shards; every 3 steps, after the optimizer step, the EMA
                    is copied into the shards, one forward runs under no_grad, and the training
                    weights are copied back
  validation        every 3 steps, 3 validation batches under no_grad in model.eval()
  sam               two forward/backward passes per step, the weights perturbed in place by
                    rho * g / |g| in between, restored before the optimizer step
  accumulation      3 micro-batches per optimizer step (gradient sync on the last only)
  checkpointing     each block's forward under torch.utils.checkpoint (non-reentrant)
  bf16              MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
  no_reshard        fully_shard(..., reshard_after_forward=False)
  inplace_change    a block's local shard changed in place between a forward and its backward:
                    on every rank at step 4, on rank 2 alone at step 7 (plain SGD, so that a
                    skipped step leaves the weights exactly as they were)
"""
import argparse
import hashlib
import json
import math
import os
import sys
import time

LOOPS = ("stochastic_depth", "ema_eval", "validation", "sam", "accumulation", "checkpointing",
         "bf16", "no_reshard", "inplace_change")

IN_FEATURES, CLASSES = 32, 10
EVERY = 3  # ema_eval and validation: after the optimizer step of every third step
# inplace_change: (step, block, ranks or None for every rank, value added to the fc1 shard)
INPLACE_CHANGES = ((4, 1, None, 0.01), (7, 2, (2,), 0.02))


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loop", required=True,
                        help="one of " + ", ".join(LOOPS) + ", or several separated by commas")
    parser.add_argument("--out", required=True, help="folder of the results (OUT/LOOP/rank.json)")
    parser.add_argument("--backend", default="gloo", choices=("gloo", "zpp"),
                        help="gloo (the ordinary script; zpp-run --cpu turns it into zpp), or "
                             "zpp directly (import zpp_torch)")
    parser.add_argument("--steps", type=int, default=9, help="optimizer steps per loop")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--skip-steps", default="",
                        help="steps (comma separated) whose optimizer step is not taken (the "
                             "gradients are dropped): the reference for a run in which zpp "
                             "skipped those steps")
    args = parser.parse_args()
    args.loops = [name for name in args.loop.split(",") if name]
    unknown = [name for name in args.loops if name not in LOOPS]
    if unknown or not args.loops:
        parser.error(f"unknown loop {unknown}; the loops: {', '.join(LOOPS)}")
    args.skip = {int(step) for step in args.skip_steps.split(",") if step}
    return args


def build_model(args, loop, mesh):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.fc1 = nn.Linear(width, 4 * width)
            self.fc2 = nn.Linear(4 * width, width)

        def forward(self, x):
            return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))

    class Net(nn.Module):
        def __init__(self, blocks, width):
            super().__init__()
            self.embed = nn.Linear(IN_FEATURES, width)
            self.blocks = nn.ModuleList(Block(width) for _ in range(blocks))
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, CLASSES)
            self.skip = set()  # stochastic depth: the blocks this forward leaves out
            self.checkpointing = False

        def forward(self, x):
            x = self.embed(x)
            for index, block in enumerate(self.blocks):
                if index in self.skip:
                    continue
                if self.checkpointing:
                    x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            return self.head(self.norm(x))

    torch.manual_seed(args.seed)  # the same full weights on every rank before sharding
    model = Net(args.blocks, args.width)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    options = {"mesh": mesh}
    if loop == "bf16":
        options["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                    reduce_dtype=torch.float32)
    if loop == "no_reshard":
        options["reshard_after_forward"] = False
    for block in model.blocks:
        fully_shard(block, **options)
    fully_shard(model, **options)
    model.checkpointing = loop == "checkpointing"
    return model


class Data:
    """Seeded batches: inputs from a per-(rank, step, micro-batch) generator, labels from a fixed
    random teacher, the same on every rank."""

    def __init__(self, args, rank):
        import torch

        self.args, self.rank = args, rank
        teacher = torch.Generator().manual_seed(args.seed + 1)
        self.teacher = torch.randn(IN_FEATURES, CLASSES, generator=teacher)

    def batch(self, kind, step, micro=0):
        import torch

        key = {"train": 0, "eval": 1}[kind]
        seed = (((self.args.seed * 7 + key) * 1009 + self.rank) * 1009 + step) * 31 + micro
        generator = torch.Generator().manual_seed(seed)
        inputs = torch.randn(self.args.batch, self.args.seq, IN_FEATURES, generator=generator)
        labels = (inputs @ self.teacher).argmax(-1)
        return inputs, labels


def loss_of(model, batch):
    import torch

    inputs, labels = batch
    logits = model(inputs)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, CLASSES), labels.reshape(-1))


def local_shards(model):
    """(name, this rank's shard) per parameter; the shards themselves, not copies. Only while
    the model is resharded (after a no_grad forward FSDP2 leaves the root unsharded)."""
    shards = []
    for name, p in model.named_parameters():
        if not hasattr(p, "to_local"):
            raise RuntimeError(f"{name} is not sharded (reshard the model first)")
        shards.append((name, p.to_local()))
    return shards


def shard_bytes(tensor):
    import torch

    flat = tensor.detach().contiguous().view(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def digest(model):
    sha = hashlib.sha256()
    for _, shard in local_shards(model):
        sha.update(shard_bytes(shard))
    return sha.hexdigest()


def snapshot(model):
    import torch

    with torch.no_grad():
        return [shard.detach().clone() for _, shard in local_shards(model)]


def zpp_counters(group):
    """zpp's counters of `group`'s communicator (the loop's own), or None when the group does
    not run on zpp."""
    try:
        import zpp_torch

        return zpp_torch.stats(group)
    except (ImportError, ValueError):
        return None


def brief(stats):
    if stats is None:
        return None
    return {"hpz_hits": stats.get("hpz_hits"), "hpz_misses": stats.get("hpz_misses"),
            "hpz_verify_failures": stats.get("hpz_verify_failures"),
            "hpz_skipped_steps": stats.get("hpz_skipped_steps"),
            "step_epoch": stats.get("step_epoch")}


def train_loop(args, loop, rank, world):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh

    # A group of its own per loop: on zpp a fresh communicator, so that what one loop leaves in
    # the engine (hpZ's agreed pattern, reuse turned off after a verification failure) cannot
    # change the next loop's results, and the counters are this loop's alone. The script is
    # otherwise an ordinary gloo one: under zpp-run --cpu this new_group is zpp's too.
    group = dist.new_group(list(range(world)))
    mesh = DeviceMesh.from_group(group, "cpu")
    model = build_model(args, loop, mesh)
    if loop == "inplace_change":
        # Plain SGD: a step whose update is not applied (or whose gradients are zero) leaves the
        # weights exactly as they were, whichever way zpp skips it.
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    data = Data(args, rank)
    ema = snapshot(model) if loop == "ema_eval" else None
    steps = []
    start = time.monotonic()
    for step in range(args.steps):
        record = {"step": step, "losses": [], "eval_losses": [], "changes": []}
        model.train()
        optimizer.zero_grad()
        if loop == "stochastic_depth" and step % 2 == 1:
            model.skip = {(step // 2) % args.blocks}
        else:
            model.skip = set()
        record["skipped_blocks"] = sorted(model.skip)
        if loop == "accumulation":
            micro_batches = 3
            for micro in range(micro_batches):
                model.set_requires_gradient_sync(micro == micro_batches - 1)
                loss = loss_of(model, data.batch("train", step, micro)) / micro_batches
                loss.backward()
                record["losses"].append(loss.item())
        elif loop == "sam":
            rho = 0.05
            loss = loss_of(model, data.batch("train", step))
            loss.backward()
            record["losses"].append(loss.item())
            with torch.no_grad():
                params = [p for p in model.parameters() if p.grad is not None]
                square = torch.zeros((), dtype=torch.float64)
                for p in params:
                    square += p.grad.to_local().double().pow(2).sum()
                dist.all_reduce(square, group=group)
                scale = rho / (math.sqrt(square.item()) + 1e-12)
                kept = [p.to_local().clone() for p in params]
                for p in params:
                    p.to_local().add_(p.grad.to_local(), alpha=scale)
            optimizer.zero_grad()
            loss = loss_of(model, data.batch("train", step))
            loss.backward()
            record["losses"].append(loss.item())
            with torch.no_grad():
                for p, before in zip(params, kept):
                    p.to_local().copy_(before)
        else:
            loss = loss_of(model, data.batch("train", step))
            if loop == "inplace_change":
                for when, block, ranks, value in INPLACE_CHANGES:
                    if when == step and (ranks is None or rank in ranks):
                        with torch.no_grad():
                            model.blocks[block].fc1.weight.to_local().add_(value)
                        record["changes"].append({"block": block, "value": value})
            loss.backward()
            record["losses"].append(loss.item())
        # The step's training loss: the micro-batches' sum (each already divided by their
        # number), or the first (unperturbed) pass of sam.
        record["loss"] = (sum(record["losses"]) if loop == "accumulation"
                          else record["losses"][0])
        before = snapshot(model)
        if step in args.skip:
            optimizer.zero_grad()  # the reference for a step zpp skipped: no update
        else:
            optimizer.step()
        with torch.no_grad():
            after = [shard for _, shard in local_shards(model)]
            record["updated"] = [not torch.equal(a, b) for a, b in zip(before, after)]
        if ema is not None:
            with torch.no_grad():
                for average, (_, shard) in zip(ema, local_shards(model)):
                    average.mul_(0.75).add_(shard, alpha=0.25)
        if loop == "ema_eval" and step % EVERY == EVERY - 1:
            with torch.no_grad():
                training = snapshot(model)
                for average, (_, shard) in zip(ema, local_shards(model)):
                    shard.copy_(average)
                record["eval_losses"].append(loss_of(model, data.batch("eval", step)).item())
                model.reshard()  # the root stays unsharded after a no_grad forward
                for kept, (_, shard) in zip(training, local_shards(model)):
                    shard.copy_(kept)
        if loop == "validation" and step % EVERY == EVERY - 1:
            model.eval()
            with torch.no_grad():
                for index in range(3):
                    record["eval_losses"].append(
                        loss_of(model, data.batch("eval", step, index)).item())
            model.reshard()
            model.train()
        record["digest"] = digest(model)[:16]
        record["stats"] = brief(zpp_counters(group))
        steps.append(record)
        print(f"rank {rank} {loop} step {step}: loss {record['losses']} "
              f"eval {record['eval_losses']}", flush=True)
    shards = {}
    for name, shard in local_shards(model):
        shards[name] = {"sha256": hashlib.sha256(shard_bytes(shard)).hexdigest(),
                        "finite": bool(torch.isfinite(shard.detach().float()).all()),
                        "numel": shard.numel()}
    return {"loop": loop, "rank": rank, "world": world, "backend": dist.get_backend(group),
            "steps": steps, "shards": shards, "digest": digest(model),
            "skip_steps": sorted(args.skip), "stats": zpp_counters(group),
            "seconds": time.monotonic() - start}


def main():
    args = parse()
    rank = int(os.environ["RANK"])
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if args.backend == "zpp":
        import zpp_torch  # noqa: F401 (registers the backend)
    dist.init_process_group(args.backend)
    world = dist.get_world_size()
    for loop in args.loops:
        # The driver cuts each rank's output at these lines: a WARN belongs to the loop before.
        print(f"=== hpz loop {loop} begins", flush=True)
        result = train_loop(args, loop, rank, world)
        folder = os.path.join(args.out, loop)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"rank{rank}.json")
        with open(path + ".tmp", "w") as sink:
            json.dump(result, sink, indent=1)
        os.replace(path + ".tmp", path)
        print(f"rank {rank} {loop}: done on {result['backend']} in {result['seconds']:.1f} s, "
              f"hpZ {brief(result['stats'])}", flush=True)
    # Every rank done before any tears its connections down.
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

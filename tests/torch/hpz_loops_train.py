"""Training loops that stress hpZ's reuse (issue 44, acceptance items 1 and 5): one rank of an
ordinary gloo FSDP2 script on the CPU, or of an ordinary NCCL one on a GPU (--device cuda). Under
`tools/zpp-run --cpu` its gloo groups run on zpp's backend with no code change
(tools/zpp_python/sitecustomize.py); under `tools/zpp-run` without --cpu its NCCL groups run
through the preloaded libzpp.so. tests/torch/hpz_loops_test.py starts 4 ranks as 2 simulated
nodes of 2 (ZPP_LOCAL_SIZE=2) and compares the modes.

    python hpz_loops_train.py --loop sam --out DIR            # RANK, WORLD_SIZE, MASTER_* set
    python hpz_loops_train.py --loop sam,bf16 --out DIR       # several loops, a fresh model each
    python hpz_loops_train.py --loop sam --out DIR --backend zpp   # zpp_torch without zpp-run
    python hpz_loops_train.py --loop sam --out DIR --device cuda   # NCCL (LOCAL_RANK set too)

With the default --backend gloo and no zpp-run it is a pure gloo run (the driver's reference).
With --device cuda the backend is NCCL and each rank's device is cuda:(LOCAL_RANK % the number
of GPUs); where that puts several of the host's ranks on one GPU (LOCAL_WORLD_SIZE above the
number of GPUs: tools/gpu-check.sh's 4 ranks on one), each rank gets its own NCCL_HOSTID, so that
NCCL takes the ranks for separate hosts (docs/architecture.md, "Testing on one GPU"). zpp's
counters then come from the preloaded library (zppGetStats, process-wide: each loop records
them less what they were when it began), or are null when libzpp.so is not preloaded.
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


def parse(loops=LOOPS, doc=__doc__):
    """The arguments; `loops` and `doc`: the script's (this one's, or the DeepSpeed one's)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--loop", required=True,
                        help="one of " + ", ".join(loops) + ", or several separated by commas")
    parser.add_argument("--out", required=True, help="folder of the results (OUT/LOOP/rank.json)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="cpu (gloo or zpp), or cuda (NCCL; libzpp.so preloaded by zpp-run, "
                             "or plain NCCL)")
    parser.add_argument("--backend", choices=("gloo", "zpp", "nccl"),
                        help="on the CPU: gloo (the default: the ordinary script; zpp-run --cpu "
                             "turns it into zpp), or zpp directly (import zpp_torch); on a GPU: "
                             "nccl, the only choice there")
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
    if args.backend is None:
        args.backend = "nccl" if args.device == "cuda" else "gloo"
    if (args.backend == "nccl") != (args.device == "cuda"):
        parser.error(f"--backend {args.backend} does not run on --device {args.device} (cpu: "
                     "gloo or zpp; cuda: nccl)")
    args.loops = [name for name in args.loop.split(",") if name]
    unknown = [name for name in args.loops if name not in loops]
    if unknown or not args.loops:
        parser.error(f"unknown loop {unknown}; the loops: {', '.join(loops)}")
    args.skip = {int(step) for step in args.skip_steps.split(",") if step}
    return args


def make_net(args):
    """The model, unwrapped, with the same full weights on every rank (seeded)."""
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
    return Net(args.blocks, args.width)


def build_model(args, loop, mesh):
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model = make_net(args).to(mesh.device_type)  # drawn on the CPU on either device

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
    random teacher, the same on every rank; drawn on the CPU, then moved to `device`."""

    def __init__(self, args, rank, device="cpu"):
        import torch

        self.args, self.rank, self.device = args, rank, device
        teacher = torch.Generator().manual_seed(args.seed + 1)
        self.teacher = torch.randn(IN_FEATURES, CLASSES, generator=teacher)

    def batch(self, kind, step, micro=0):
        import torch

        key = {"train": 0, "eval": 1}[kind]
        seed = (((self.args.seed * 7 + key) * 1009 + self.rank) * 1009 + step) * 31 + micro
        generator = torch.Generator().manual_seed(seed)
        inputs = torch.randn(self.args.batch, self.args.seq, IN_FEATURES, generator=generator)
        labels = (inputs @ self.teacher).argmax(-1)
        return inputs.to(self.device), labels.to(self.device)


def loss_of(model, batch):
    import torch

    inputs, labels = batch
    logits = model(inputs)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, CLASSES), labels.reshape(-1))


def partition_part(p, tensor):
    """The elements of DeepSpeed ZeRO-3 parameter `p` in a tensor of its partition's shape (its
    ds_tensor, its local gradient): without the padding of the last ranks' partitions, memory no
    gather reads and no one writes as weights (its bits differ from run to run)."""
    import torch.distributed as dist

    size = p.ds_tensor.numel()
    start = dist.get_rank(p.ds_process_group) * size
    return tensor.reshape(-1).narrow(0, 0, max(0, min(size, p.ds_numel - start)))


def local_shards(model):
    """(name, this rank's shard) per parameter; the shards themselves, not copies: FSDP2's local
    tensor (only while the model is resharded: after a no_grad forward FSDP2 leaves the root
    unsharded), or DeepSpeed ZeRO-3's partition (ds_tensor)."""
    shards = []
    for name, p in model.named_parameters():
        if hasattr(p, "ds_tensor"):
            shards.append((name, partition_part(p, p.ds_tensor)))
        elif hasattr(p, "to_local"):
            shards.append((name, p.to_local()))
        else:
            raise RuntimeError(f"{name} is not sharded (reshard the model first)")
    return shards


def shard_bytes(tensor):
    import torch

    flat = tensor.detach().contiguous().view(-1)
    return flat.view(torch.uint8).cpu().numpy().tobytes() if flat.numel() else b""


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
    not run on zpp. An NCCL group's are the preloaded libzpp.so's since count_from_now(group)
    (None without libzpp.so: plain NCCL); zpp_torch is not imported for it."""
    import torch.distributed as dist

    if dist.get_backend(group) == "nccl":
        counting = _PRELOADED.get(group)
        return counting() if counting is not None else None
    try:
        import zpp_torch

        return zpp_torch.stats(group)
    except (ImportError, ValueError):
        return None


# NCCL groups: group -> a reader of the preloaded library's counters since the group's loop began.
_PRELOADED = {}
# The preloaded library's counters that count events (a loop reports them less what they were
# when it began); the others (step_epoch, the peaks) as they are.
COUNTED = ("hpz_hits", "hpz_misses", "hpz_verify_failures", "hpz_skipped_steps", "host_waits")
COUNTED_PER_PATH = ("calls", "input_bytes", "kernel_launches", "collective_launches")


def preloaded_zpp_stats():
    """A reader of zppGetStats of a preloaded libzpp.so (the plugin under NCCL), as
    zpp_torch.stats gives them; None without one: bench/fsdp/train_fsdp2.py's (it loads
    plugin/torch/zpp_torch/_stats.py alone: importing zpp_torch would load the CPU backend's
    library). The counters are the process's, every communicator's since the load."""
    bench = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "bench", "fsdp")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import train_fsdp2

    return train_fsdp2.preloaded_zpp_stats()


def since(now, then):
    """The preloaded library's counters `now` less what they were `then` (a loop's start)."""
    counters = dict(now)
    for key in COUNTED:
        counters[key] = now[key] - then[key]
    for key in COUNTED_PER_PATH:
        counters[key] = {path: value - then[key].get(path, 0) for path, value in now[key].items()}
    return counters


def count_from_now(group):
    """From here on zpp_counters(group), for an NCCL group, gives the preloaded libzpp.so's
    counters less what they are now: the loop's own, though the library counts for the whole
    process. Without libzpp.so (plain NCCL) it gives None."""
    read = preloaded_zpp_stats()
    if read is not None:
        start = read()
        _PRELOADED[group] = lambda: since(read(), start)


def brief(stats):
    if stats is None:
        return None
    return {"hpz_hits": stats.get("hpz_hits"), "hpz_misses": stats.get("hpz_misses"),
            "hpz_verify_failures": stats.get("hpz_verify_failures"),
            "hpz_skipped_steps": stats.get("hpz_skipped_steps"),
            "step_epoch": stats.get("step_epoch")}


def make_optimizer(loop, parameters):
    import torch

    if loop == "inplace_change":
        # Plain SGD: a step whose update is not applied (or whose gradients are zero) leaves the
        # weights exactly as they were, whichever way zpp skips it.
        return torch.optim.SGD(parameters, lr=0.1)
    return torch.optim.AdamW(parameters, lr=2e-3, weight_decay=0.01)


def changes_at(step, rank):
    """inplace_change: (block, value) of each change this rank makes at `step`."""
    return [(block, value) for when, block, ranks, value in INPLACE_CHANGES
            if when == step and (ranks is None or rank in ranks)]


def sam_scale(local_grads, group, rho=0.05):
    """SAM's rho / |g|, |g| over every rank's local gradient shards."""
    import torch
    import torch.distributed as dist

    square = torch.zeros((), dtype=torch.float64,
                         device=local_grads[0].device if local_grads else "cpu")
    for grad in local_grads:
        square += grad.double().pow(2).sum()
    dist.all_reduce(square, group=group)
    return rho / (math.sqrt(square.item()) + 1e-12)


class Recorder:
    """What a loop does around its optimizer steps whatever the framework (FSDP2 here, DeepSpeed
    ZeRO-3 in hpz_loops_deepspeed_train.py): stochastic depth's choice, which shards a step
    changed, the EMA and its evaluation, the validation batches, the records and the result.
    `net`: the model (its blocks, train/eval and local_shards); `forward`: what computes the
    evaluation losses (the FSDP2 model, DeepSpeed's engine); `reshard`: what the framework needs
    after a no_grad forward before the local shards are the weights again."""

    def __init__(self, args, loop, rank, group, net, forward, data, reshard=None):
        self.args, self.loop, self.rank, self.group = args, loop, rank, group
        self.net, self.forward, self.data = net, forward, data
        self.reshard = reshard or (lambda: None)
        self.ema = snapshot(net) if loop == "ema_eval" else None
        self.steps = []
        self.start = time.monotonic()

    def begin(self, step):
        """The step's record; the model in training mode, with this step's skipped blocks."""
        record = {"step": step, "losses": [], "eval_losses": [], "changes": []}
        self.net.train()
        if self.loop == "stochastic_depth" and step % 2 == 1:
            self.net.skip = {(step // 2) % self.args.blocks}
        else:
            self.net.skip = set()
        record["skipped_blocks"] = sorted(self.net.skip)
        return record

    def change_in_place(self, record, step, change):
        """inplace_change: change(block, value) for each change of this rank at `step`."""
        for block, value in changes_at(step, self.rank):
            change(block, value)
            record["changes"].append({"block": block, "value": value})

    def optimizer_step(self, record, take):
        """take() (the optimizer's step, or what drops it); records which shards it changed."""
        import torch

        # The step's training loss: the micro-batches' sum (each already divided by their
        # number), or the first (unperturbed) pass of sam.
        record["loss"] = (sum(record["losses"]) if self.loop == "accumulation"
                          else record["losses"][0])
        before = snapshot(self.net)
        take()
        with torch.no_grad():
            after = [shard for _, shard in local_shards(self.net)]
            record["updated"] = [not torch.equal(a, b) for a, b in zip(before, after)]

    def end(self, record):
        """The EMA, the evaluations of every EVERY-th step, the digest and zpp's counters."""
        import torch

        step, data = record["step"], self.data
        if self.ema is not None:
            with torch.no_grad():
                for average, (_, shard) in zip(self.ema, local_shards(self.net)):
                    average.mul_(0.75).add_(shard, alpha=0.25)
        if self.loop == "ema_eval" and step % EVERY == EVERY - 1:
            with torch.no_grad():
                training = snapshot(self.net)
                for average, (_, shard) in zip(self.ema, local_shards(self.net)):
                    shard.copy_(average)
                record["eval_losses"].append(loss_of(self.forward, data.batch("eval", step)).item())
                self.reshard()
                for kept, (_, shard) in zip(training, local_shards(self.net)):
                    shard.copy_(kept)
        if self.loop == "validation" and step % EVERY == EVERY - 1:
            self.net.eval()
            with torch.no_grad():
                for index in range(3):
                    record["eval_losses"].append(
                        loss_of(self.forward, data.batch("eval", step, index)).item())
            self.reshard()
            self.net.train()
        record["digest"] = digest(self.net)[:16]
        record["stats"] = brief(zpp_counters(self.group))
        self.steps.append(record)
        print(f"rank {self.rank} {self.loop} step {step}: loss {record['losses']} "
              f"eval {record['eval_losses']}", flush=True)

    def result(self):
        import torch
        import torch.distributed as dist

        shards = {}
        for name, shard in local_shards(self.net):
            shards[name] = {"sha256": hashlib.sha256(shard_bytes(shard)).hexdigest(),
                            "finite": bool(torch.isfinite(shard.detach().float()).all()),
                            "numel": shard.numel()}
        return {"loop": self.loop, "rank": self.rank, "world": dist.get_world_size(self.group),
                "backend": dist.get_backend(self.group), "steps": self.steps, "shards": shards,
                "digest": digest(self.net), "skip_steps": sorted(self.args.skip),
                "stats": zpp_counters(self.group), "seconds": time.monotonic() - self.start}


def train_loop(args, loop, rank, world):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh

    # A group of its own per loop: on zpp a fresh communicator, so that what one loop leaves in
    # the engine (hpZ's agreed pattern, reuse turned off after a verification failure) cannot
    # change the next loop's results, and the counters are this loop's alone. The script is
    # otherwise an ordinary gloo one: under zpp-run --cpu this new_group is zpp's too. On a GPU
    # it is an NCCL communicator that a preloaded libzpp.so sees made.
    group = dist.new_group(list(range(world)))
    if args.device == "cuda":
        count_from_now(group)
    mesh = DeviceMesh.from_group(group, args.device)
    model = build_model(args, loop, mesh)
    optimizer = make_optimizer(loop, model.parameters())
    data = Data(args, rank, mesh.device_type)
    # The root stays unsharded after a no_grad forward: resharded before the shards are read.
    recorder = Recorder(args, loop, rank, group, model, model, data, reshard=model.reshard)
    for step in range(args.steps):
        record = recorder.begin(step)
        optimizer.zero_grad()
        if loop == "accumulation":
            micro_batches = 3
            for micro in range(micro_batches):
                model.set_requires_gradient_sync(micro == micro_batches - 1)
                loss = loss_of(model, data.batch("train", step, micro)) / micro_batches
                loss.backward()
                record["losses"].append(loss.item())
        elif loop == "sam":
            loss = loss_of(model, data.batch("train", step))
            loss.backward()
            record["losses"].append(loss.item())
            with torch.no_grad():
                params = [p for p in model.parameters() if p.grad is not None]
                scale = sam_scale([p.grad.to_local() for p in params], group)
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
                with torch.no_grad():
                    recorder.change_in_place(
                        record, step,
                        lambda block, value: model.blocks[block].fc1.weight.to_local().add_(value))
            loss.backward()
            record["losses"].append(loss.item())
        # A step zpp skipped has this reference: no update.
        recorder.optimizer_step(record, optimizer.zero_grad if step in args.skip
                                else optimizer.step)
        recorder.end(record)
    return recorder.result()


def cuda_device(rank):
    """This rank's GPU, cuda:(LOCAL_RANK % the number of GPUs), made current. Where the host's
    ranks outnumber its GPUs (several ranks on one), each rank its own NCCL_HOSTID, as
    tools/gpu-check.sh's parts do (NCCL and zpp read it when a communicator is made)."""
    import torch

    count = torch.cuda.device_count()
    if count == 0:
        raise SystemExit("hpz_loops_train: --device cuda, and torch sees no GPU")
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    if local_size > count:
        os.environ["NCCL_HOSTID"] = f"zpp-hpz-loops-host{rank}"
    device = torch.device("cuda", local_rank % count)
    torch.cuda.set_device(device)
    return device


def main(train=None, loops=LOOPS, doc=__doc__):
    """Runs each loop of the command line with `train` (this script's train_loop by default) and
    writes its results."""
    args = parse(loops, doc)
    train = train or train_loop
    rank = int(os.environ["RANK"])
    if args.device == "cuda":
        # cuBLAS is bitwise reproducible from run to run with a fixed workspace configuration
        # (its documentation); set before CUDA starts. Two runs are compared bitwise.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if args.backend == "zpp":
        import zpp_torch  # noqa: F401 (registers the backend)
    if args.device == "cuda":
        dist.init_process_group("nccl", device_id=cuda_device(rank))
    else:
        dist.init_process_group(args.backend)
    world = dist.get_world_size()
    for loop in args.loops:
        # The driver cuts each rank's output at these lines: a WARN belongs to the loop before.
        print(f"=== hpz loop {loop} begins", flush=True)
        result = train(args, loop, rank, world)
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

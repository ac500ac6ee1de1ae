"""The training loops of hpz_loops_train.py under an unmodified DeepSpeed ZeRO-3 engine: one rank
of an ordinary gloo DeepSpeed script on the CPU (DS_ACCELERATOR=cpu). Under `tools/zpp-run --cpu`
its gloo groups run on zpp's backend with no code change; tests/torch/hpz_loops_test.py
--framework deepspeed starts 4 ranks as 2 simulated nodes of 2 and compares the modes.

    python hpz_loops_deepspeed_train.py --loop ema_eval --out DIR   # RANK, WORLD_SIZE, MASTER_*

The same model, data, seeds, optimizers, records and results as hpz_loops_train.py (its helpers),
wrapped by deepspeed.initialize instead of fully_shard, with bench/deepspeed/train_zero3.py's
ZeRO-3 configuration: stage3_max_live_parameters, stage3_max_reuse_distance and
stage3_prefetch_bucket_size at 0, so that the backward gathers again what the forward gathered
(what hpZ saves), and here also stage3_param_persistence_threshold at 0: every parameter is
partitioned and gathered where it is used (DeepSpeed's default keeps parameters under 1e5
elements, fc1's and fc2's weights among them, gathered for good), so that each partition
(param.ds_tensor) is what the next gather sends. fp32 unless the loop is bf16.

Each loop runs on a process group of its own (dist.new_group), handed to DeepSpeed as its
data-parallel group through a minimal model-parallel unit (mpu) of model-parallel size 1: the
parameters are partitioned and gathered over it and the gradients reduce-scattered over it, so
that under zpp each loop has a fresh communicator, as the FSDP2 script has.

The loops (--loop), as in hpz_loops_train.py but DeepSpeed's way:
  stochastic_depth  on odd steps, block (step // 2) % BLOCKS is skipped
  ema_eval          the EMA of the local partitions (ds_tensor) copied into them after the
                    optimizer step of every third step, a no_grad forward, then the training
                    partitions copied back
  validation        every 3 steps, 3 validation batches under no_grad in eval mode
  sam               two forward/backward passes per step: between them each partition is moved
                    by rho * g / |g| (g: DeepSpeed's local gradient partitions,
                    deepspeed.utils.safe_get_local_grad) and the gradients zeroed
                    (engine.zero_grad: the second pass's gradients are the step's), then the
                    partitions restored before the optimizer step
  accumulation      gradient_accumulation_steps = 3 (engine.backward and engine.step per
                    micro-batch; DeepSpeed steps the optimizer on the third)
  checkpointing     each block's forward under torch.utils.checkpoint (non-reentrant): ZeRO-3
                    gathers the block's weights for the recomputation and again for its backward
  bf16              DeepSpeed's bf16 (bf16 partitions gathered, fp32 master weights, gradients
                    reduce-scattered in fp32: communication_data_type)
  no_reshard        stage3_max_live_parameters and stage3_max_reuse_distance at DeepSpeed's
                    defaults (1e9): once the first step has recorded the parameter trace, each
                    module stays gathered from its forward to its backward (FSDP2's
                    reshard_after_forward=False)
  inplace_change    a block's fc1 partition (ds_tensor) changed in place between the forward
                    and its backward, and DeepSpeed's fp32 master partition with it (so that the
                    change stays, as FSDP2's does): on every rank at step 4, on rank 2 alone at
                    step 7 (plain SGD)
A step zpp skipped has its reference in --skip-steps: the optimizer's gradients dropped in a
pre-step hook of the torch optimizer DeepSpeed wraps, as zpp's step guard drops them.
"""
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "deepspeed"))
import hpz_loops_train as common  # noqa: E402 (its model, data, records; torch not imported)

LOOPS = common.LOOPS  # every one of them, written for DeepSpeed
MICRO_BATCHES = 3


class LoopGroup:
    """DeepSpeed's model-parallel unit for one loop: data parallelism over `group` (every rank),
    no model parallelism (a model-parallel group of None is DeepSpeed's 'absent')."""

    def __init__(self, group):
        self.group = group

    def get_data_parallel_group(self):
        return self.group

    def get_data_parallel_world_size(self):
        import torch.distributed as dist

        return dist.get_world_size(self.group)

    def get_data_parallel_rank(self):
        import torch.distributed as dist

        return dist.get_rank(self.group)

    def get_data_parallel_group_ranks(self):
        return list(range(self.get_data_parallel_world_size()))

    def get_model_parallel_world_size(self):
        return 1

    def get_model_parallel_rank(self):
        return 0

    def get_model_parallel_group(self):
        return None


def ds_config(args, loop):
    """bench/deepspeed/train_zero3.py's ZeRO-3 configuration for this model and loop."""
    import argparse

    import train_zero3  # bench/deepspeed

    config = train_zero3.ds_config(argparse.Namespace(
        batch=args.batch, reduce_bucket=int(5e8), sub_group_size=int(1e9), ds_hpz=1,
        ds_zeropp=0, dtype="bf16" if loop == "bf16" else "fp32"))
    zero = config["zero_optimization"]
    zero["stage3_param_persistence_threshold"] = 0  # (docstring)
    if loop == "no_reshard":
        zero["stage3_max_live_parameters"] = zero["stage3_max_reuse_distance"] = int(1e9)
    config["gradient_accumulation_steps"] = MICRO_BATCHES if loop == "accumulation" else 1
    config["zero_allow_untested_optimizer"] = True  # torch's SGD (inplace_change)
    return config


def train_loop(args, loop, rank, world):
    import deepspeed
    import torch
    import torch.distributed as dist
    from deepspeed.utils import (safe_get_local_fp32_param, safe_get_local_grad,
                                 safe_set_local_fp32_param)

    group = dist.new_group(list(range(world)))  # the loop's own (docstring)
    net = common.make_net(args)
    net.checkpointing = loop == "checkpointing"
    optimizer = common.make_optimizer(loop, net.parameters())
    dropping = []  # not empty: the next optimizer step is the reference of a step zpp skipped

    def drop_gradients(inner, *_args, **_kwargs):
        if dropping:
            for group_of_parameters in inner.param_groups:
                for parameter in group_of_parameters["params"]:
                    parameter.grad = None

    optimizer.register_step_pre_hook(drop_gradients)
    engine, _, _, _ = deepspeed.initialize(model=net, optimizer=optimizer,
                                           config=ds_config(args, loop), mpu=LoopGroup(group))
    dtype = torch.bfloat16 if loop == "bf16" else torch.float32

    def forward(inputs):
        return engine(inputs.to(dtype))

    data = common.Data(args, rank)
    recorder = common.Recorder(args, loop, rank, group, net, forward, data)

    def change(block, value):
        weight = net.blocks[block].fc1.weight
        weight.ds_tensor.add_(value)
        safe_set_local_fp32_param(weight, safe_get_local_fp32_param(weight) + value)

    for step in range(args.steps):
        record = recorder.begin(step)
        if loop == "accumulation":
            for micro in range(MICRO_BATCHES):
                loss = common.loss_of(forward, data.batch("train", step, micro))
                engine.backward(loss)  # scaled by 1 / gradient_accumulation_steps
                record["losses"].append(loss.item() / MICRO_BATCHES)
                if micro < MICRO_BATCHES - 1:
                    engine.step()  # not the boundary: no optimizer step
        elif loop == "sam":
            loss = common.loss_of(forward, data.batch("train", step))
            engine.backward(loss)
            record["losses"].append(loss.item())
            with torch.no_grad():
                params = list(net.parameters())
                grads = [common.partition_part(p, safe_get_local_grad(p)) for p in params]
                scale = common.sam_scale(grads, group)
                kept = [p.ds_tensor.clone() for p in params]
                for p, grad in zip(params, grads):
                    common.partition_part(p, p.ds_tensor).add_(grad.to(p.ds_tensor.dtype),
                                                               alpha=scale)
            engine.zero_grad()
            loss = common.loss_of(forward, data.batch("train", step))
            engine.backward(loss)
            record["losses"].append(loss.item())
            with torch.no_grad():
                for p, before in zip(params, kept):
                    p.ds_tensor.copy_(before)
        else:
            loss = common.loss_of(forward, data.batch("train", step))
            if loop == "inplace_change":
                with torch.no_grad():
                    recorder.change_in_place(record, step, change)
            engine.backward(loss)
            record["losses"].append(loss.item())
        dropping[:] = [True] if step in args.skip else []
        recorder.optimizer_step(record, engine.step)
        dropping.clear()
        recorder.end(record)
    result = recorder.result()
    engine.destroy()
    return result


if __name__ == "__main__":
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    sys.exit(common.main(train_loop, LOOPS, __doc__))

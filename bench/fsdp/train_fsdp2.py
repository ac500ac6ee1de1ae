"""A small GPT-like model trained with FSDP2 (fully_shard): the unmodified framework that zpp's
GPU check runs four ways (plain NCCL; zpp-run --qwz; --qwz --hpz; --preset zero++).

Synthetic tokens, fixed seed, 100 steps; rank 0 writes one CSV line per step (step, loss). With
--one-gpu every rank uses GPU 0 and its own NCCL_HOSTID, so that NCCL treats the ranks as
separate hosts (DESIGN.md, "Testing on a machine with one GPU").

    torchrun --nproc-per-node 4 bench/fsdp/train_fsdp2.py --one-gpu --csv loss.csv
"""
import argparse
import ctypes
import os


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--one-gpu", action="store_true", help="all ranks on GPU 0")
    parser.add_argument("--csv", default="loss.csv")
    return parser.parse_args()


def main():
    args = parse()
    rank = int(os.environ["RANK"])
    if args.one_gpu:
        os.environ["NCCL_HOSTID"] = f"zpp-fsdp-host{rank}"  # before NCCL starts
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.fsdp import fully_shard

    device = torch.device("cuda", 0 if args.one_gpu else int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(args.seed)

    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.norm1 = nn.LayerNorm(width)
            self.attn = nn.MultiheadAttention(width, 4, batch_first=True)
            self.norm2 = nn.LayerNorm(width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                     nn.Linear(4 * width, width))

        def forward(self, x):
            h = self.norm1(x)
            mask = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.norm2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(args.vocab, args.width)
            self.blocks = nn.ModuleList(Block(args.width) for _ in range(args.layers))
            self.head = nn.Linear(args.width, args.vocab)

        def forward(self, tokens):
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    model = Gpt().to(device)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    parameters = sum(p.numel() for p in model.parameters())  # DTensors: global sizes
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    generator = torch.Generator(device="cpu").manual_seed(args.seed + rank)
    # A learnable synthetic language: each token is the previous one plus one, modulo vocab.
    lines = []
    for step in range(args.steps):
        start = torch.randint(0, args.vocab, (args.batch, 1), generator=generator)
        tokens = ((start + torch.arange(args.seq + 1)) % args.vocab).to(device)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab),
                                           tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        lines.append(f"{step},{total.item() / dist.get_world_size():.6f}")
    if rank == 0:
        with open(args.csv, "w") as out:
            out.write("step,loss\n" + "\n".join(lines) + "\n")
        print(f"parameters {parameters}, final loss {lines[-1].split(',')[1]}")
        try:
            zpp = ctypes.CDLL(None)
            epoch = ctypes.c_uint64(0)
            zpp.zppGetStepEpoch(ctypes.byref(epoch))
            print(f"zpp step epoch {epoch.value}")
        except (OSError, AttributeError):
            print("zpp not loaded")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

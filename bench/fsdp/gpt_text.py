"""The model and the data every zpp training run uses, on the CPU and on a GPU alike.

Text: real English prose and verse from Debian's `fortunes` package (installed by
tools/install-deps.sh; nothing is downloaded at run time): every plain-text file under
/usr/share/games/fortunes except ascii-art, in name order, with the `%` separator lines dropped,
about 2.3 MB. Tokens are bytes (vocabulary 256), so no tokenizer is needed.

Model: a GPT (learned positions, pre-norm blocks of causal self-attention and a 4x MLP, untied
head); the defaults give 4 blocks of width 256 and 3.3M parameters. It computes in fp32 whatever
the parameters' dtype: under FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16) the weights are
gathered and used as bf16 values, but every matmul runs in fp32, because this project's CPUs
have no bf16 arithmetic (bf16 matmuls measured 27x slower than fp32 here).
"""
import os

import torch
from torch import nn
from torch.nn import functional

# ZPP_CORPUS_DIR: a copy of the fortunes folder, where the machine has no `fortunes` package
# (the GPU machine's image: tools/gpu-stage.sh carries one).
CORPUS_DIR = os.environ.get("ZPP_CORPUS_DIR", "/usr/share/games/fortunes")
_NOT_PROSE = {"ascii-art"}
VOCAB = 256


def add_run_arguments(parser):
    """The flags every training script over this model and text shares (FSDP2, DeepSpeed)."""
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--backend", help="process group backend (default: nccl on cuda, zpp on "
                        "cpu)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8, help="sequences per rank and step")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=20, help="steps of linear warm-up")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--one-gpu", action="store_true", help="all ranks on GPU 0")
    parser.add_argument("--csv", default="loss.csv")
    parser.add_argument("--stats-dir", help="per-rank zpp stats after every step")
    parser.add_argument("--pg-timeout", type=float,
                        help="init_process_group's timeout, seconds (default: torch's)")


def write_run(args, rank, world, lines, per_step):
    """Every rank's counters (stats<rank>.json under --stats-dir, when there are any), and rank
    0's loss CSV (step, mean loss over ranks, bench/quantities.py's StepClock seconds)."""
    if per_step:
        import json

        os.makedirs(args.stats_dir, exist_ok=True)
        with open(os.path.join(args.stats_dir, f"stats{rank}.json"), "w") as out:
            json.dump({"rank": rank, "world": world, "steps": per_step}, out)
    if rank == 0:
        with open(args.csv, "w") as out:
            out.write("step,loss,seconds\n" + "\n".join(lines) + "\n")


def load_corpus(directory=CORPUS_DIR):
    """The corpus as one uint8 tensor."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory} is missing: install Debian's `fortunes` package "
                                "(tools/install-deps.sh does)")
    names = sorted(name for name in os.listdir(directory)
                   if "." not in name and name not in _NOT_PROSE
                   and not os.path.islink(os.path.join(directory, name)))
    text = bytearray()
    for name in names:
        with open(os.path.join(directory, name), "rb") as source:
            for line in source:
                if line.strip() != b"%":
                    text += line
    if not text:
        raise FileNotFoundError(f"no fortune files under {directory}")
    return torch.frombuffer(text, dtype=torch.uint8).clone()


class Batches:
    """Deterministic batches: step s of rank r reads the same windows in every run and mode."""

    def __init__(self, corpus, batch, seq, seed, rank):
        self.corpus = corpus.long()
        self.batch = batch
        self.seq = seq
        self.seed = seed
        self.rank = rank

    def get(self, step):
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + step * 1009 + self.rank)
        starts = torch.randint(0, self.corpus.numel() - self.seq - 1, (self.batch,),
                               generator=generator)
        windows = torch.stack([self.corpus[s:s + self.seq + 1] for s in starts.tolist()])
        return windows[:, :-1], windows[:, 1:]


def _linear(layer, x):
    return functional.linear(x, layer.weight.to(x.dtype), layer.bias.to(x.dtype))


def _norm(layer, x):
    return functional.layer_norm(x, layer.normalized_shape, layer.weight.to(x.dtype),
                                 layer.bias.to(x.dtype), layer.eps)


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x.float()  # FSDP2 may hand a block bf16 inputs (MixedPrecisionPolicy)
        batch, seq, width = x.shape
        q, k, v = _linear(self.qkv, _norm(self.norm1, x)).split(width, dim=2)
        q, k, v = (t.view(batch, seq, self.heads, width // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + _linear(self.proj, attended.transpose(1, 2).reshape(batch, seq, width))
        hidden = functional.gelu(_linear(self.fc1, _norm(self.norm2, x)))
        return x + _linear(self.fc2, hidden)


class Gpt(nn.Module):
    def __init__(self, layers=4, width=256, heads=4, seq=64):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.position = nn.Parameter(torch.zeros(seq, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, VOCAB)
        nn.init.normal_(self.position, std=0.02)

    def forward(self, tokens):
        x = self.embed(tokens).float() + self.position[: tokens.shape[1]].float()
        for block in self.blocks:
            x = block(x)
        return _linear(self.head, _norm(self.norm, x))


def loss_of(model, inputs, targets):
    logits = model(inputs)
    return functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))

"""A torch.distributed backend that wraps another (gloo by default) and counts the bytes each
rank would send across simulated nodes: the yardstick for DeepSpeed's own hpZ, which runs over
gloo where zpp's engine cannot count for it.

    backend = counted_backend.register("gloo")      # -> "counted_gloo"
    deepspeed.init_distributed(dist_backend=backend)
    counted_backend.snapshot()                       # this rank's counters, all groups

Nodes are simulated as zpp's CPU backend simulates them: global rank r is on node
r // ZPP_LOCAL_SIZE. Every collective of every process group (DeepSpeed's hpZ gathers over a
group of the ranks of one node) is counted with the ring model zpp's engine uses for its own
counts (src/sim/sim_backend.cc, CountRing): this rank's piece enters every other node of the
group once, then spreads inside each node. For a group G and this rank's node n:

    inter-node bytes = piece x |{node(g) : g in G} - {n}|
    intra-node bytes = piece x (|G| - 1 - |{node(g) : g in G} - {n}|)

with piece = this rank's input for an all-gather, its output chunk for a reduce-scatter. zpp
counts all-gathers and reduce-scatters only (its all-reduce and broadcast are not its plans), so
`sent_bytes` here does too; all-reduces (piece = 2 x bytes / |G|, a ring reduce-scatter then
all-gather) and broadcasts (the root's bytes, by the root) are kept apart under `other_ops`.
"""
import os
import threading

import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend

_lock = threading.Lock()
_ops = {}  # op name -> {"calls", "bytes", "inter_node", "intra_node"}
_groups = {}  # "ranks 0,1" -> {"calls", "inter_node"}
_COUNTED_OPS = ("all_gather", "reduce_scatter")


def _local_size():
    value = os.environ.get("ZPP_LOCAL_SIZE")
    if not value:
        raise RuntimeError("counted backend: set ZPP_LOCAL_SIZE (ranks per simulated node)")
    return int(value)


def _bytes(tensor):
    return tensor.numel() * tensor.element_size()


def _given(opts):
    """The options torch passed, as arguments for the inner backend (none when torch gave none)."""
    return () if opts is None else (opts,)


class CountedBackend(_C10dBackend):
    """Forwards every collective to `inner` and counts it first."""

    def __init__(self, inner, rank, global_ranks):
        super().__init__(rank, len(global_ranks))
        self._inner = inner
        local = _local_size()
        me = global_ranks[rank]
        nodes = {g // local for g in global_ranks}
        self._other_nodes = len(nodes - {me // local})
        self._size = len(global_ranks)
        self._name = "ranks " + ",".join(str(g) for g in global_ranks)

    def getBackendName(self):  # noqa: N802 (torch's name)
        return "counted_gloo"

    def _count(self, op, piece):
        inter = piece * self._other_nodes
        intra = piece * (self._size - 1 - self._other_nodes)
        with _lock:
            entry = _ops.setdefault(op, {"calls": 0, "bytes": 0, "inter_node": 0,
                                         "intra_node": 0})
            entry["calls"] += 1
            entry["bytes"] += piece
            entry["inter_node"] += inter
            entry["intra_node"] += intra
            group = _groups.setdefault(f"{op} over {self._name}", {"calls": 0, "inter_node": 0})
            group["calls"] += 1
            group["inter_node"] += inter

    # ---- all-gathers: piece = this rank's input --------------------------------------------

    def all_gather_single(self, output, input_, opts=None):
        self._count("all_gather", _bytes(input_))
        return self._inner._allgather_base(output, input_, *_given(opts))

    _allgather_base = all_gather_single

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for input_ in inputs:
            self._count("all_gather", _bytes(input_))
        return self._inner.allgather_into_tensor_coalesced(outputs, inputs,
                                                           *_given(opts))

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def allgather(self, output_lists, inputs, opts=None):
        for input_ in inputs:
            self._count("all_gather", _bytes(input_))
        return self._inner.allgather(output_lists, inputs, *_given(opts))

    # ---- reduce-scatters: piece = this rank's output chunk ----------------------------------

    def reduce_scatter_single(self, output, input_, opts):
        self._count("reduce_scatter", _bytes(output))
        return self._inner._reduce_scatter_base(output, input_, opts)

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts):
        for output in outputs:
            self._count("reduce_scatter", _bytes(output))
        return self._inner.reduce_scatter_tensor_coalesced(outputs, inputs, opts)

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    def reduce_scatter(self, outputs, input_lists, opts):
        for output in outputs:
            self._count("reduce_scatter", _bytes(output))
        return self._inner.reduce_scatter(outputs, input_lists, opts)

    # ---- the rest: counted apart -------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        for tensor in tensors:
            self._count("all_reduce", 2 * _bytes(tensor) // self._size)
        return self._inner.allreduce(tensors, *_given(opts))

    def allreduce_coalesced(self, tensors, opts=None):
        for tensor in tensors:
            self._count("all_reduce", 2 * _bytes(tensor) // self._size)
        return self._inner.allreduce_coalesced(tensors, *_given(opts))

    def broadcast(self, tensors, opts):
        if opts.rootRank == self.rank():
            for tensor in tensors:
                self._count("broadcast", _bytes(tensor))
        return self._inner.broadcast(tensors, opts)

    def barrier(self, opts=None):
        return self._inner.barrier(*_given(opts))


def snapshot():
    """This rank's counts so far, in the shape of zpp's stats where they overlap."""
    with _lock:
        counted = [v for k, v in _ops.items() if k in _COUNTED_OPS]
        return {
            "sent_bytes": {"intra_node": sum(v["intra_node"] for v in counted),
                           "inter_node": sum(v["inter_node"] for v in counted),
                           "inter_rack": 0},
            "ops": {k: dict(v) for k, v in _ops.items() if k in _COUNTED_OPS},
            "other_ops": {k: dict(v) for k, v in _ops.items() if k not in _COUNTED_OPS},
            "groups": {k: dict(v) for k, v in _groups.items()},
        }


def register(inner="gloo"):
    """Registers `counted_<inner>` (CPU) and returns its name. Only gloo is wrapped today."""
    if inner != "gloo":
        raise ValueError(f"counted backend: wraps gloo only, not {inner!r}")
    name = "counted_gloo"

    def create(options, _backend_options):
        gloo = dist.ProcessGroupGloo(options.store, options.group_rank, options.group_size,
                                     options.timeout)
        # The default group's list is empty: its ranks are 0..size-1.
        ranks = list(options.global_ranks_in_group) or list(range(options.group_size))
        return CountedBackend(gloo, options.group_rank, ranks)

    if name.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(name, create, extended_api=True, devices=["cpu"])
    return name

"""zpp as a torch.distributed backend for CPU tensors.

    import zpp_torch                      # registers the backend "zpp" for the cpu device
    torch.distributed.init_process_group("zpp")   # or "cpu:zpp"

All-gathers and reduce-scatters run through zpp's engine (the planner, plans, codecs, fence and
hpZ cache of the LD_PRELOAD plugin, with the same ZPP_* variables and stats) on processes bound
over UCX; all-reduce, broadcast, list all-gather and barrier are exact. The ranks bootstrap
through the store torch hands the backend; ZPP_LOCAL_SIZE (or ZPP_NODE_ID) groups them into
simulated nodes.
"""
from ._library import ZppError
from .backend import ZppBackend, process_stats, register, stats
from .epoch import advance as step_epoch_advance
from .epoch import current as step_epoch

__all__ = ["ZppBackend", "ZppError", "process_stats", "register", "stats", "step_epoch",
           "step_epoch_advance"]

register()

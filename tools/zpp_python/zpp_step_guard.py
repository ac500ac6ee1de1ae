"""hpZ's step guard: an optimizer pre-step hook that skips, on every rank, a step in which an hpZ
check failed (docs/architecture.md, "hpZ's pairing"), as torch's GradScaler skips a step that
overflowed.

A failed check (a weight changed in place between its forward and its backward) sent NaN in
place of a secondary partition on its node, and other nodes may have received a stale shard:
that step's gradients are wrong. Before the step the guard reads every source's cumulative
counters (libzpp.so's communicators, the zpp torch backend's), agrees across the ranks with one
all-reduce of three integers, and where any rank failed or the ranks' choices differed it drops
every gradient of the optimizer, so that the step changes nothing, and says so (a WARN from
zppHpzStepSkipped, counted in hpz_skipped_steps). Reuse goes on from the next step.

One module for the LD_PRELOAD plugin (installed by zpp-run's sitecustomize) and the CPU backend
(zpp_torch), installed once per process whoever comes first. It runs only while ZPP_HPZ is on.
"""
import ctypes

_sources = []  # callables: () -> (failures, choices), cumulative
_library = None  # libzpp.so
_last = (0, 0)
_installed = False


def add_source(read):
    """Another source of cumulative (failures, choices): the CPU backend's communicators."""
    _sources.append(read)


def _libzpp_checks():
    enabled = ctypes.c_int(0)
    failures, choices = ctypes.c_uint64(0), ctypes.c_uint64(0)
    if _library.zppHpzChecks(ctypes.byref(enabled), ctypes.byref(failures),
                             ctypes.byref(choices)) != 0:
        return False, 0, 0
    return bool(enabled.value), failures.value, choices.value


def _totals():
    enabled, failures, choices = _libzpp_checks()
    for read in _sources:
        more_failures, more_choices = read()
        failures += more_failures
        choices += more_choices
    return enabled, failures, choices


def _agreement_device(dist):
    import torch

    backend = str(dist.get_backend()).lower()
    if "nccl" in backend and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _before_step(optimizer, *_args, **_kwargs):
    global _last
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return
    if not _libzpp_checks()[0]:
        return  # ZPP_HPZ is off: nothing to guard, no wait
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        # The hits' checks ran on the collective streams, before the backward that used them.
        torch.cuda.current_stream().synchronize()
    _, failures, choices = _totals()
    fresh = (failures - _last[0], choices - _last[1])
    _last = (failures, choices)
    seen = torch.tensor([fresh[0], fresh[1], -fresh[1]], dtype=torch.int64,
                        device=_agreement_device(dist))
    dist.all_reduce(seen, op=dist.ReduceOp.MAX)
    failed, most, least = (int(v) for v in seen.tolist())
    if failed == 0 and most == -least:
        return
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            parameter.grad = None
    epoch = ctypes.c_uint64(0)
    _library.zppGetStepEpoch(ctypes.byref(epoch))
    _library.zppHpzStepSkipped(epoch.value, failed)


def install(library, register_pre_hook=None):
    """Registers the pre-step hook once per process; `library` is libzpp.so (ctypes);
    `register_pre_hook`, torch.optim.optimizer's (given while that module is being imported)."""
    global _installed, _library
    if _installed:
        return
    _installed = True
    _library = library
    library.zppHpzChecks.argtypes = [ctypes.POINTER(ctypes.c_int),
                                     ctypes.POINTER(ctypes.c_uint64),
                                     ctypes.POINTER(ctypes.c_uint64)]
    library.zppHpzChecks.restype = ctypes.c_int
    library.zppHpzStepSkipped.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    library.zppHpzStepSkipped.restype = ctypes.c_int
    library.zppGetStepEpoch.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
    library.zppGetStepEpoch.restype = ctypes.c_int
    if register_pre_hook is None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook as register_pre_hook
    register_pre_hook(_before_step)

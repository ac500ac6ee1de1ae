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
import functools

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


def _agreed_trouble():
    """Every rank's checks since the last look, agreed in one all-reduce: (failures on any rank,
    whether the ranks' choices differed), or None where there is nothing to guard (no process
    group of two ranks, or ZPP_HPZ off: then no wait either)."""
    global _last
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    if not _libzpp_checks()[0]:
        return None
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
    return failed, most != -least


def _skipped(failed):
    epoch = ctypes.c_uint64(0)
    _library.zppGetStepEpoch(ctypes.byref(epoch))
    _library.zppHpzStepSkipped(epoch.value, failed)


def _before_step(optimizer, *_args, **_kwargs):
    trouble = _agreed_trouble()
    if trouble is None or trouble == (0, False):
        return
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            parameter.grad = None
    _skipped(trouble[0])


def step_ended():
    """The framework's step ended, whether it stepped its torch optimizer or not. DeepSpeed skips
    it when its gradients hold NaN, as a failed check leaves them, on every rank (its overflow
    check is agreed): the failures seen by then were that skipped step's, and must not skip the
    next one. Where the torch optimizer did step, the pre-step hook has looked already."""
    if _library is None:
        return
    trouble = _agreed_trouble()
    if trouble is not None and trouble[0] > 0:
        _skipped(trouble[0])


def settle_after_step(optimizer_class):
    """Wraps a framework optimizer's step (DeepSpeed's ZeRO-3 one) so that step_ended runs after
    it, stepped or skipped."""
    step = optimizer_class.step

    @functools.wraps(step)
    def step_then_settle(self, *args, **kwargs):
        try:
            return step(self, *args, **kwargs)
        finally:
            step_ended()

    optimizer_class.step = step_then_settle


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

"""hpZ's step guard: an optimizer pre-step hook that skips, on every rank, a step in which an hpZ
check failed (docs/architecture.md, "hpZ's pairing"), as torch's GradScaler skips a step that
overflowed.

A failed check (a weight changed in place between its forward and its backward) sent NaN in
place of a secondary partition on its node, and other nodes may have received a stale shard:
that step's gradients are wrong. Before the step the guard reads every source's cumulative
counters (libzpp.so's communicators, the zpp torch backend's), agrees across the ranks with one
all-reduce of one integer, and where any rank failed it drops every gradient of the optimizer,
so that the step changes nothing, and says so (a WARN from zppHpzStepSkipped, counted in
hpz_skipped_steps). Reuse goes on from the next step. Ranks whose hits chose different fills
(a stale shard without NaN) are reported by the epoch record, per communicator, not here.

Every optimizer step is then a collective while a communicator runs hpZ: a script that steps an
optimizer on some ranks only must not run under hpZ. Several torch optimizers stepped one after
another in one training step: the first takes the decision, the others are not guarded.

One module for the LD_PRELOAD plugin (installed by zpp-run's sitecustomize) and the CPU backend
(zpp_torch), installed once per process whoever comes first. It runs only where a communicator
runs hpZ.
"""
import ctypes
import functools

_sources = []  # callables: () -> (enabled, failures), failures cumulative
_library = None  # libzpp.so
_last_failures = 0
_framework_step = None  # inside a wrapped framework step: the decision taken before it
_installed = False


def add_source(read):
    """Another source of (enabled, cumulative failures): the CPU backend's communicators."""
    _sources.append(read)


def _libzpp_checks():
    enabled = ctypes.c_int(0)
    failures, choices = ctypes.c_uint64(0), ctypes.c_uint64(0)
    if _library.zppHpzChecks(ctypes.byref(enabled), ctypes.byref(failures),
                             ctypes.byref(choices)) != 0:
        return False, 0
    return bool(enabled.value), failures.value


def _totals():
    enabled, failures = _libzpp_checks()
    for read in _sources:
        more_enabled, more_failures = read()
        enabled |= more_enabled
        failures += more_failures
    return enabled, failures


def _agreement_device(dist):
    import torch

    backend = str(dist.get_backend()).lower()
    if "nccl" in backend and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _agreed_failures():
    """Every rank's failed checks since the last look, agreed in one all-reduce: the most any
    rank saw (0: none), or None where there is nothing to guard. Whether to agree depends only on
    what every rank shares: a process group of two ranks or more, and a communicator that runs
    hpZ (its settings are the ones all ranks agreed on; a rank whose ZPP_HPZ differs runs none)."""
    global _last_failures
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    if not _totals()[0]:
        return None  # no hpZ: nothing to guard, no wait
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        # The hits' checks ran on the collective streams, before the backward that used them.
        torch.cuda.current_stream().synchronize()
    _, failures = _totals()
    # A destroyed communicator leaves the sums: never a negative count.
    fresh = max(0, failures - _last_failures)
    _last_failures = failures
    seen = torch.tensor([fresh], dtype=torch.int64, device=_agreement_device(dist))
    dist.all_reduce(seen, op=dist.ReduceOp.MAX)
    return int(seen.item())


def _skipped(failed):
    epoch = ctypes.c_uint64(0)
    _library.zppGetStepEpoch(ctypes.byref(epoch))
    _library.zppHpzStepSkipped(epoch.value, failed)


def _drop_gradients(optimizer):
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            parameter.grad = None


def _before_step(optimizer, *_args, **_kwargs):
    if _framework_step is not None:  # decided before the framework's step, for all its calls
        if _framework_step:
            _drop_gradients(optimizer)
        return
    failed = _agreed_failures()
    if failed:
        _drop_gradients(optimizer)
        _skipped(failed)


def settle_after_step(optimizer_class):
    """Wraps a framework optimizer's step (DeepSpeed's ZeRO-3 one) so that the guard decides once
    before it: DeepSpeed steps its torch optimizer once per sub-group, or not at all when its
    gradients overflow (as a failed check leaves them), and every one of those calls, or none,
    belongs to this step."""
    step = optimizer_class.step

    @functools.wraps(step)
    def step_decided_first(self, *args, **kwargs):
        global _framework_step
        if _library is None or _framework_step is not None:
            return step(self, *args, **kwargs)
        failed = _agreed_failures()
        _framework_step = bool(failed)
        if failed:
            _skipped(failed)
        try:
            return step(self, *args, **kwargs)
        finally:
            _framework_step = None

    optimizer_class.step = step_decided_first


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

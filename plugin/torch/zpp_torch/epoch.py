"""The step epoch: hpZ may reuse a secondary partition only within one optimizer step.

libzpp_cpu.so reads libzpp.so's epoch. Under tools/zpp-run, libzpp.so is preloaded and zpp-run's
sitecustomize already advances it after every optimizer step; otherwise this registers the same
global optimizer post-step hook, once per process, so an unmodified script needs nothing more.
"""
import ctypes
import sys

from ._library import library_path

_installed = False


def _preloaded_libzpp():
    try:
        library = ctypes.CDLL(None)
        library.zppStepEpochAdvance  # noqa: B018 (a lookup: AttributeError when absent)
        return library
    except (OSError, AttributeError):
        return None


def libzpp():
    """The libzpp.so whose epoch the engine reads: the preloaded one, else the one beside
    libzpp_cpu.so (already loaded as its dependency)."""
    library = _preloaded_libzpp() or ctypes.CDLL(library_path("libzpp.so"))
    library.zppStepEpochAdvance.argtypes = [ctypes.c_void_p]
    library.zppStepEpochAdvance.restype = ctypes.c_int
    library.zppGetStepEpoch.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
    library.zppGetStepEpoch.restype = ctypes.c_int
    return library


def advance():
    """Ends a step by hand (what the hook does); returns the new epoch."""
    epoch = ctypes.c_uint64(0)
    libzpp().zppStepEpochAdvance(ctypes.byref(epoch))
    return epoch.value


def current():
    epoch = ctypes.c_uint64(0)
    libzpp().zppGetStepEpoch(ctypes.byref(epoch))
    return epoch.value


def install_step_hook(drain=None, hpz_checks=None):
    """The epoch hook (unless zpp-run's advances the epoch already), then the step's end for
    ZPP_PROGRESS: hooks run in the order they were registered, so the epoch has advanced by then
    whichever hook advanced it. `drain`, before every step: the backend's collectives run on
    worker threads, and each must run in the epoch of the step that issued it. `hpz_checks`: the
    backend's hpZ counters, read by hpZ's step guard (zpp_step_guard, once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    import zpp_step_guard  # copied beside zpp_torch (build/python), or zpp-run's

    zpp_step_guard.install(libzpp())
    if hpz_checks is not None:
        zpp_step_guard.add_source(hpz_checks)
    from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                       register_optimizer_step_pre_hook)

    if drain is not None:
        register_optimizer_step_pre_hook(lambda *_args, **_kwargs: drain())

    zpp_run = sys.modules.get("sitecustomize")
    if _preloaded_libzpp() is None or getattr(zpp_run, "_zpp", None) is None:
        library = libzpp()
        register_optimizer_step_post_hook(
            lambda *_args, **_kwargs: library.zppStepEpochAdvance(None))
    from ._library import LIB

    register_optimizer_step_post_hook(lambda *_args, **_kwargs: LIB.zppCpuStepEnded())

"""zpp's step-epoch hook for unmodified PyTorch training scripts (installed by zpp-run).

hpZ may reuse the secondary partition of a weight only within one step: the step epoch must
advance after every optimizer step. When the program imports torch.optim, this registers a
global optimizer post-step hook that calls zppStepEpochAdvance() in the preloaded libzpp.so.
Nothing happens in programs that never import torch, and torch is never imported here.
"""
import ctypes
import importlib.abc
import importlib.util
import sys

_WATCHED = "torch.optim.optimizer"


def _advance_epoch(*_args, **_kwargs):
    _zpp.zppStepEpochAdvance(None)


def _install(module):
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is None:
        sys.stderr.write("zpp: torch.optim has no register_optimizer_step_post_hook; "
                         "hpZ reuse stays off (call zppStepEpochAdvance yourself)\n")
        return
    register(_advance_epoch)


class _LoaderWrapper(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _install(module)


class _WatchOptimizer(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _WATCHED:
            return None
        sys.meta_path.remove(self)  # find the real module, once
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderWrapper(spec.loader)
        return spec


def _load_zpp():
    try:
        library = ctypes.CDLL(None)  # LD_PRELOAD put libzpp.so in the global scope
        library.zppStepEpochAdvance.argtypes = [ctypes.c_void_p]
        library.zppStepEpochAdvance.restype = ctypes.c_int
        return library
    except (OSError, AttributeError):
        return None


_zpp = _load_zpp()
if _zpp is not None:
    if _WATCHED in sys.modules:
        _install(sys.modules[_WATCHED])
    else:
        sys.meta_path.insert(0, _WatchOptimizer())

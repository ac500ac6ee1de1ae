"""zpp's hooks for unmodified PyTorch training scripts (installed by zpp-run).

The step epoch: hpZ may reuse the secondary partition of a weight only within one step, so the
step epoch must advance after every optimizer step. When the program imports torch.optim, this
registers a global optimizer post-step hook that calls zppStepEpochAdvance() in the preloaded
libzpp.so, and hpZ's step guard (zpp_step_guard.py), a pre-step hook.

The CPU switch (zpp-run --cpu, ZPP_TORCH_CPU=1): when the program imports torch.distributed,
every process group it asks of gloo for CPU tensors is made with the `zpp` backend instead
(zpp_torch), which runs the all-gathers and reduce-scatters through zpp's engine and hands every
other collective to an inner gloo group. The script keeps its init_process_group("gloo").

Nothing happens in programs that never import torch, and torch is never imported here.
"""
import ctypes
import importlib.abc
import importlib.util
import os
import sys

_OPTIMIZER = "torch.optim.optimizer"
_C10D = "torch.distributed.distributed_c10d"
_DEEPSPEED_ZERO3 = "deepspeed.runtime.zero.stage3"


def _advance_epoch(*_args, **_kwargs):
    _zpp.zppStepEpochAdvance(None)


def _install_step_hook(module):
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is None:
        sys.stderr.write("zpp: torch.optim has no register_optimizer_step_post_hook; "
                         "hpZ reuse stays off (call zppStepEpochAdvance yourself)\n")
        return
    register(_advance_epoch)
    import zpp_step_guard  # beside this file

    zpp_step_guard.install(_zpp, module.register_optimizer_step_pre_hook)


def _zpp_for_gloo(backend, cuda_available):
    """The backend string with the CPU's gloo replaced by zpp: "gloo" -> "zpp" (and gloo stays
    for CUDA tensors where there is a GPU), "cpu:gloo,cuda:nccl" -> "cpu:zpp,cuda:nccl",
    "undefined" (init_process_group() with no backend) as torch's defaults would resolve it."""
    text = str(backend).lower()
    if text == "undefined":
        return "cpu:zpp,cuda:nccl" if cuda_available else "zpp"
    if text == "gloo":
        return "cpu:zpp,cuda:gloo" if cuda_available else "zpp"
    if ":" not in text:
        return backend
    pairs = [part.split(":", 1) for part in text.split(",")]
    return ",".join(f"{device}:{'zpp' if device == 'cpu' and name == 'gloo' else name}"
                    for device, name in pairs)


def _install_cpu_switch(c10d):
    """Every group torch makes (init_process_group, new_group, device meshes) goes through
    _new_process_group_helper with its backend string fourth."""
    make_group = c10d._new_process_group_helper

    def make_group_on_zpp(size, rank, ranks, backend, *args, **kwargs):
        mapped = _zpp_for_gloo(backend, _cuda_available())
        if mapped != backend:
            try:
                import zpp_torch  # noqa: F401 (registers the backend "zpp")
            except ImportError as error:
                raise RuntimeError("zpp-run --cpu: cannot import zpp_torch (the build's python/ "
                                   f"folder must be on PYTHONPATH): {error}") from error
        return make_group(size, rank, ranks, mapped, *args, **kwargs)

    c10d._new_process_group_helper = make_group_on_zpp


def _cuda_available():
    import torch  # imported by then: torch.distributed is being used

    return torch.cuda.is_available()


def _settle_deepspeed_steps(module):
    """DeepSpeed's ZeRO-3 optimizer steps its torch optimizer once per sub-group, or not at all
    when the gradients overflow: hpZ's step guard decides once, before it
    (zpp_step_guard.settle_after_step)."""
    import zpp_step_guard  # beside this file

    zpp_step_guard.settle_after_step(module.DeepSpeedZeroOptimizer_Stage3)


_AFTER_IMPORT = {_OPTIMIZER: _install_step_hook, _DEEPSPEED_ZERO3: _settle_deepspeed_steps}


class _LoaderWrapper(importlib.abc.Loader):
    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then(module)


class _WatchImports(importlib.abc.MetaPathFinder):
    """Runs _AFTER_IMPORT[name] on a watched module once it has been executed."""

    def find_spec(self, name, path, target=None):
        then = _AFTER_IMPORT.pop(name, None)
        if then is None:
            return None
        if not _AFTER_IMPORT:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)  # the real module (this name is no longer watched)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderWrapper(spec.loader, then)
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
if _zpp is None:
    _AFTER_IMPORT.clear()
if os.environ.get("ZPP_TORCH_CPU") == "1":
    _AFTER_IMPORT[_C10D] = _install_cpu_switch
for _name in list(_AFTER_IMPORT):
    if _name in sys.modules:
        _AFTER_IMPORT.pop(_name)(sys.modules[_name])
if _AFTER_IMPORT:
    sys.meta_path.insert(0, _WatchImports())

"""torch.distributed's stand-in: init_process_group and new_group reach the module-level
_new_process_group_helper, as the real ones do."""
from .distributed_c10d import init_process_group, new_group  # noqa: F401


def is_available():
    return True


def is_initialized():
    """No process group is ever made for real here: hpZ's step guard has no one to agree with."""
    return False

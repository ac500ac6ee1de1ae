"""A stand-in for torch in zpp-run's test: the optimizer step hook API, and the process-group
helper that zpp-run --cpu wraps."""
from . import cuda  # noqa: F401
from . import distributed  # noqa: F401  (the real torch imports it on import too)
from . import optim  # noqa: F401  (torch imports torch.optim on import, as the real one does)

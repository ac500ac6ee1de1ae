"""A stand-in for torch in zpp-run's test: only the optimizer step hook API."""
from . import optim  # noqa: F401  (torch imports torch.optim on import, as the real one does)

"""The quantities zpp's results report, each defined once (docs/benchmarks.md, "Quantities"):
the training scripts, the harnesses, the GPU report and the tests take them from here."""


def final_loss(losses):
    """A run's final loss: the mean of its last 10% of step losses (at least the last one)."""
    losses = list(losses)
    if not losses:
        raise ValueError("final_loss: a run with no steps")
    tail = max(1, len(losses) // 10)
    return sum(losses[-tail:]) / tail


def relative_pct(value, reference):
    """How far `value` is from `reference`, in percent of the reference."""
    return 100.0 * (value - reference) / reference

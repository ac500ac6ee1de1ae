"""The quantities zpp's results report, each defined once (docs/benchmarks.md, "Quantities"):
the training scripts, the harnesses, the GPU report and the tests take them from here."""
import contextlib
import time


def final_loss(losses):
    """A run's final loss: the mean of its last 10% of step losses (at least the last one)."""
    losses = list(losses)
    if not losses:
        raise ValueError("final_loss: a run with no steps")
    tail = max(1, len(losses) // 10)
    return sum(losses[-tail:]) / tail


class StepClock:
    """The training scripts' `seconds` column: time since the first step less the time set
    aside, so that the harness's own per-step bookkeeping (statistics, digests), which only some
    modes do, stays out of every step time."""

    def __init__(self, now=time.monotonic):
        self._now = now
        self._start = now()
        self._aside = 0.0

    def seconds(self):
        return self._now() - self._start - self._aside

    @contextlib.contextmanager
    def aside(self):
        began = self._now()
        try:
            yield
        finally:
            self._aside += self._now() - began


def relative_pct(value, reference):
    """How far `value` is from `reference`, in percent of the reference."""
    return 100.0 * (value - reference) / reference


def mean_and_standard_error(values):
    """The mean of `values` and its standard error (infinite for fewer than two)."""
    values = list(values)
    mean = sum(values) / len(values) if values else float("nan")
    if len(values) < 2:
        return mean, float("inf")
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, (variance / len(values)) ** 0.5


def paired_verdict(differences_pct, at_most_pct=0.1):
    """A lossy mode against plain by paired seeds: `differences_pct` holds, per seed, the mode's
    final loss against plain's at the same seed (relative_pct). "no worse than plain" when their
    mean over at least 3 seeds is at most +0.1% or within two standard errors of zero (a lower
    loss is never a failure); "worse" otherwise; "too few seeds" under 3."""
    values = list(differences_pct)
    count = len(values)
    mean, error = mean_and_standard_error(values)
    if count < 3:
        verdict = "too few seeds"
    elif mean <= at_most_pct or abs(mean) <= 2 * error:
        verdict = "no worse than plain"
    else:
        verdict = "worse"
    return {"seeds": count, "mean_pct": mean, "standard_error_pct": error, "verdict": verdict}

"""Small, seeded statistics for run summaries: bootstrap intervals and percentiles.

`bootstrap_ci(values, seed=0)` returns `Interval(mean, low, high, n)`: the sample mean and a
percentile bootstrap interval (95% by default, 2,000 resamples) that is identical for the same
values and seed. `None` and NaN values are dropped first (an unscored case is missing, never 0);
with no values left every field but `n` is None; with one value the interval collapses to it.
`percentile(values, q)` is the linear-interpolation percentile (numpy's default), None when empty.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    mean: float | None
    low: float | None
    high: float | None
    n: int


def _clean(values: Iterable[float | None]) -> np.ndarray:
    kept = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return np.asarray(kept, dtype=float)


def bootstrap_ci(values: Iterable[float | None], *, seed: int = 0, level: float = 0.95,
                 resamples: int = 2000) -> Interval:
    """Mean and percentile-bootstrap interval of `values` at `level`, deterministic for `seed`."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    data = _clean(values)
    n = len(data)
    if n == 0:
        return Interval(None, None, None, 0)
    mean = float(data.mean())
    if n == 1 or np.all(data == data[0]):
        return Interval(mean, mean, mean, n)
    rng = np.random.default_rng(seed)
    # resample in one matrix: 2,000 x n stays small for the few hundred cases of a cell
    means = data[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(mean, float(low), float(high), n)


def percentile(values: Iterable[float | None], q: float) -> float | None:
    """The `q`-th percentile (0-100) of the non-missing values, or None when there are none."""
    data = _clean(values)
    if len(data) == 0:
        return None
    return float(np.percentile(data, q))


__all__ = ["Interval", "bootstrap_ci", "percentile"]

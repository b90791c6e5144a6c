"""Seeded bootstrap intervals and percentiles."""

from __future__ import annotations

import numpy as np
import pytest

from parquet_agent.analysis.stats import Interval, bootstrap_ci, percentile


def test_same_seed_same_interval_other_seed_close():
    values = [0, 100, 50, 75, 25, 100, 0, 90]
    a = bootstrap_ci(values, seed=3)
    assert a == bootstrap_ci(values, seed=3)
    b = bootstrap_ci(values, seed=4)
    assert a.mean == b.mean == pytest.approx(55.0)
    assert a.low < a.mean < a.high and abs(a.low - b.low) < 10


def test_missing_values_are_dropped_not_zero():
    assert bootstrap_ci([None, 80.0, float("nan"), 80.0]) == Interval(80.0, 80.0, 80.0, 2)
    assert bootstrap_ci([]) == Interval(None, None, None, 0)
    assert bootstrap_ci([None]) == Interval(None, None, None, 0)


def test_interval_narrows_with_more_data_and_covers_the_truth():
    rng = np.random.default_rng(0)
    small = bootstrap_ci(rng.normal(50, 10, 10).tolist(), seed=1)
    large = bootstrap_ci(rng.normal(50, 10, 400).tolist(), seed=1)
    assert (large.high - large.low) < (small.high - small.low) / 3
    covered = sum(
        (ci := bootstrap_ci(rng.normal(50, 10, 30).tolist(), seed=i, resamples=500)).low <= 50 <= ci.high
        for i in range(100))
    assert 85 <= covered <= 100  # nominal 95%; the percentile bootstrap runs a little narrow


def test_level_is_checked_and_honoured():
    values = list(range(30))
    wide, narrow = bootstrap_ci(values, level=0.99), bootstrap_ci(values, level=0.5)
    assert wide.high - wide.low > narrow.high - narrow.low
    with pytest.raises(ValueError):
        bootstrap_ci(values, level=95)


def test_percentile_matches_numpy_and_skips_missing():
    values = [5.0, 1.0, None, 9.0, 3.0]
    assert percentile(values, 50) == np.percentile([5, 1, 9, 3], 50)
    assert percentile(values, 95) == pytest.approx(np.percentile([5, 1, 9, 3], 95))
    assert percentile([], 50) is None

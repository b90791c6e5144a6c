"""Judge agreement as numbers (issue 16 part 2): Cohen's kappa, Spearman, mean absolute
difference with paired bootstrap intervals, the repeat-judge flip rate, confusion matrices."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from parquet_agent.analysis.judge_stats import (cohen_kappa, confusion, flip_rate, pair_agreement,
                                           spearman)


def test_cohen_kappa_matches_a_hand_computed_table():
    # 20 cases: both correct 8, both incorrect 6, a correct / b incorrect 4, the reverse 2
    a = ["correct"] * 12 + ["incorrect"] * 8
    b = ["correct"] * 8 + ["incorrect"] * 4 + ["correct"] * 2 + ["incorrect"] * 6
    observed = 14 / 20
    expected = (12 / 20) * (10 / 20) + (8 / 20) * (10 / 20)
    import numpy as np

    assert cohen_kappa(np.array(a), np.array(b)) == pytest.approx(
        (observed - expected) / (1 - expected))
    assert cohen_kappa(np.array(a), np.array(a)) == 1.0
    assert math.isnan(cohen_kappa(np.array(["x", "x"]), np.array(["x", "x"])))


def test_spearman_uses_ranks_with_ties():
    import numpy as np

    assert spearman(np.array([1, 2, 3, 4.0]), np.array([10, 20, 30, 400.0])) == pytest.approx(1)
    assert spearman(np.array([1, 2, 3, 4.0]), np.array([4, 3, 2, 1.0])) == pytest.approx(-1)
    assert math.isnan(spearman(np.array([1, 2.0]), np.array([5, 5.0])))


def test_pair_agreement_leaves_unscored_out_and_gives_intervals():
    ids = [f"c{i}" for i in range(40)]
    a = pd.Series(["correct", "incorrect"] * 20, index=ids)
    b = a.copy()
    b.iloc[:4] = ["incorrect", "correct", "abstained", "correct"]
    b.iloc[10] = None  # unscored on one side: not compared
    sa = pd.Series(range(40), index=ids, dtype=float)
    sb = sa + 5
    out = pair_agreement(a, b, sa, sb, seed=3)
    assert out["n"] == 39 and out["verdict_agreement"] == pytest.approx(35 / 39)
    assert out["kappa_low"] <= out["kappa"] <= out["kappa_high"]
    assert out["spearman"] == pytest.approx(1.0) and out["mae"] == pytest.approx(5.0)
    assert pair_agreement(a, b, sa, sb, seed=3) == out  # seeded: the same interval again


def test_flip_rate_counts_cases_whose_verdict_changes_between_repeats():
    frame = pd.DataFrame({
        "case_id": ["a", "a", "a", "b", "b", "b", "c", "c", "c", "d"],
        "verdict": ["correct", "correct", "correct", "correct", "incorrect", "correct",
                    "incorrect", "abstained", "incorrect", "correct"],
        "correctness": [100, 90, 100, 80, 10, 70, 0, 0, 5, 100.0]})
    out = flip_rate(frame)
    assert out["cases"] == 3 and out["repeats"] == 3  # d was judged once
    assert out["flip_rate"] == pytest.approx(1 / 3)  # only b flips correct / not correct
    assert out["verdict_flip_rate"] == pytest.approx(2 / 3)  # c flips incorrect / abstained
    assert out["score_spread"] == pytest.approx((10 + 70 + 5) / 3)


def test_confusion_counts_each_pair_of_labels():
    a = pd.Series(["correct", "incorrect", "abstained", "correct"], index=list("wxyz"))
    b = pd.Series(["correct", "correct", "abstained", None], index=list("wxyz"))
    table = confusion(a, b)
    assert table.loc["incorrect", "correct"] == 1 and table.loc["abstained", "abstained"] == 1
    assert int(table.to_numpy().sum()) == 3

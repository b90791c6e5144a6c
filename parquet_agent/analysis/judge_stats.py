"""How far a judge can be trusted, as numbers: agreement between two sets of judgments of the
same cases, the flip rate of one judge repeated, and confusion against reference labels.

- `pair_agreement(a, b)`: two judges (or a judge and the deterministic checks, or a judge and
  human labels) over the same cases: `n`, verdict agreement, Cohen's kappa on the verdict, and
  where both sides have scores, Spearman's rho and the mean absolute difference, each with a
  paired percentile-bootstrap interval (seeded: the same inputs give the same interval).
- `flip_rate(frame)`: one judge K times on the same cases (`case_id`, `verdict`,
  `correctness`): the share of cases whose correct / not-correct verdict changes between
  repeats, the share whose three-way verdict changes, and the mean score spread (max - min).
- `confusion(a, b)`: counts of (a's verdict, b's verdict).

A side is a `pandas.Series` indexed by case id: verdicts (`correct` / `incorrect` / `abstained`,
None for unscored) or scores 0-100 (NaN for unscored). Cases unscored on either side are left
out (never counted as disagreement), and `n` says how many were compared.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

VERDICT_ORDER = ("correct", "incorrect", "abstained")
RESAMPLES = 2000


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two label arrays (NaN when chance agreement is total)."""
    labels = sorted(set(a) | set(b))
    if len(a) == 0:
        return float("nan")
    index = {label: i for i, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b):
        table[index[x], index[y]] += 1
    table /= table.sum()
    observed = np.trace(table)
    expected = float(table.sum(axis=1) @ table.sum(axis=0))
    return float("nan") if expected >= 1.0 else float((observed - expected) / (1.0 - expected))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho (average ranks for ties); NaN when either side is constant."""
    if len(x) < 2:
        return float("nan")
    rx = pd.Series(x).rank().to_numpy()
    ry = pd.Series(y).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def _bootstrap(stat: Callable[[np.ndarray], float], n: int, *, seed: int,
               level: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile interval of `stat(indices)` over paired resamples of n cases."""
    if n < 2:
        return None, None
    rng = np.random.default_rng(seed)
    values = np.array([stat(rng.integers(0, n, size=n)) for _ in range(RESAMPLES)])
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return None, None
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def pair_agreement(a: pd.Series, b: pd.Series, scores_a: pd.Series | None = None,
                   scores_b: pd.Series | None = None, *, seed: int = 0) -> dict:
    """Agreement of two judgments of the same cases (see the module docstring)."""
    both = pd.concat({"a": a, "b": b}, axis=1, join="inner").dropna()
    va, vb = both["a"].to_numpy(), both["b"].to_numpy()
    n = len(both)
    out: dict = {"n": n, "verdict_agreement": float((va == vb).mean()) if n else float("nan"),
                 "kappa": cohen_kappa(va, vb)}
    out["kappa_low"], out["kappa_high"] = _bootstrap(lambda i: cohen_kappa(va[i], vb[i]), n,
                                                     seed=seed)
    out["accuracy_low"], out["accuracy_high"] = _bootstrap(lambda i: float((va[i] == vb[i])
                                                                           .mean()), n, seed=seed)
    if scores_a is not None and scores_b is not None:
        s = pd.concat({"a": scores_a, "b": scores_b}, axis=1, join="inner").dropna()
        sa, sb = s["a"].to_numpy(dtype=float), s["b"].to_numpy(dtype=float)
        out["scored_pairs"] = len(s)
        out["spearman"] = spearman(sa, sb)
        out["spearman_low"], out["spearman_high"] = _bootstrap(
            lambda i: spearman(sa[i], sb[i]), len(s), seed=seed)
        out["mae"] = float(np.abs(sa - sb).mean()) if len(s) else float("nan")
        out["mae_low"], out["mae_high"] = _bootstrap(lambda i: float(np.abs(sa[i] - sb[i]).mean()),
                                                     len(s), seed=seed)
    return out


def confusion(a: pd.Series, b: pd.Series, *, labels_a: tuple[str, ...] = VERDICT_ORDER,
              labels_b: tuple[str, ...] = VERDICT_ORDER) -> pd.DataFrame:
    """Counts of cases by (a's label: rows, b's label: columns), over cases both labelled."""
    both = pd.concat({"a": a, "b": b}, axis=1, join="inner").dropna()
    table = pd.crosstab(both["a"], both["b"])
    return table.reindex(index=list(labels_a), columns=list(labels_b), fill_value=0)


def flip_rate(frame: pd.DataFrame, *, seed: int = 0) -> dict:
    """The repeat-judge flip rate of `frame` (`case_id`, `verdict`, `correctness`; one row per
    judgment): over cases judged at least twice with a verdict."""
    scored = frame.dropna(subset=["verdict"])
    groups = scored.groupby("case_id")
    sizes = groups.size()
    cases = sizes[sizes >= 2].index
    if len(cases) == 0:
        return {"cases": 0, "repeats": 0, "flip_rate": float("nan"),
                "verdict_flip_rate": float("nan"), "score_spread": float("nan")}
    per = groups.agg(
        correct_flip=("verdict", lambda v: (v == "correct").nunique() > 1),
        verdict_flip=("verdict", lambda v: v.nunique() > 1),
        spread=("correctness", lambda s: float(s.max() - s.min()) if s.notna().any() else np.nan),
    ).loc[cases]
    flips = per["correct_flip"].to_numpy(dtype=float)
    out: dict[str, float | None] = {"cases": int(len(cases)), "repeats": int(sizes.loc[cases].max()),
           "flip_rate": float(flips.mean()),
           "verdict_flip_rate": float(per["verdict_flip"].mean()),
           "score_spread": float(per["spread"].mean())}
    out["flip_rate_low"], out["flip_rate_high"] = _bootstrap(lambda i: float(flips[i].mean()),
                                                             len(flips), seed=seed)
    return out

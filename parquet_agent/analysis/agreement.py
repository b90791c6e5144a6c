"""A run's judge agreement as DataFrames (`Run.judge_agreement()`), read through the fold.

- `judgments`: one row per judgment (the run's own judge is `run`, a re-judging its id), with
  its repeat, verdict, scores and the deterministic checks it was given;
- `pairs`: every two judges over the cases both judged (each judge's first repeat; the run's
  own: its last judgment): verdict agreement and Cohen's kappa, Spearman and mean absolute
  difference of correctness, with bootstrap intervals (`judge.agreement.pair_agreement`);
- `repeats`: per judge that judged cases more than once: the flip rate (share of cases whose
  correct / not-correct verdict changes), the three-way flip rate and the score spread;
- `checks`: per judge, agreement with the deterministic checks: `numeric` (verdict correct vs
  the reference's figure found in the answer, where the reference has one) and `citations`
  (citation support >= 50 vs every cited span being text the agent received, where it cites).
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

import pandas as pd

from parquet_agent.analysis.fold import fold_run
from parquet_agent.analysis.judge_stats import flip_rate, pair_agreement
from parquet_agent.analysis.judgments import RUN_JUDGE

if TYPE_CHECKING:
    from parquet_agent.store.run import Run

PAIR_COLUMNS = ("a", "b", "n", "verdict_agreement", "accuracy_low", "accuracy_high", "kappa",
                "kappa_low", "kappa_high", "scored_pairs", "spearman", "spearman_low",
                "spearman_high", "mae", "mae_low", "mae_high", "why")


def judgments_frame(run: Run) -> pd.DataFrame:
    rows = []
    for view in fold_run(run, judge=RUN_JUDGE).cases:
        for j in view.judgments:
            checks = j.checks or {}
            count = checks.get("citation_count") or 0
            rows.append({
                "case_id": view.case_id, "model": view.model, "strategy": view.strategy,
                "judge": j.judging or RUN_JUDGE, "judge_name": j.judge, "repeat": j.repeat,
                "scored": j.scored, "verdict": j.verdict if j.scored else None,
                "correctness": j.correctness if j.scored else None,
                "citation_support": j.citation_support if j.scored else None,
                "prompt_version": (j.provenance or {}).get("prompt_version"),
                "unscored_reason": None if j.scored else j.unscored_reason,
                "numeric_match": checks.get("numeric_match"),
                "citations_received": (checks.get("citations_covered") == count) if count
                else None})
    return pd.DataFrame(rows, columns=[
        "case_id", "model", "strategy", "judge", "judge_name", "repeat", "scored", "verdict",
        "correctness", "citation_support", "prompt_version", "unscored_reason", "numeric_match",
        "citations_received"])


def _first(frame: pd.DataFrame, judge: str) -> pd.DataFrame:
    """One judgment per case for `judge`: the run's own last, a re-judging's first repeat."""
    rows = frame[frame["judge"] == judge]
    if judge == RUN_JUDGE:
        return rows.groupby("case_id").tail(1).set_index("case_id")
    return rows.sort_values("repeat").groupby("case_id").head(1).set_index("case_id")


def agreement_tables(run: Run, *, seed: int = 0) -> dict[str, pd.DataFrame]:
    frame = judgments_frame(run)
    judges = list(dict.fromkeys(frame["judge"]))
    pairs = []
    for a, b in combinations(judges, 2):
        fa, fb = _first(frame, a), _first(frame, b)
        stats = pair_agreement(fa["verdict"], fb["verdict"], fa["correctness"],
                               fb["correctness"], seed=seed)
        pairs.append({"a": a, "b": b, **stats,
                      "why": _why_none((a, fa), (b, fb)) if not stats["n"] else None})
    repeats = []
    for judge in judges:
        rows = frame[frame["judge"] == judge]
        if judge != RUN_JUDGE and rows.groupby("case_id").size().max() > 1:
            repeats.append({"judge": judge, **flip_rate(rows, seed=seed)})
    checks = []
    for judge in judges:
        f = _first(frame, judge)
        numeric = f.dropna(subset=["numeric_match", "verdict"])
        cited = f.dropna(subset=["citations_received", "citation_support"])
        for name, ours, theirs in (
                ("numeric", numeric["verdict"] == "correct", numeric["numeric_match"]),
                ("citations", cited["citation_support"] >= 50, cited["citations_received"])):
            stats = pair_agreement(ours.map(_yes_no), theirs.astype(bool).map(_yes_no),
                                   seed=seed)
            why = None
            if not stats["n"]:
                why = (_why_none((judge, f)) if not f["verdict"].notna().any() else
                       "no judged case whose reference states a figure" if name == "numeric"
                       else "no judged answer cites a span")
            checks.append({"judge": judge, "check": name, "n": stats["n"],
                           "agreement": stats["verdict_agreement"], "kappa": stats["kappa"],
                           "kappa_low": stats["kappa_low"], "kappa_high": stats["kappa_high"],
                           "why": why})
    return {"judgments": frame, "pairs": pd.DataFrame(pairs, columns=list(PAIR_COLUMNS)),
            "repeats": pd.DataFrame(repeats, columns=[
                "judge", "cases", "repeats", "flip_rate", "flip_rate_low", "flip_rate_high",
                "verdict_flip_rate", "score_spread"]),
            "checks": pd.DataFrame(checks, columns=["judge", "check", "n", "agreement", "kappa",
                                                    "kappa_low", "kappa_high", "why"])}


def _why_none(*judges: tuple[str, pd.DataFrame]) -> str:
    """Why no case has a verdict from every one of `judges`: what each scored, and the most
    common reason its judgments went unscored."""
    parts = []
    for name, rows in judges:
        verdicts = rows["verdict"].notna()
        part = f"{name} gave {int(verdicts.sum())} verdict(s) of {len(rows)} judgment(s)"
        reasons = rows.loc[~verdicts, "unscored_reason"].dropna()
        if len(reasons):
            top = reasons.value_counts()
            part += f" ({top.iloc[0]} x unscored: {str(top.index[0])[:160]})"
        parts.append(part)
    if all(rows["verdict"].notna().any() for _, rows in judges):
        parts.append("no case has a verdict from both")
    return "; ".join(parts)


def _yes_no(value: bool) -> str:
    return "yes" if bool(value) else "no"

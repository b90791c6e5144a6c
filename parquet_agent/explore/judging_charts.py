"""Plotly figures of judging: how far the judges agree, and verdicts per cell.

    charts.judge_agreement(run)   # kappa per pair of judges (and each judge vs the deterministic
                                  #   checks) with 95% bootstrap intervals; repeat flip rates
    charts.verdicts(run)          # correct / incorrect / abstained shares per model x strategy

`run` is a `Run` or a run folder; `judge_agreement` also takes `Run.judge_agreement()`'s dict of
DataFrames as it is.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from parquet_agent.experiment.run import open_experiment

TEMPLATE = "plotly_white"
VERDICT_COLORS = {"correct": "#2ca02c", "incorrect": "#d62728", "abstained": "#7f7f7f"}


def _err(df: pd.DataFrame, value: str) -> dict[str, Any]:
    return {"type": "data", "symmetric": False,
            "array": (df[f"{value}_high"] - df[value]).fillna(0).tolist(),
            "arrayminus": (df[value] - df[f"{value}_low"]).fillna(0).tolist()}


def judge_agreement(source: Any) -> go.Figure:
    tables = source if isinstance(source, dict) else open_experiment(source).judge_agreement()
    pairs, repeats = tables.get("pairs", pd.DataFrame()), tables.get("repeats", pd.DataFrame())
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "Cohen's kappa on the verdict (95% CI)", "repeat flip rate (95% CI)"))
    if len(pairs):
        names = (pairs["a"] + " vs " + pairs["b"]).tolist()
        fig.add_trace(go.Bar(x=names, y=pairs["kappa"], name="kappa",
                             error_y=_err(pairs, "kappa"),
                             hovertext=[f"n={n}, agreement={a:.2f}" for n, a in
                                        zip(pairs["n"], pairs["verdict_agreement"])]), 1, 1)
    if len(repeats):
        fig.add_trace(go.Bar(x=repeats["judge"], y=repeats["flip_rate"], name="flip rate",
                             error_y=_err(repeats, "flip_rate"),
                             hovertext=[f"{c} cases x {k} repeats, score spread {s:.1f}"
                                        for c, k, s in zip(repeats["cases"], repeats["repeats"],
                                                           repeats["score_spread"])]), 1, 2)
    fig.update_layout(template=TEMPLATE, showlegend=False, title="Judge agreement",
                      margin={"t": 80})
    return fig


def verdicts(source: Any) -> go.Figure:
    summary = open_experiment(source).summary()
    labels = (summary["model"].astype(str) + " · " + summary["strategy"].astype(str)).tolist()
    fig = go.Figure()
    for verdict, color in VERDICT_COLORS.items():
        column = f"{verdict}_rate"
        if column in summary:
            fig.add_trace(go.Bar(x=labels, y=summary[column], name=verdict,
                                 marker_color=color))
    fig.update_layout(template=TEMPLATE, barmode="stack", yaxis={"range": [0, 1]},
                      title="Verdicts per model x strategy (share of judged cases)")
    return fig

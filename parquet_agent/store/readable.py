"""Run figures as people read them: costs that never show an unknown as 0, and the summary as a
short table instead of 24 raw columns.

    cost_text(usd, unknown_attempts)   # "$0.0123" | "unknown" | "≥ $0.0123 (3 attempts of ...)"
    summary_table(run.summary())       # model, strategy, cases, completed, scores with their
                                       # 95% intervals, tool calls, cost, p50 latency
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def cost_text(usd: float | None, unknown_attempts: int = 0, unit: str = "attempt") -> str:
    """A cost as people should read it: `$0.0123`, `unknown` when nothing about it is known,
    `≥ $0.0123 (3 attempts of unknown cost)` when only part of it is (`unit` "case" for a count
    of cases). Never a made-up 0."""
    known = usd is not None and usd == usd  # NaN is unknown
    if not unknown_attempts:
        return f"${usd:.4f}" if known else "unknown"
    if not known or usd == 0:
        return "unknown"
    plural = "s" if unknown_attempts != 1 else ""
    return f"≥ ${usd:.4f} ({unknown_attempts} {unit}{plural} of unknown cost)"


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """`Run.summary()` as the few columns a person reads: scores as `mean [low, high]` (or
    `unscored`), cost through `cost_text`, latency in whole ms."""
    import pandas as pd

    def interval(row: pd.Series, name: str) -> str:
        if pd.isna(row[name]):  # no score: the batch judge has not answered yet, or none did
            return "awaiting judgment" if row.get("awaiting_judgment", 0) > 0 else "unscored"
        return f"{row[name]:.1f} [{row[name + '_low']:.1f}, {row[name + '_high']:.1f}]"

    rows = [r for _, r in summary.iterrows()]
    return pd.DataFrame({
        "model": summary["model"], "strategy": summary["strategy"],
        "cases": summary["cases"], "completed": summary["complete"],
        "correctness (95% CI)": [interval(r, "correctness") for r in rows],
        "citation support (95% CI)": [interval(r, "citation_support") for r in rows],
        "tool calls": summary["processed"],
        "cost USD": [cost_text(r["cost_usd_known"], int(r["cases_with_unknown_cost"]), "case")
                     for r in rows],
        "p50 ms": summary["latency_p50_ms"].round(0),
    })


__all__ = ["cost_text", "summary_table"]

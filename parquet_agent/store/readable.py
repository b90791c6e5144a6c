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


def cost_text(usd: float | None, unknown_attempts: int = 0) -> str:
    """A cost as people should read it: `$0.0123`, `unknown` when nothing about it is known,
    `≥ $0.0123 (3 attempts of unknown cost)` when only part of it is. Never a made-up 0."""
    known = usd is not None and usd == usd  # NaN is unknown
    if not unknown_attempts:
        return f"${usd:.4f}" if known else "unknown"
    if not known or usd == 0:
        return "unknown"
    plural = "s" if unknown_attempts != 1 else ""
    return f"≥ ${usd:.4f} ({unknown_attempts} attempt{plural} of unknown cost)"


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """`Run.summary()` as the few columns a person reads: scores as `mean [low, high]` (or
    `unscored`), cost through `cost_text`, latency in whole ms."""
    import pandas as pd

    def interval(row: pd.Series, name: str, low: str, high: str) -> str:
        if pd.isna(row[name]):
            return "unscored"
        return f"{row[name]:.1f} [{row[low]:.1f}, {row[high]:.1f}]"

    rows = [r for _, r in summary.iterrows()]
    return pd.DataFrame({
        "model": summary["model"], "strategy": summary["strategy"],
        "cases": summary["cases"], "completed": summary["completed"],
        "correctness (95% CI)": [interval(r, "correctness", "correctness_low",
                                          "correctness_high") for r in rows],
        "citation support (95% CI)": [interval(r, "citation_support", "citation_low",
                                               "citation_high") for r in rows],
        "tool calls": summary["tool_calls"],
        "cost USD": [cost_text(r["cost_usd"], int(r["cost_unknown_attempts"])) for r in rows],
        "p50 ms": summary["latency_p50_ms"].round(0),
    })


__all__ = ["cost_text", "summary_table"]

"""Run comparisons for notebooks: `analysis.compare` plus its two plotly figures.

    cmp = compare_runs(new, old)           # Runs or run folders; threshold=50, seed=0
    compare_cells(run, ("m", "sql+stream"), ("m", "sql"))   # two cells of one run, by question
    cmp.delta_chart() / cmp.transition_chart()       # plotly figures
    cmp.to_html(include_charts=True)       # the HTML section with the figures at its end

Pairing, changes, deltas and tests are `analysis.compare`'s (see its docstring); this module only
opens run folders and draws (`charts.comparison_deltas`, `charts.comparison_changes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import plotly.graph_objects as go

from parquet_agent.analysis import compare
from parquet_agent.analysis.compare import (
    ALL_CELLS,
    CHANGES,
    PairedTest,
    RunComparison,
    manifest_warnings,
    mcnemar,
)
from parquet_agent.experiment.run import open_experiment
from parquet_agent.explore import charts


@dataclass(frozen=True)
class ChartedComparison(RunComparison):
    """A `RunComparison` that draws itself (what `compare_runs` returns here)."""

    @classmethod
    def of(cls, comparison: RunComparison) -> ChartedComparison:
        return cls(**{f.name: getattr(comparison, f.name) for f in fields(RunComparison)})

    def delta_chart(self) -> go.Figure:
        """Mean paired correctness and citation deltas (new - old) per cell with 95% CIs."""
        return charts.comparison_deltas(self)

    def transition_chart(self) -> go.Figure:
        """Cases per cell by change: resolved, regressed, unchanged, unscored, new, dropped."""
        return charts.comparison_changes(self)

    def to_html(self, *, include_charts: bool = False, include_plotlyjs: bool = False,
                figures: Sequence[str] = ()) -> str:
        """`RunComparison.to_html`; with `include_charts`, the two figures close the section
        (plotly.js inlined only when `include_plotlyjs`; a page that already loaded it passes
        False)."""
        if include_charts:
            figures = (*figures,
                       charts.figure_html(self.delta_chart(), include_plotlyjs=include_plotlyjs),
                       charts.figure_html(self.transition_chart(), include_plotlyjs=False))
        return super().to_html(figures=figures)


def compare_runs(new: Any, old: Any, *, threshold: float = 50.0,
                 seed: int = 0) -> ChartedComparison:
    """Pair `new` and `old` (Runs or run folders) by case id; see `analysis.compare`."""
    return ChartedComparison.of(compare.compare_runs(open_experiment(new), open_experiment(old),
                                                     threshold=threshold, seed=seed))


def compare_cells(run: Any, new: tuple[str, str], old: tuple[str, str], *,
                  threshold: float = 50.0, seed: int = 0) -> ChartedComparison:
    """Two model x strategy cells of one run (a Run or a run folder), paired by question;
    see `analysis.compare.compare_cells`."""
    return ChartedComparison.of(compare.compare_cells(open_experiment(run), new, old,
                                                      threshold=threshold, seed=seed))


__all__ = ["ALL_CELLS", "CHANGES", "ChartedComparison", "PairedTest", "RunComparison", "compare_cells",
           "compare_runs", "manifest_warnings", "mcnemar"]

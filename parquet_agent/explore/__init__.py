"""explore: the CaseExplorer widget, plotly charts and run comparison for notebooks.

    from parquet_agent.explore import CaseExplorer, compare_runs
    from parquet_agent.explore import charts

`CaseExplorer(run)` (ipywidgets) shows the same six case sections as report.html, from the same
case records; `charts` builds plotly figures from runs; `compare_runs(new, old)` pairs two runs by
case id, `compare_cells(run, new, old)` two model x strategy cells of one run by question.
ipywidgets and plotly are imported only when these names are used.

Owns what notebooks show: the explorer widget, charts, charted comparisons, notebook helpers and
the report's chart and comparison sections (`sections`). May import: `experiment`, `report`,
`store` and everything below. Never the CLI (`*.commands`, `experiment_commands`).
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "CaseExplorer": "parquet_agent.explore.explorer",
    "ChartedComparison": "parquet_agent.explore.compare",
    "RunComparison": "parquet_agent.explore.compare",
    "compare_cells": "parquet_agent.explore.compare",
    "compare_runs": "parquet_agent.explore.compare",
}

__all__ = ["CaseExplorer", "ChartedComparison", "RunComparison", "charts", "compare_cells", "compare_runs"]


def __getattr__(name: str) -> Any:
    if name == "charts":
        return importlib.import_module("parquet_agent.explore.charts")
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'parquet_agent.explore' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

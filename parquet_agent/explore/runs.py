"""The runs folder as a notebook sees it: every kind of run, each opened as its kind.

    store = RunStore("runs")              # parquet_agent.RunStore
    store.list()                          # one row per run folder, experiments and audits,
                                          # with a `kind` column (LIST_COLUMNS + `findings`)
    run = store.open("2026-11-30-smoke")  # an ExperimentRun, or an AuditRun for an audit
    store.ledger()                        # every API attempt of every experiment, with its cost
    store.ledger_totals()                 # per run and category
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from parquet_agent.analysis.listing import LIST_COLUMNS, ledger_totals, runs_ledger
from parquet_agent.audit.run import AuditRun
from parquet_agent.errors import ParquetAgentError
from parquet_agent.experiment.run import ExperimentRun
from parquet_agent.store.run import Run
from parquet_agent.store.runstore import RunEntry, kind_of
from parquet_agent.store.runstore import RunStore as CoreRunStore

if TYPE_CHECKING:
    import pandas as pd

RUN_TYPES: dict[str, type[ExperimentRun] | type[AuditRun]] = {"experiment": ExperimentRun,
                                                               "audit": AuditRun}


def _row(entry: RunEntry) -> dict[str, Any]:
    """One run's row of the listing; a folder that cannot be read is listed as broken (one
    broken folder never hides the others)."""
    run_type = RUN_TYPES.get(entry.kind or "experiment")
    if run_type is None:
        return {"run_id": entry.run_id, "kind": entry.kind,
                "status": f"unknown kind {entry.kind!r}"}
    try:
        return run_type(entry.path).listing_row()
    except Exception as exc:  # noqa: BLE001 - listed, never raised: `verify` says more
        what = str(exc) if isinstance(exc, ParquetAgentError) else f"{type(exc).__name__}: {exc}"
        return {"run_id": entry.run_id, "kind": entry.kind, "status": f"broken: {what}"[:300]}


_COUNTS = ("planned_cases", "complete", "incomplete", "failed", "unfinished", "cases_finished",
           "api_attempts", "cost_unknown_attempts", "sessions", "findings")


class RunStore(CoreRunStore):
    """A folder of run folders of every kind; see the module docstring."""

    def __init__(self, runs_dir: str | Path):
        super().__init__(runs_dir, run_type=ExperimentRun)

    def type_of(self, run_dir: Path) -> type[Run]:
        """An existing run opens as its kind (an experiment's when its manifest is missing:
        a run aborted before it)."""
        return RUN_TYPES.get(kind_of(run_dir) or "experiment", Run)

    def list(self) -> pd.DataFrame:
        """One row per run folder: id, kind, name, created, status, case counts (an audit's
        findings), attempts and cost (NaN: unknown, never 0)."""
        import pandas as pd

        rows = [_row(entry) for entry in self.entries()]
        frame = pd.DataFrame(rows, columns=[*LIST_COLUMNS, "findings"])
        # counts stay whole numbers beside the other kind's missing ones (not 228.0 and NaN)
        return frame.astype({c: "Int64" for c in _COUNTS})

    def ledger(self) -> pd.DataFrame:
        """Every API attempt of every experiment in this folder (aborted ones too)."""
        return runs_ledger(ExperimentRun(e.path) for e in self.entries()
                           if e.kind in ("experiment", None))

    def ledger_totals(self) -> pd.DataFrame:
        """Ledger totals per run and category: attempts, known USD, attempts of unknown cost."""
        return ledger_totals(self.ledger())


__all__ = ["RUN_TYPES", "RunStore"]

"""The runs listing's row of an experiment run, and the cost ledger over many runs.

    experiment_row(run)      {"run_id", "kind", "name", "created_at", "status", case counts,
                              "api_attempts", "cost_usd", ...} (LIST_COLUMNS)
    runs_ledger(runs)        every API attempt of every run given, one DataFrame

`cost_usd` is the known cost; it is NaN (unknown, never 0) when any attempt's cost is unknown
and no attempt's cost is known; `cost_unknown_attempts` says how many.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from parquet_agent.analysis.fold import fold_run
from parquet_agent.analysis.frames import LEDGER_COLUMNS, ledger_frame
from parquet_agent.analysis.status import run_status
from parquet_agent.errors import RunError
from parquet_agent.store.run import MANIFEST, Run

if TYPE_CHECKING:
    import pandas as pd

LIST_COLUMNS = ["run_id", "kind", "name", "created_at", "status", "planned_cases", "complete",
                "incomplete", "failed", "unfinished", "cases_finished", "api_attempts",
                "cost_usd", "cost_unknown_attempts", "wall_ms", "sessions"]


def experiment_row(run: Run) -> dict[str, Any]:
    """One experiment's row of the runs listing (`status` says "damaged: ..." for a damaged
    journal, "broken: ..." for a manifest that does not read: listed, never raised)."""
    row: dict[str, Any] = {"run_id": run.run_id, "kind": "experiment", "name": None,
                           "created_at": None}
    try:
        m = run.manifest
        row.update(name=m["config"]["name"], created_at=m.get("created_at"))
    except RunError as exc:
        if (run.dir / MANIFEST).exists():  # there but unreadable: not a run aborted before it
            return row | {"status": f"broken: {exc}"}
    except (KeyError, TypeError):
        return row | {"status": "broken: manifest.json is not an experiment's (no config name)"}
    try:
        fold = fold_run(run)
        figures = fold.figures | fold.activity()
        state = run_status(run, fold)
    except RunError as exc:
        return row | {"status": f"damaged: {exc}"}
    cost = figures["cost_usd_known"]
    if figures["cost_unknown_attempts"] and figures["api_attempts"] == figures[
            "cost_unknown_attempts"]:
        cost = float("nan")
    return row | dict(status=state.status, planned_cases=state.planned,
                      complete=state.complete, incomplete=state.incomplete,
                      failed=state.failed, unfinished=state.unfinished,
                      cases_finished=figures["cases_finished"],
                      api_attempts=figures["api_attempts"], cost_usd=cost,
                      cost_unknown_attempts=figures["cost_unknown_attempts"],
                      wall_ms=figures["wall_ms"], sessions=figures["sessions"])


def runs_ledger(runs: Iterable[Run]) -> pd.DataFrame:
    """Every API attempt of every run (aborted and development runs too; a damaged journal is
    left out: the listing reports it)."""
    import pandas as pd

    frames = []
    for run in runs:
        try:
            frames.append(ledger_frame(run))
        except RunError:
            continue
    nonempty = [f for f in frames if len(f)]
    if not nonempty:
        return frames[0] if frames else pd.DataFrame(columns=LEDGER_COLUMNS)
    return pd.concat(nonempty, ignore_index=True)


def ledger_totals(ledger: pd.DataFrame) -> pd.DataFrame:
    """Ledger totals per run and category: attempts, known USD, attempts of unknown cost."""
    import pandas as pd

    if ledger.empty:
        return pd.DataFrame(columns=["run_id", "category", "attempts", "cost_usd",
                                     "cost_unknown_attempts"])
    grouped = ledger.groupby(["run_id", "category"], sort=True)
    return pd.DataFrame({
        "attempts": grouped.size(),
        "cost_usd": grouped["cost_usd"].sum(min_count=0),
        "cost_unknown_attempts": grouped["cost_known"].apply(lambda s: int((~s).sum())),
    }).reset_index()


__all__ = ["LIST_COLUMNS", "experiment_row", "ledger_totals", "runs_ledger"]

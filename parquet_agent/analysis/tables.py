"""A run's DataFrames as files: `parquet-agent export RUN --tables` (or `write_tables(run)`).

    RUN/tables/cases.parquet        + .csv   one row per case of the grid (`Run.cases_df()`)
    RUN/tables/attempts.parquet     + .csv   one row per API attempt (`Run.attempts_df()`)
    RUN/tables/tool_calls.parquet   + .csv   one row per tool response (`Run.tool_calls_df()`)
    RUN/tables/ledger.parquet       + .csv   attempts as a cost ledger (`Run.ledger()`)
    RUN/tables/summary.parquet      + .csv   per model x strategy (`Run.summary()`)
    RUN/tables/tables.json                   schema_version, run id, join keys, rows per table

All five come from one fold of the journals (`analysis.fold`), so they agree with each other and
with the exports. Cases, attempts, tool calls and the ledger share the keys `frames.KEYS`
(run_id, case_id, question_id, model, strategy); summary joins on model and strategy. Cells that
hold JSON objects (tool arguments) are written as JSON text, so every reader gets plain columns;
in the CSV, text a spreadsheet would run as a formula is guarded (`escape.csv_frame`).
An unknown cost stays empty (null / NaN), never 0. Files are replaced atomically; the run's own
records are only read.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from parquet_agent.analysis.fold import fold_run
from parquet_agent.analysis.frames import (
    KEYS,
    attempts_frame,
    cases_frame,
    ledger_frame,
    summary_frame,
    tool_calls_frame,
)
from parquet_agent.escape import csv_frame
from parquet_agent.files import atomic_write_bytes, utc_now

if TYPE_CHECKING:
    import pandas as pd

    from parquet_agent.store.run import Run

SCHEMA_VERSION = 1
TABLES_DIR = "tables"
TABLES = ("cases", "attempts", "tool_calls", "ledger", "summary")


@dataclass(frozen=True)
class TablesResult:
    folder: Path
    rows: dict[str, int]  # table name -> rows written


def run_tables(run: Run) -> dict[str, pd.DataFrame]:
    """The run's five frames, folded once."""
    fold = fold_run(run)
    return {"cases": cases_frame(run, fold), "attempts": attempts_frame(run, fold),
            "tool_calls": tool_calls_frame(run, fold), "ledger": ledger_frame(run, fold),
            "summary": summary_frame(run, fold=fold)}


def write_tables(run: Run, folder: str | Path | None = None) -> TablesResult:
    """Write every frame of `run` as Parquet and CSV into `folder` (default `RUN/tables/`)."""
    out = Path(folder) if folder is not None else run.dir / TABLES_DIR
    out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for name, frame in run_tables(run).items():
        plain = _plain(frame)
        buffer = io.BytesIO()
        plain.to_parquet(buffer, index=False)
        atomic_write_bytes(out / f"{name}.parquet", buffer.getvalue())
        atomic_write_bytes(out / f"{name}.csv", csv_frame(plain).to_csv(index=False)
                           .encode("utf-8"))
        rows[name] = len(frame)
    atomic_write_bytes(out / "tables.json", json.dumps({
        "schema_version": SCHEMA_VERSION, "run_id": run.run_id, "written_at": utc_now(),
        "keys": KEYS, "summary_keys": ["model", "strategy"],
        "tables": {n: {"rows": rows[n], "files": [f"{n}.parquet", f"{n}.csv"]} for n in TABLES},
    }, indent=2).encode("utf-8"))
    return TablesResult(out, rows)


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with dict/list cells as JSON text (Parquet and CSV get one type per column)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].map(lambda v: isinstance(v, (dict, list))).any():
            out[col] = out[col].map(
                lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True)
                if isinstance(v, (dict, list)) else v)
    return out


__all__ = ["TABLES", "TABLES_DIR", "TablesResult", "run_tables", "write_tables"]

"""The runs folder: create, open and list runs, and keep a cost ledger over all of them.

    store = RunStore("runs")
    run = store.create(config, frozen)        # new folder, manifest frozen, writable, locked
    run = store.open("2026-11-30-smoke")      # read-only; writable=True to resume
    store.list()                              # DataFrame, one row per run folder, aborted too,
                                              # status complete / partial / failed / running
    store.ledger()                            # every API attempt of every run, with its cost

Run ids are `<UTC date>-<config name slug>`, with `-2`, `-3`, ... when taken (or any name you
pass). A folder counts as a run if it holds a manifest or a journal folder, so a run aborted at
any point, including development runs without a manifest, still shows up with its costs.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parquet_agent.errors import RunError
from parquet_agent.files import atomic_write_bytes, fsync_dir, utc_now
from parquet_agent.store.manifest import build_manifest
from parquet_agent.store.run import JOURNAL_DIR, MANIFEST, Run
from parquet_agent.analysis.status import run_status

if TYPE_CHECKING:
    import pandas as pd

    from parquet_agent.experiment.config import ExperimentConfig

LIST_COLUMNS = ["run_id", "name", "created_at", "status", "planned_cases", "complete",
                "incomplete", "failed", "unfinished", "cases_finished", "api_attempts",
                "cost_usd", "cost_unknown_attempts", "wall_ms", "sessions"]
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "run"


class RunStore:
    """A folder of run folders."""

    def __init__(self, runs_dir: str | Path):
        self.dir = Path(runs_dir).resolve()

    def __repr__(self) -> str:
        return f"RunStore({str(self.dir)!r})"

    def create(self, config: ExperimentConfig, frozen: dict[str, Any],
               run_id: str | None = None) -> Run:
        """Make a new run folder, write its manifest once, return it writable (locked).

        `frozen` comes from `store.manifest.freeze(...)`. RunError when `run_id` is taken.
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        if run_id is not None:
            if not _RUN_ID.match(run_id):
                raise RunError(f"bad run id {run_id!r}: letters, digits and ._+- only")
            run_dir = self.dir / run_id
            try:
                run_dir.mkdir()
            except FileExistsError:
                raise RunError(f"{run_dir} already exists; resume it with --resume or choose "
                               "another run id") from None
        else:
            base = f"{datetime.now(timezone.utc):%Y-%m-%d}-{_slug(config.name)}"
            for n in range(1, 10_000):
                run_dir = self.dir / (base if n == 1 else f"{base}-{n}")
                try:
                    run_dir.mkdir()  # atomic: two processes never get the same folder
                    break
                except FileExistsError:
                    continue
            else:  # pragma: no cover - 10,000 runs of one name in a day
                raise RunError(f"too many runs named {base} in {self.dir}")
        fsync_dir(self.dir)
        run = Run(run_dir, writable=True)
        try:
            manifest = build_manifest(run_dir.name, utc_now(), config, frozen)
            (run_dir / JOURNAL_DIR).mkdir()
            (run_dir / "raw").mkdir(exist_ok=True)
            data = json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True).encode()
            atomic_write_bytes(run_dir / MANIFEST, data + b"\n")
        except BaseException:
            run.close()
            raise
        return run

    def path(self, run: str | Path) -> Path:
        """The folder of a run given by id (a name in this store) or by path."""
        candidate = Path(run)
        if candidate.is_absolute() or os.sep in str(run) or candidate.exists():
            return candidate.resolve()
        return self.dir / str(run)

    def open(self, run: str | Path, *, writable: bool = False) -> Run:
        """An existing run by id or path. `writable=True` takes its writer lock (to resume)."""
        run_dir = self.path(run)
        if not run_dir.is_dir():
            known = ", ".join(self.run_ids()[-5:]) or "none"
            raise RunError(f"no run {str(run)!r} in {self.dir} (latest: {known})")
        return Run(run_dir, writable=writable)

    def run_ids(self) -> list[str]:
        """The run folders under this store's folder, sorted by name."""
        if not self.dir.is_dir():
            return []
        return sorted(p.name for p in self.dir.iterdir()
                      if p.is_dir() and ((p / MANIFEST).exists() or (p / JOURNAL_DIR).is_dir()))

    def list(self) -> pd.DataFrame:
        """One row per run folder: id, name, created, status (complete / partial / failed /
        running, see `analysis.status`), case counts by outcome, attempts and cost.

        `cost_usd` is the known cost; it is NaN (unknown, never 0) when any attempt's cost is
        unknown and no attempt's cost is known; `cost_unknown_attempts` says how many.
        """
        import pandas as pd  # imported when a table is asked for: keeps `import store` light

        rows = []
        for run_id in self.run_ids():
            run = Run(self.dir / run_id)
            row: dict[str, Any] = {"run_id": run_id, "name": None, "created_at": None}
            try:
                m = run.manifest
                row.update(name=m["config"]["name"], created_at=m.get("created_at"))
            except RunError:
                pass
            try:
                fold = run.fold()
                figures = fold.figures | fold.activity()
                state = run_status(run, fold)
            except RunError as exc:  # a damaged journal: list the run, say so
                rows.append(row | {"status": f"damaged: {exc}"})
                continue
            cost = figures["cost_usd_known"]
            if figures["cost_unknown_attempts"] and figures["api_attempts"] == figures[
                    "cost_unknown_attempts"]:
                cost = float("nan")
            row.update(status=state.status, planned_cases=state.planned,
                       complete=state.complete, incomplete=state.incomplete,
                       failed=state.failed, unfinished=state.unfinished,
                       cases_finished=figures["cases_finished"],
                       api_attempts=figures["api_attempts"], cost_usd=cost,
                       cost_unknown_attempts=figures["cost_unknown_attempts"],
                       wall_ms=figures["wall_ms"], sessions=figures["sessions"])
            rows.append(row)
        return pd.DataFrame(rows, columns=LIST_COLUMNS)

    def ledger(self) -> pd.DataFrame:
        """Every API attempt of every run in this folder (aborted and development runs too)."""
        import pandas as pd

        from parquet_agent.analysis.frames import LEDGER_COLUMNS

        frames = []
        for run_id in self.run_ids():
            try:
                frames.append(Run(self.dir / run_id).ledger())
            except RunError:
                continue  # a damaged journal: `list()` reports it
        nonempty = [f for f in frames if len(f)]
        if not nonempty:
            return frames[0] if frames else pd.DataFrame(columns=LEDGER_COLUMNS)
        return pd.concat(nonempty, ignore_index=True)

    def ledger_totals(self) -> pd.DataFrame:
        """Ledger totals per run and category: attempts, known USD, attempts of unknown cost."""
        import pandas as pd

        ledger = self.ledger()
        if ledger.empty:
            return pd.DataFrame(columns=["run_id", "category", "attempts", "cost_usd",
                                         "cost_unknown_attempts"])
        grouped = ledger.groupby(["run_id", "category"], sort=True)
        return pd.DataFrame({
            "attempts": grouped.size(),
            "cost_usd": grouped["cost_usd"].sum(min_count=0),
            "cost_unknown_attempts": grouped["cost_known"].apply(lambda s: int((~s).sum())),
        }).reset_index()

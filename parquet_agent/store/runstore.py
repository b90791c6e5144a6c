"""The runs folder: create, open and list run folders of any kind.

    store = RunStore("runs")
    run = store.create("experiment", fields, name="smoke")   # new folder, manifest frozen,
                                                              # writable, locked
    run = store.open("2026-11-30-smoke")      # read-only; writable=True to resume
    store.run_ids()                           # every run folder, aborted ones too
    store.entries()                           # RunEntry(run_id, kind, path) for each

Run ids are `<UTC date>-<name slug>`, with `-2`, `-3`, ... when taken (or any id you pass). A
folder counts as a run if it holds a manifest or a journal folder, so a run aborted at any
point still shows up. What a kind of run reads from its folder (an experiment's fold, an audit's
report) is that kind's: `RunStore(dir, run_type=ExperimentRun)` opens and creates that class;
the kind-aware listing of every kind is `parquet_agent.RunStore` (`explore.runs`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from parquet_agent.errors import RunError
from parquet_agent.files import atomic_write_bytes, fsync_dir, utc_now
from parquet_agent.store.manifest import build_manifest
from parquet_agent.store.run import JOURNAL_DIR, MANIFEST, Run

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "run"


@dataclass(frozen=True)
class RunEntry:
    """One run folder of a runs folder: its id, its kind ("experiment", "audit", ...; None for a
    folder aborted before its manifest, or whose manifest cannot be read) and its path."""
    run_id: str
    kind: str | None
    path: Path


def check_run_id(run_id: str) -> None:
    """RunError unless `run_id` can name a run folder: letters, digits and ._+- only."""
    if not _RUN_ID.match(run_id):
        raise RunError(f"bad run id {run_id!r}: letters, digits and ._+- only")


def kind_of(run_dir: Path) -> str | None:
    """The kind a run folder's manifest declares (an experiment's before kinds existed)."""
    try:
        manifest = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # not a manifest: the run opens as broken
        return None
    return str(manifest.get("kind", "experiment")) if isinstance(manifest, dict) else None


class RunStore:
    """A folder of run folders; `run_type` is the `Run` class it opens and creates."""

    def __init__(self, runs_dir: str | Path, *, run_type: type[Run] = Run):
        self.dir = Path(runs_dir).resolve()
        self.run_type = run_type

    def __repr__(self) -> str:
        return f"RunStore({str(self.dir)!r})"

    def create(self, kind: str, fields: Mapping[str, Any], *, name: str = "run",
               run_id: str | None = None, prepared: Sequence[str] = ()) -> Run:
        """Make a new run folder, write its manifest once (`kind`, `fields` and their hash), and
        return it writable (locked). RunError when `run_id` is taken. `prepared`: entries a
        kind may have written into the folder before it exists as a run (the audit's dataset
        snapshot); any other entry makes the folder taken."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if run_id is not None:
            run_dir = self._claim(run_id, prepared)
        else:
            base = f"{datetime.now(timezone.utc):%Y-%m-%d}-{_slug(name)}"
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
        run = self.run_type(run_dir, writable=True)
        try:
            manifest = build_manifest(run_dir.name, utc_now(), kind, fields)
            (run_dir / JOURNAL_DIR).mkdir(exist_ok=True)
            (run_dir / "raw").mkdir(exist_ok=True)
            data = json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True).encode()
            atomic_write_bytes(run_dir / MANIFEST, data + b"\n")
        except BaseException:
            run.close()
            raise
        return run

    def _claim(self, run_id: str, prepared: Sequence[str]) -> Path:
        check_run_id(run_id)
        run_dir = self.dir / run_id
        try:
            run_dir.mkdir()
        except FileExistsError:
            if set(p.name for p in run_dir.iterdir()) - set(prepared):
                raise RunError(f"{run_dir} already exists; resume it with --resume or choose "
                               "another run id") from None
        return run_dir

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
        return self.type_of(run_dir)(run_dir, writable=writable)

    def type_of(self, run_dir: Path) -> type[Run]:
        """The `Run` class an existing folder opens as (a store of many kinds picks by kind)."""
        return self.run_type

    def run_ids(self) -> list[str]:
        """The run folders under this store's folder, sorted by name."""
        if not self.dir.is_dir():
            return []
        return sorted(p.name for p in self.dir.iterdir()
                      if p.is_dir() and ((p / MANIFEST).exists() or (p / JOURNAL_DIR).is_dir()))

    def entries(self, kind: str | None = None) -> list[RunEntry]:
        """Every run folder (of `kind`, when given), sorted by id."""
        found = [RunEntry(r, kind_of(self.dir / r), self.dir / r) for r in self.run_ids()]
        return [e for e in found if kind is None or e.kind == kind]

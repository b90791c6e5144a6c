"""`FindingsStore`: an index of audit runs, findings, observations and column metrics.

    store = FindingsStore.open("runs/findings.sqlite")           # embedded (default)
    store = FindingsStore.open("postgresql://user@host:5432/db")  # a team's server (psycopg 3)
    store.index(report); store.previous_run(lineage); store.findings_df(lineage)

The run folders' journals stay the source of truth: indexing a report again replaces its rows,
so the store can always be rebuilt from the folders. The same schema and the same statements
run on both backends (written once with `%s` parameters and `INSERT ... ON CONFLICT`, which
SQLite and PostgreSQL both speak).

Why SQLite for the embedded store, not DuckDB: it is in the standard library, it is one file
that several processes (an audit writing, a notebook reading) can open at once, and the store's
work is small keyed upserts and lookups, which is what SQLite does well; DuckDB holds a
whole-file lock for a writing process and is built for scans, which the journals and the
sandboxed tools already cover.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from parquet_agent.errors import UsageError

if TYPE_CHECKING:
    from parquet_agent.audit.report import AuditReport


class PreviousRun(TypedDict):
    """The baseline of a lineage's next audit: its run id and its open findings (as journaled)."""
    run_id: str
    findings: list[dict[str, Any]]

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS audit_runs (
        run_id TEXT PRIMARY KEY, lineage TEXT NOT NULL, snapshot_id TEXT NOT NULL,
        status TEXT NOT NULL, created_at TEXT NOT NULL, run_dir TEXT NOT NULL,
        model TEXT NOT NULL, findings INTEGER NOT NULL, dismissed INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS audit_findings (
        run_id TEXT NOT NULL, key TEXT NOT NULL, lineage TEXT NOT NULL, category TEXT NOT NULL,
        columns TEXT NOT NULL, title TEXT NOT NULL, severity TEXT NOT NULL,
        affected BIGINT NOT NULL, denominator BIGINT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (run_id, key))""",
    """CREATE TABLE IF NOT EXISTS audit_observations (
        run_id TEXT NOT NULL, key TEXT NOT NULL, source TEXT NOT NULL, affected BIGINT,
        denominator BIGINT, status TEXT NOT NULL, PRIMARY KEY (run_id, key, source))""",
    """CREATE TABLE IF NOT EXISTS audit_metrics (
        run_id TEXT NOT NULL, column_name TEXT NOT NULL, metric TEXT NOT NULL,
        value DOUBLE PRECISION, PRIMARY KEY (run_id, column_name, metric))""",
)
_METRICS = ("rows", "nulls", "distinct_approx")


class FindingsStore:
    """An index of audit runs, findings, observations and column metrics (SQLite file or a
    PostgreSQL URL); see the module docstring."""

    def __init__(self, target: str, con: Any, backend: str):
        self.target, self._con, self.backend = target, con, backend
        for statement in SCHEMA:
            self._execute(statement)
        self._con.commit()

    @classmethod
    def open(cls, target: str | Path) -> FindingsStore:
        """A store at `target`: a `postgresql://` URL, else a SQLite file path."""
        target = str(target)
        if target.startswith(("postgresql://", "postgres://")):
            try:
                import psycopg
            except ImportError as exc:
                raise UsageError("a PostgreSQL findings store needs psycopg 3: "
                                 "pip install 'psycopg[binary]'") from exc
            try:
                return cls(target, psycopg.connect(target), "postgresql")
            except psycopg.Error as exc:
                raise UsageError(f"cannot open the findings store {_redact(target)}: {exc}") from exc
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        return cls(target, sqlite3.connect(target, timeout=30), "sqlite")

    def reopen(self) -> FindingsStore:
        """A new connection to the same store (e.g. in another thread or process)."""
        return FindingsStore.open(self.target)

    def close(self) -> None:
        """Close the connection."""
        self._con.close()

    def __enter__(self) -> FindingsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _execute(self, sql: str, params: tuple = ()) -> Any:
        if self.backend == "sqlite":
            return self._con.execute(sql.replace("%s", "?"), params)
        return self._con.execute(sql, params)

    def index(self, report: AuditReport) -> None:
        """(Re)index one report: its run, findings, observations and column metrics."""
        manifest = json.loads((report.run_dir / "manifest.json").read_text())
        run_id = report.run_id
        for table in ("audit_findings", "audit_observations", "audit_metrics"):
            self._execute(f"DELETE FROM {table} WHERE run_id = %s", (run_id,))
        self._execute(
            "INSERT INTO audit_runs VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT "
            "(run_id) DO UPDATE SET status = excluded.status, findings = excluded.findings, "
            "dismissed = excluded.dismissed",
            (run_id, report.lineage, report.snapshot_id, report.status, manifest["created_at"],
             str(report.run_dir.resolve()), json.dumps(report.model.model_dump(exclude_unset=True)),
             len(report.findings), len(report.dismissed)))
        for f in report.findings:
            self._execute("INSERT INTO audit_findings VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                          (run_id, f.key, f.lineage, f.category, ",".join(f.columns), f.title,
                           f.severity, f.evidence.count, f.evidence.denominator,
                           json.dumps(f.to_json(), default=str)))
            self._observe(run_id, f.key, "finding", f.evidence.count, f.evidence.denominator, "open")
        for c in report.collisions:  # kept apart from the finding that holds the key
            self._observe(run_id, c.key, "collision", c.evidence.count, c.evidence.denominator,
                          "collision")
        for r in report.rechecks:
            after = r.after
            self._observe(run_id, r.key, "recheck", after.count if after else None,
                          after.denominator if after else None, r.status)
        for step in report.steps:
            if step.tool == "get_stats" and step.ok:
                out = step.output  # (get_stats' output: a tool's JSON)
                for metric in _METRICS:
                    self._execute("INSERT INTO audit_metrics VALUES (%s, %s, %s, %s) "
                                  "ON CONFLICT DO NOTHING", (run_id, out["column"], metric,
                                                             float(out[metric])))
        self._con.commit()

    def _observe(self, run_id: str, key: str, source: str, count: int | None,
                 denominator: int | None, status: str) -> None:
        self._execute("INSERT INTO audit_observations VALUES (%s, %s, %s, %s, %s, %s) "
                      "ON CONFLICT DO NOTHING", (run_id, key, source, count, denominator, status))

    def previous_run(self, lineage: str, *, exclude: str | None = None) -> PreviousRun | None:
        """The latest complete indexed run of `lineage` (but `exclude`) with its open findings
        (a failed or cut-short audit re-checked too little to be the baseline of the next)."""
        row = self._execute(
            "SELECT run_id FROM audit_runs WHERE lineage = %s AND run_id <> %s "
            "AND status = 'complete' "
            "ORDER BY created_at DESC, run_id DESC LIMIT 1", (lineage, exclude or "")).fetchone()
        if row is None:
            return None
        return {"run_id": row[0], "findings": self.run_findings(row[0])}

    def run_findings(self, run_id: str) -> list[dict[str, Any]]:
        """The open findings indexed for one run (as journaled), by key; [] for a run the
        store does not hold."""
        rows = self._execute("SELECT data FROM audit_findings WHERE run_id = %s ORDER BY key",
                             (run_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def runs(self, lineage: str | None = None) -> list[dict[str, Any]]:
        """Indexed audit runs (of one lineage, or all), with their status and finding counts."""
        sql = "SELECT run_id, lineage, snapshot_id, status, created_at, findings, dismissed FROM audit_runs"
        params: tuple = ()
        if lineage is not None:
            sql, params = sql + " WHERE lineage = %s", (lineage,)
        names = ("run_id", "lineage", "snapshot_id", "status", "created_at", "findings", "dismissed")
        return [dict(zip(names, r)) for r in self._execute(sql + " ORDER BY created_at, run_id", params)]

    def findings(self, lineage: str | None = None) -> list[dict[str, Any]]:
        """Indexed findings (of one lineage, or all): key, category, columns, severity, counts."""
        sql = ("SELECT run_id, key, category, columns, title, severity, affected, denominator "
               "FROM audit_findings")
        params: tuple = ()
        if lineage is not None:
            sql, params = sql + " WHERE lineage = %s", (lineage,)
        names = ("run_id", "key", "category", "columns", "title", "severity", "affected", "denominator")
        return [dict(zip(names, r)) for r in self._execute(sql + " ORDER BY run_id, key", params)]

    def observations(self, key: str) -> list[dict[str, Any]]:
        """Every observation of one finding key across runs (source, counts, status)."""
        names = ("run_id", "key", "source", "affected", "denominator", "status")
        rows = self._execute("SELECT * FROM audit_observations WHERE key = %s ORDER BY run_id, source",
                             (key,))
        return [dict(zip(names, r)) for r in rows]

    def metrics(self, column: str) -> list[dict[str, Any]]:
        """The column metrics recorded for `column` in every indexed run."""
        names = ("run_id", "column_name", "metric", "value")
        rows = self._execute("SELECT * FROM audit_metrics WHERE column_name = %s "
                             "ORDER BY run_id, metric", (column,))
        return [dict(zip(names, r)) for r in rows]


def _redact(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url

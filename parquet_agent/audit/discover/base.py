"""What every discovery rule shares: the table it reads, the candidate it proposes, the probe
that runs its SQL in the sandbox.

- `Table`: a view name, its columns with their kind (`integer`, `float`, `decimal`, `text`,
  `date`, `timestamp`, `boolean`, `other`) and its row count.
- `Candidate`: a finding proposal (the `write_finding` arguments) plus the rule that made it and
  whether it is *reported* (proposed to the finding gate) or only *noted* (a rule whose false
  alarms on clean real tables are not rare enough: the auditor sees it, no finding is made).
- `Probe`: runs one SELECT through `AuditTools.run_query` (the sandboxed workers, the SQL gate)
  and returns rows as dicts, or raises `ProbeError`, which `discover` turns into a note: a
  failed query never stops the audit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from parquet_agent.tools.result import ToolResult

KINDS = ("integer", "float", "decimal", "text", "date", "timestamp", "boolean", "other")
NUMERIC = ("integer", "float", "decimal")
SAMPLE_ROWS = 200_000  # discovery reads at most this many rows of a table per query, sampled


class QueryTool(Protocol):
    def run_query(self, sql: str) -> ToolResult: ...


class ProbeError(Exception):
    """A discovery query failed (its message says which and why)."""


def q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def lit(value: Any) -> str:
    """A SQL literal for a text, number or None."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def kind_of(arrow_type: str) -> str:
    """The discovery kind of an Arrow (or DuckDB) type name."""
    t = arrow_type.lower()
    if t.startswith(("int", "uint", "tinyint", "smallint", "bigint", "hugeint", "ubigint")):
        return "integer"
    if t.startswith(("double", "float", "halffloat", "real")):
        return "float"
    if t.startswith("decimal"):
        return "decimal"
    if t in ("string", "large_string", "utf8", "large_utf8", "varchar", "string_view"):
        return "text"
    if t.startswith("date"):
        return "date"
    if t.startswith("timestamp"):
        return "timestamp"
    if t in ("bool", "boolean"):
        return "boolean"
    return "other"


@dataclass(frozen=True)
class Table:
    view: str
    columns: tuple[tuple[str, str], ...]  # (name, kind)
    rows: int
    documented_keys: tuple[str, ...] = ()  # columns the dataset documents as unique

    def of_kind(self, *kinds: str) -> list[str]:
        return [name for name, kind in self.columns if kind in kinds]

    def kind(self, column: str) -> str:
        return dict(self.columns)[column]

    @property
    def source(self) -> str:
        """FROM-clause text reading at most `SAMPLE_ROWS` rows (a fixed-seed sample beyond)."""
        if self.rows <= SAMPLE_ROWS:
            return self.view
        return f"(SELECT * FROM {self.view} USING SAMPLE reservoir({SAMPLE_ROWS} ROWS) REPEATABLE (7))"

    @property
    def sampled(self) -> str | None:
        """What a rule says about reading `source` (None when it read every row)."""
        if self.rows <= SAMPLE_ROWS:
            return None
        return f"found on a fixed-seed sample of {SAMPLE_ROWS:,} of {self.rows:,} rows; counted exactly by the gate"


@dataclass(frozen=True)
class Candidate:
    rule: str
    arguments: dict[str, Any]  # write_finding's arguments: category, columns, title, ...
    report: bool = True
    support: dict[str, Any] = field(default_factory=dict)  # what the rule measured

    @property
    def title(self) -> str:
        return str(self.arguments["title"])

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "report": self.report, "arguments": dict(self.arguments),
                "support": dict(self.support)}


def candidate(rule: str, category: str, table: Table, columns: list[str], title: str,
              rationale: str, predicate: str, *, report: bool = True,
              support: dict[str, Any] | None = None, note: str | None = None) -> Candidate:
    """A row-predicate candidate over `table`'s view (`note`: what was sampled, appended)."""
    text = rationale + (f" ({note})" if note else "")
    args = {"category": category, "columns": sorted(set(columns)), "title": title,
            "rationale": text, "predicate": predicate, "view": table.view}
    return Candidate(rule, args, report, support or {})


class Probe:
    """Runs discovery SQL in the sandbox; counts the queries it ran."""

    def __init__(self, tools: QueryTool):
        self.tools = tools
        self.queries = 0

    def rows(self, sql: str) -> list[dict[str, Any]]:
        self.queries += 1
        result = self.tools.run_query(sql)
        if not result.ok:
            raise ProbeError(result.model_text())
        columns = result.output["columns"]
        if result.truncated:
            raise ProbeError(f"the result was cut ({result.truncated}); the rule reads too much")
        return [dict(zip(columns, row)) for row in result.output["rows"]]

    def one(self, sql: str) -> dict[str, Any]:
        rows = self.rows(sql)
        if len(rows) != 1:
            raise ProbeError(f"expected one row, got {len(rows)}")
        return rows[0]

    def per_column(self, columns: list[str], terms: Callable[[int, str], str], source: str,
                   chunk: int = 20) -> Iterator[tuple[str, Callable[[str], Any]]]:
        """Aggregates of many columns, `chunk` columns a query: `terms(i, column)` gives the
        column's aggregates with aliases ending in `i`; yields each column with a getter of its
        values by alias stem (`get("hi")` is the column's `hi{i}`)."""
        for start in range(0, len(columns), chunk):
            part = columns[start:start + chunk]
            row = self.one(f"SELECT {', '.join(terms(i, c) for i, c in enumerate(part))} FROM {source}")
            for i, column in enumerate(part):
                yield column, functools.partial(_cell, row, i)


def _cell(row: dict[str, Any], i: int, stem: str) -> Any:
    return row[f"{stem}{i}"]


def number(value: Any) -> float | None:
    """A finite float from a query cell (non-finite values come back as text), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None

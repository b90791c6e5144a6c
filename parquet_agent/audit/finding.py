"""Findings: what a proposer says, the evidence the gate computes, and the idempotent key.

A `Proposal` is what `write_finding` receives (from a model or the baseline). It proves itself
either by a row `predicate` over a view (the usual case: the gate derives the count, denominator
and examples queries from it) or by its own `count_sql` / `denominator_sql` (aggregate defects
such as a missing month), or, for `schema_drift`, by the snapshot's file schemas. The proposer's
own numbers are never used: `evidence.compute` runs the queries in the sandbox.

The key is `F-` + a hash of (lineage, category, sorted columns, fingerprint), where the
fingerprint is a hash of the count query's parse tree from DuckDB (`json_serialize_sql`, with
source positions removed): the same predicate written with other spacing, case or parentheses
is the same finding, two different predicates on one column are two findings.

`Evidence` and `Finding` are the typed records of `report.audit_model` (findings.json's shape).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import duckdb

from parquet_agent.audit.taxonomy import CATEGORIES
# the records themselves live with findings.json's shape (report.audit_model); named here too
from parquet_agent.report.audit_model import Evidence, Finding, wilson
from parquet_agent.tools.gate import MAX_PARSE_CHARS, query_size_problem

MAX_EXAMPLES = 5
_SQL_FIELDS = ("predicate", "count_sql", "denominator_sql", "examples_sql")
_POSITION_KEYS = frozenset({"query_location", "query_location_length"})


@dataclass(frozen=True)
class Proposal:
    category: str
    columns: tuple[str, ...]
    title: str
    rationale: str
    predicate: str | None = None
    view: str = "data"
    count_sql: str | None = None
    denominator_sql: str | None = None
    examples_sql: str | None = None
    severity: str | None = None
    severity_reason: str | None = None

    @classmethod
    def from_arguments(cls, args: dict[str, Any]) -> tuple[Proposal | None, str | None]:
        """(proposal, None) or (None, what is wrong) for untrusted `write_finding` arguments."""
        if not isinstance(args, dict):
            return None, "write_finding takes a JSON object"
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(args) - known - {"confidence"})
        if unknown:
            return None, f"unknown write_finding argument(s): {', '.join(unknown)}"
        missing = [k for k in ("category", "columns", "title", "rationale") if not args.get(k)]
        if missing:
            return None, f"write_finding needs {', '.join(missing)}"
        columns = args["columns"]
        if isinstance(columns, str):
            columns = [columns]
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            return None, "columns must be a list of column names"
        texts = {k: args.get(k) for k in known - {"columns"}}
        if any(v is not None and not isinstance(v, str) for v in texts.values()):
            return None, "every write_finding argument but columns must be text"
        proposal = cls(**{**{k: v for k, v in texts.items() if v is not None},
                          "columns": tuple(sorted(set(columns)))})
        if proposal.category not in CATEGORIES:
            return None, (f"category {proposal.category!r} is not in the taxonomy: "
                          + ", ".join(CATEGORIES))
        if proposal.predicate is None and proposal.count_sql is None \
                and proposal.category != "schema_drift":
            return None, "give a row predicate (WHERE clause over `view`) or a count_sql"
        if proposal.count_sql is not None and proposal.denominator_sql is None:
            return None, "a count_sql needs its denominator_sql"
        for name in _SQL_FIELDS:  # before anything parses them (the fingerprint, the gate)
            problem = query_size_problem(getattr(proposal, name) or "")
            if problem:
                return None, f"{name}: {problem}"
        return proposal, None

    def queries(self, key_columns: tuple[str, ...]) -> tuple[str, str, str | None] | None:
        """(count, denominator, examples) SQL, or None for a schema-metadata finding."""
        if self.predicate is not None:
            where = f"FROM {self.view} WHERE ({self.predicate})"
            # a column of a table is shown by its name in its view (`flights.dep_delay` ->
            # `dep_delay`); another table's columns are not in this view's rows
            prefix = self.view + "."
            own = [c.removeprefix(prefix) for c in self.columns
                   if c.startswith(prefix) or "." not in c]
            shown = ", ".join(_capped(c) for c in dict.fromkeys([*key_columns, *own]))
            return (f"SELECT count(*) {where}", f"SELECT count(*) FROM {self.view}",
                    f"SELECT {shown} {where} ORDER BY _file, _row LIMIT {MAX_EXAMPLES}")
        if self.count_sql is not None:
            return self.count_sql, self.denominator_sql or "", self.examples_sql
        return None


def _capped(column: str) -> str:
    quoted = '"' + column.replace('"', '""') + '"'
    if column in ("_file", "_row"):
        return quoted
    return f"CASE WHEN typeof({quoted}) = 'VARCHAR' THEN left(CAST({quoted} AS VARCHAR), 120) " \
           f"ELSE CAST({quoted} AS VARCHAR) END AS {quoted}"


def fingerprint(sql: str) -> str:
    """A hash of `sql`'s DuckDB parse tree without source positions (`fp:` + 32 hex); a
    ValueError when it does not parse or is too long to parse."""
    statements = _parse(sql)
    try:  # a tree DuckDB parses may still nest deeper than Python's recursion limit
        canonical = json.dumps(_strip_positions(statements), sort_keys=True,
                               separators=(",", ":"))
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    return "fp:" + hashlib.sha256(canonical.encode()).hexdigest()[:32]


def referenced_columns(sql: str) -> frozenset[str] | None:
    """Every identifier of every column reference in `sql`, lower-cased (`t.c` gives `t` and
    `c`); None when it reads every column (`*`, `COLUMNS(*)`). A ValueError as `fingerprint`."""
    names: set[str] = set()
    stack: list[Any] = [_parse(sql)]
    while stack:  # iterative: the tree may be deeper than Python's recursion limit
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("class") == "COLUMN_REF":
                names.update(str(n).lower() for n in node.get("column_names") or ())
            elif node.get("class") == "STAR":
                return None
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


@functools.lru_cache(maxsize=64)  # the fingerprint and the column check parse one query each
def _parse(sql: str) -> list[Any]:
    """The statements of `sql`'s DuckDB parse tree (shared: callers only read it)."""
    problem = query_size_problem(sql, MAX_PARSE_CHARS)
    if problem:
        raise ValueError(f"the count query is not fingerprinted: {problem}")
    con = duckdb.connect(":memory:")
    try:
        [(text,)] = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()  # one row
    finally:
        con.close()
    try:
        tree = json.loads(text)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    if tree.get("error"):
        raise ValueError(f"the count query does not parse: {tree.get('error_message')}")
    return list(tree["statements"])


_TOO_DEEP = "the count query nests too deeply to fingerprint; write it flatter"


def _strip_positions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_positions(v) for k, v in node.items() if k not in _POSITION_KEYS}
    if isinstance(node, list):
        return [_strip_positions(v) for v in node]
    return node


def finding_key(lineage: str, category: str, columns: tuple[str, ...], print_: str) -> str:
    material = json.dumps([lineage, category, sorted(columns), print_], separators=(",", ":"))
    return "F-" + hashlib.sha256(material.encode()).hexdigest()[:16]


__all__ = ["MAX_EXAMPLES", "Evidence", "Finding", "Proposal", "finding_key", "fingerprint",
           "referenced_columns", "wilson"]

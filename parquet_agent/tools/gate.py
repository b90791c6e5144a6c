"""The SQL gate: exactly one read-only SELECT, decided by DuckDB's own parser.

`parse_select(con, sql)` returns the parsed `Statement` to execute, or raises `GateRejection`
with a message for the agent. Two checks, both from DuckDB (measured on 2.0.1, see
`shared/notes/duckdb-sandbox-and-limits.md` A.6):

1. `con.extract_statements(sql)` must give exactly one statement of type SELECT (this handles
   `;` inside comments and strings; PIVOT is MULTI, EXPLAIN is EXPLAIN, PRAGMA x=.. is SET).
2. The statement type is not enough on 2.0: `WITH x AS (DELETE/INSERT/UPDATE/COPY ...) SELECT`
   is typed SELECT and ran (one overwrote a corpus file). So `json_serialize_sql` serialises the
   tree and every query node must be a SELECT, set operation or (recursive) CTE node; the
   `query`/`query_table` table functions, which re-parse a string at run time, and the settings
   functions, which reveal host paths, are refused.

The caller executes the returned `Statement` object, never the original string, so nothing but
the validated statement can run even if two parsers disagreed on statement boundaries.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

MAX_QUERY_CHARS = 20_000
_ALLOWED_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "CTE_NODE", "RECURSIVE_CTE_NODE"})
# query/query_table re-parse a string at run time; the settings functions reveal host paths
# (DuckDB resolves the worker's /proc/self/fd paths in `allowed_paths`).
_DENIED_FUNCTIONS = frozenset({"query", "query_table", "current_setting", "duckdb_settings"})
_HINT = (
    "Send exactly one read-only SELECT (WITH ... SELECT is fine) over the view `filings` "
    "(or `filing` when scoped with file_stem)."
)


class GateRejection(Exception):
    """The query is not one read-only SELECT; `kind` is `sql` (unparsable) or `forbidden`."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def parse_select(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    """The one SELECT statement in `sql`, checked; raises GateRejection otherwise."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise GateRejection("sql", f"could not parse the query: {first_line(exc)}") from exc
    if len(statements) != 1:
        raise GateRejection(
            "forbidden" if statements else "validation",
            f"expected exactly one statement, got {len(statements)}. {_HINT}",
        )
    statement = statements[0]
    if statement.type != duckdb.StatementType.SELECT:
        kind_name = str(statement.type).rsplit(".", 1)[-1]
        extra = ""
        if kind_name == "MULTI":  # PIVOT without IN (...) first creates an enum type
            extra = " A PIVOT needs explicit values: PIVOT ... ON col IN (v1, v2) USING ...;"
        raise GateRejection(
            "forbidden",
            f"only a read-only SELECT may run; this is a {kind_name} statement.{extra} {_HINT}",
        )
    tree = _serialize(con, sql)
    _walk(tree)
    return statement


def _serialize(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    try:
        (text,) = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    except duckdb.Error as exc:
        raise GateRejection("forbidden", f"the query could not be checked: {first_line(exc)}") from exc
    tree = json.loads(text)
    if tree.get("error"):
        message = tree.get("error_message", "unknown error")
        kind = "sql" if tree.get("error_type") == "parser" else "forbidden"
        raise GateRejection(kind, f"the query was refused: {message}. {_HINT}")
    return tree


def _walk(node: Any) -> None:
    # Iterative walk: a deeply nested query must not blow the Python stack.
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            node_type = item.get("type")
            if isinstance(node_type, str) and node_type.endswith("_NODE") and node_type not in _ALLOWED_NODES:
                what = node_type.removesuffix("_QUERY_NODE").removesuffix("_NODE")
                raise GateRejection(
                    "forbidden",
                    f"a {what} inside the query is not allowed (data-modifying or COPY CTEs "
                    f"are refused). {_HINT}",
                )
            name = item.get("function_name")
            if isinstance(name, str) and name.lower() in _DENIED_FUNCTIONS:
                raise GateRejection("forbidden", f"the function {name}() is not available to tools.")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

"""The SQL gate: exactly one read-only SELECT, made only of parts on an allow-list.

`parse_select(con, sql)` returns the parsed `Statement` to execute, or raises `GateRejection`
with a message for the agent. The gate is closed by construction: it says what may run, and
everything else (including whatever a DuckDB upgrade adds) is refused. From DuckDB's own parser
(measured on 2.0.1, see `shared/notes/duckdb-sandbox-and-limits.md` A.6):

1. `con.extract_statements(sql)` must give exactly one statement of type SELECT (this handles
   `;` inside comments and strings; PIVOT is MULTI, EXPLAIN is EXPLAIN, PRAGMA x=.. is SET).
2. `json_serialize_sql` gives the whole parsed tree, and every part of it, in every nested
   statement (subqueries, CTEs, set operations, lambdas), must be allowed (`_Walk`):
   - query nodes: SELECT, set operations, CTEs; no data-modifying or COPY CTE (on 2.0 those
     are typed SELECT and ran: one overwrote a corpus file);
   - tables: only the views `filings`/`filing` and the query's own CTEs where they are in
     scope, never with a schema or catalog (`pg_catalog.pg_settings` shows host paths,
     `information_schema`, `duckdb_*` views show the catalog);
   - table functions: `_TABLE_FUNCTIONS` (ranges and unnesting; no file readers, `query`,
     `query_table`, `json_execute_serialized_sql`, `duckdb_*()`);
   - scalar, aggregate, window and macro functions: the list in `sql_functions.txt`, without
     a schema (no SQL text executed or parsed, no settings, catalogs or variables, no writes);
   - expression classes: `_EXPRESSION_CLASSES` (no parameters, no DEFAULT).
   A refused function or table is a `sql` error that names it; a refused statement or node
   is `forbidden`.

The caller executes the returned `Statement` object, never the original string, so nothing but
the validated statement can run even if two parsers disagreed on statement boundaries. DuckDB's
own file allow-list and the kernel (uid drop, Landlock) stay the second and third walls.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import duckdb

MAX_QUERY_CHARS = 20_000  # what a model may write as one query (a tool argument)
# What any parse in our processes accepts: a model's query plus the wrappers the audit puts
# around a predicate. Checked before DuckDB parses anything: a 6.9 MB IN-list cost 2 GiB and
# 27-50 s of parsing and json.loads of its tree before it was refused.
MAX_PARSE_CHARS = 2 * MAX_QUERY_CHARS
MAX_TREE_DEPTH = 400  # nesting of the parsed tree; a real query stays far below
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "CTE_NODE", "RECURSIVE_CTE_NODE"})
_TABLE_REFS = frozenset({"BASE_TABLE", "JOIN", "SUBQUERY", "TABLE_FUNCTION", "EMPTY",
                         "EXPRESSION_LIST", "PIVOT", "SHOW_REF"})
_OTHER_TYPED = frozenset({"ORDER_MODIFIER", "LIMIT_MODIFIER", "LIMIT_PERCENT_MODIFIER",
                          "DISTINCT_MODIFIER", "ORDER_DEFAULT", "ASCENDING", "DESCENDING"})
_EXPRESSION_CLASSES = frozenset({
    "BETWEEN", "CASE", "CAST", "COLLATE", "COLUMN_REF", "COMPARISON", "CONJUNCTION", "CONSTANT",
    "FUNCTION", "LAMBDA", "LAMBDA_REF", "OPERATOR", "POSITIONAL_REFERENCE", "STAR", "SUBQUERY",
    "WINDOW", "TYPE",
})
_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest", "json_each", "json_tree",
                              "regexp_split_to_table", "repeat", "repeat_row"})
VIEWS = frozenset({"filings", "filing"})
_HINT = (
    "Send exactly one read-only SELECT (WITH ... SELECT is fine) over the view `filings` "
    "(or `filing` when scoped with file_stem)."
)


class GateRejection(Exception):
    """The query may not run; `kind` is `sql` (unparsable, or a function or table that is not
    available), `forbidden` (not a read-only SELECT) or `validation` (no statement, or more
    than `MAX_PARSE_CHARS` characters: refused before it is parsed)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@functools.cache
def allowed_functions() -> frozenset[str]:
    """The function names agent SQL may call (`sql_functions.txt`, lower case)."""
    text = resources.files("parquet_agent.tools").joinpath("sql_functions.txt").read_text("utf-8")
    return frozenset(line.strip().lower() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


def parse_select(con: duckdb.DuckDBPyConnection, sql: str,
                 tables: frozenset[str] | None = VIEWS) -> duckdb.Statement:
    """The one SELECT statement in `sql`, checked; raises GateRejection otherwise. `tables`:
    the view names the query may read besides its own CTEs (an audit's `data` and per-file
    views; `filings`/`filing` by default); None: any name without a schema or catalog (a
    pre-check that does not know the views; the worker's gate then checks the real ones)."""
    problem = query_size_problem(sql, MAX_PARSE_CHARS)
    if problem:
        raise GateRejection("validation", problem)
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
    try:
        statement_type = statement.type
    except ValueError as exc:  # a statement type this DuckDB binding cannot name (UPDATE EXTENSIONS)
        raise GateRejection("sql", f"this kind of statement is not available ({exc}). {_HINT}") from exc
    if statement_type != duckdb.StatementType.SELECT:
        kind_name = str(statement_type).rsplit(".", 1)[-1]
        extra = ""
        if kind_name == "MULTI":  # PIVOT without IN (...) first creates an enum type
            extra = " A PIVOT needs explicit values: PIVOT ... ON col IN (v1, v2) USING ...;"
        raise GateRejection(
            "forbidden",
            f"only a read-only SELECT may run; this is a {kind_name} statement.{extra} {_HINT}",
        )
    names = None if tables is None else frozenset(t.lower() for t in tables)
    _Walk(allowed_functions(), names).check(_serialize(con, sql))
    return statement


def query_size_problem(sql: str, limit: int = MAX_QUERY_CHARS) -> str | None:
    """What is wrong with `sql`'s size (None when it is within `limit` characters): checked
    before anything parses it."""
    if len(sql) <= limit:
        return None
    return (f"the query has {len(sql):,} characters, over the limit of {limit:,}; write it "
            "shorter (a long IN list is better as a condition on a column or a range).")


def _serialize(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    try:
        [(text,)] = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()  # one row
    except duckdb.Error as exc:
        raise GateRejection("forbidden", f"the query could not be checked: {first_line(exc)}") from exc
    try:
        tree = json.loads(text)
    except RecursionError:
        raise GateRejection("sql", _too_deep()) from None
    if tree.get("error"):
        message = tree.get("error_message", "unknown error")
        kind = "sql" if tree.get("error_type") == "parser" else "forbidden"
        raise GateRejection(kind, f"the query was refused: {message}. {_HINT}")
    return tree


def _too_deep() -> str:
    return (f"the query nests too deeply (more than {MAX_TREE_DEPTH} levels of subqueries, "
            "calls, CASEs or joins); write it flatter, e.g. with CTEs or IN lists.")


class _Walk:
    """An iterative walk of the parsed tree (a deep query must not blow the Python stack) that
    carries the CTE names in scope, so a table name is a CTE only where DuckDB would bind it so."""

    def __init__(self, functions: frozenset[str], tables: frozenset[str] | None):
        self._functions = functions
        self._tables = tables

    def check(self, tree: Any) -> None:
        stack: list[tuple[Any, frozenset[str], int]] = [(tree, frozenset(), 0)]
        while stack:
            item, ctes, depth = stack.pop()
            if depth > MAX_TREE_DEPTH:
                raise GateRejection("sql", _too_deep())
            if isinstance(item, list):
                stack.extend((value, ctes, depth + 1) for value in item)
            elif isinstance(item, dict):
                stack.extend(self._children(item, ctes, depth))

    def _children(self, item: dict, ctes: frozenset[str], depth: int) -> list:
        self._allow(item, ctes)
        entries = (item.get("cte_map") or {}).get("map") or []
        names = [str(entry.get("key", "")).lower() for entry in entries]
        children = []
        for position, entry in enumerate(entries):  # a CTE sees the ones before it and itself
            children.append((entry.get("value"), ctes | frozenset(names[: position + 1]), depth + 1))
        inner = ctes | frozenset(names)
        children += [(value, inner, depth + 1) for key, value in item.items() if key != "cte_map"]
        return children

    def _allow(self, item: dict, ctes: frozenset[str]) -> None:
        kind = item.get("class")
        node_type = item.get("type")
        if isinstance(kind, str):
            if kind not in _EXPRESSION_CLASSES:
                raise GateRejection("sql", f"{_what(kind)} expressions are not available. {_HINT}")
            if kind in ("FUNCTION", "WINDOW"):
                self._function(item, self._functions, "function")
            return
        if not isinstance(node_type, str):
            return
        if node_type.endswith("_NODE") and node_type not in _QUERY_NODES:
            raise GateRejection(
                "forbidden",
                f"a {_what(node_type.removesuffix('_QUERY_NODE').removesuffix('_NODE'))} inside "
                f"the query is not allowed (data-modifying or COPY CTEs are refused). {_HINT}",
            )
        if node_type == "BASE_TABLE":
            self._table(item, ctes, self._tables)
        elif node_type == "TABLE_FUNCTION":
            function = item.get("function") or {}
            self._function(function, _TABLE_FUNCTIONS, "table function")
        elif node_type == "SHOW_REF" and (item.get("query") is None or item.get("table_name")):
            raise GateRejection("sql", f"SHOW lists the catalog, which is not available; "
                                       f"describe_corpus gives the schema. {_HINT}")
        elif node_type not in _QUERY_NODES | _TABLE_REFS | _OTHER_TYPED:
            raise GateRejection("forbidden", f"a {_what(node_type)} is not allowed in tool SQL. {_HINT}")

    @staticmethod
    def _function(item: dict, allowed: frozenset[str], what: str) -> None:
        name = str(item.get("function_name", ""))
        qualified = ".".join(p for p in (item.get("catalog"), item.get("schema"), name) if p)
        if name.lower() not in allowed or item.get("catalog") or item.get("schema"):
            raise GateRejection(
                "sql",
                f"the {what} {qualified}() is not available to tools (only ordinary scalar, "
                "aggregate and window functions and range/unnest are: nothing that runs SQL "
                "text, reads settings or catalogs, or touches files).",
            )

    @staticmethod
    def _table(item: dict, ctes: frozenset[str], tables: frozenset[str] | None) -> None:
        name = str(item.get("table_name", ""))
        parts = [p for p in (item.get("catalog_name"), item.get("schema_name"), name) if p]
        known = tables is None and "/" not in name and "." not in name
        if len(parts) == 1 and (known or name.lower() in (tables or ()) or name.lower() in ctes):
            return
        shown = ".".join(parts)
        if "/" in shown or ":" in shown or len(shown) > 64:  # a replacement scan of a path
            shown = "given as a file path or URL"
        views = sorted((tables or VIEWS) - VIEWS)
        readable = (f"the views {', '.join(views[:30])}" if views else
                    "the view `filings` (or `filing` when scoped with file_stem)")
        raise GateRejection(
            "sql",
            f"the table {shown} is not available to tools: queries read only {readable} and "
            "their own CTEs; catalogs and settings are not readable (describe_corpus or "
            "schema_sample gives the schema).",
        )


def _what(name: str) -> str:
    return name.replace("_", " ").strip() or "part"


def first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

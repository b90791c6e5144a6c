"""The action gate: deterministic rules that judge a SQL call before any worker runs it.

    verdict, critique = query_rules(sql, long_text=["parsed_md"])     # PASS | WARN | FAIL
    tools = ActionGate(tools, record=journal.append, scoped=False)   # a ToolExecutor

`query_rules` is the rule set of the data-quality auditor's action gate (`audit.rules`) and of a
question-answering experiment's optional one (`[gates] action = ["rules"]`, off by default):

- FAIL (a `validation` error) when the query is over `MAX_QUERY_CHARS`, before anything parses it;
- FAIL when the SQL gate (`tools.gate`) refuses the statement;
- FAIL on a pattern scan (`contains`, LIKE, regexp, ...) over a long-text column of the whole
  dataset that no other column narrows: it would only run into the CPU-seconds limit. Rows
  already narrowed (a `file_stem` argument, a question's scope) are not "the whole dataset";
- WARN when the outermost SELECT returns whole long-text cells (capped at 2,000 characters);
- PASS otherwise.

`ActionGate` wraps a `Tools` / `ScopedTools` view for one case: every `sql` call is evaluated
first and the evaluation handed to `record` (the case journal's `append`: a `gate_evaluation`
event just before the call's `tool_call`); a FAIL is returned as the tool's error value (kind
`forbidden`, the critique in the message) and reaches no worker. Other tools pass through
unevaluated: the rules are about SQL.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import duckdb

from parquet_agent.models.protocol import ToolSpec
from parquet_agent.tools.gate import GateRejection, parse_select, query_size_problem
from parquet_agent.tools.result import GateEvaluation, ToolResult, error_result
from parquet_agent.tools.specs import MAX_ARGUMENT_CHARS

TOO_LONG = "too long to check"  # how a size refusal's critique starts
LONG_TEXT = ("parsed_md",)  # the filings corpus's long-text column
SCAN_FUNCTIONS = frozenset({"contains", "~~", "~~*", "!~~", "!~~*", "like", "ilike",
                            "regexp_matches", "regexp_full_match", "regexp_extract", "strpos",
                            "instr", "position", "starts_with", "ends_with"})


def query_rules(sql: str, long_text: list[str] | tuple[str, ...],
                narrowed: bool = False) -> tuple[str, str]:
    """(verdict, critique) of one SELECT: the SQL gate, narrowed scans, whole long cells.
    `narrowed`: the query runs over rows already narrowed (one filing, a scope)."""
    too_long = query_size_problem(sql)
    if too_long:  # before DuckDB or json.loads sees it
        return "FAIL", f"{TOO_LONG}: {too_long}"
    con = duckdb.connect(":memory:")
    try:
        parse_select(con, sql, tables=None)  # the views are checked again in the worker
        [(text,)] = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()  # one row
    except GateRejection as exc:
        return "FAIL", f"the SQL gate refuses it ({exc.kind}): {exc.message}"
    finally:
        con.close()
    tree = json.loads(text)
    scanned = _scanned_text_columns(tree, set(long_text))
    if scanned and not narrowed and not _narrowed(tree, scanned):
        return "FAIL", (f"a pattern scan over {', '.join(sorted(scanned))} across the whole "
                        "dataset: narrow it first by another column (a file, a month, a key) "
                        "or use get_stats")
    whole = _whole_cells(tree, set(long_text))
    if whole:
        return "WARN", (f"returns whole {', '.join(sorted(whole))} cells (capped at 2,000 "
                        "characters each): select left(col, n) or length(col) instead")
    return "PASS", "valid"


class ActionGate:
    """A ToolExecutor: one case's tools behind the action rules (see the module docstring)."""

    def __init__(self, tools: Any, record: Callable[[GateEvaluation], Any], *,
                 scoped: bool = False, long_text: tuple[str, ...] = LONG_TEXT):
        self.tools = tools
        self.strategy = tools.strategy
        self.record = record
        self.scoped = scoped
        self.long_text = long_text

    def specs(self) -> tuple[ToolSpec, ...]:
        return self.tools.specs()

    def call_raw(self, name: object, arguments: object) -> ToolResult:
        args = _sql_arguments(name, arguments)
        if args is None:
            return self.tools.call_raw(name, arguments)
        narrowed = self.scoped or args.get("file_stem") is not None
        verdict, critique = query_rules(args["query"], self.long_text, narrowed)
        self.record(GateEvaluation("action", "rules", "sql", args, verdict, critique, narrowed))
        if verdict == "FAIL":
            kind = "validation" if critique.startswith(TOO_LONG) else "forbidden"
            return error_result(name, arguments, kind, f"action gate (rules) FAIL: {critique}")
        return self.tools.call_raw(name, arguments)


def _sql_arguments(name: object, arguments: object) -> dict[str, Any] | None:
    """The arguments of an `sql` call with a query string; None for anything else (the tool
    itself reports malformed arguments)."""
    if name != "sql":
        return None
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_CHARS:  # the tool itself refuses it, unparsed
            return None
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    if not isinstance(arguments, dict) or not isinstance(arguments.get("query"), str):
        return None
    return dict(arguments)


# -- reading DuckDB's parse tree (json_serialize_sql) -------------------------------------------


def _whole_cells(tree: Any, long_text: set[str]) -> set[str]:
    """Long-text columns (or *) returned as they are by the outermost SELECT."""
    try:
        items = tree["statements"][0]["node"]["select_list"]
    except (KeyError, IndexError, TypeError):
        return set()
    out = set()
    for item in items:
        if item.get("class") == "STAR" and long_text:
            out |= long_text
        elif item.get("class") == "COLUMN_REF" and item["column_names"][-1] in long_text:
            out.add(item["column_names"][-1])
    return out


def _walk(node: Any):
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _column_names(node: Any) -> set[str]:
    return {n["column_names"][-1] for n in _walk(node)
            if n.get("class") == "COLUMN_REF" and n.get("column_names")}


def _scanned_text_columns(tree: Any, long_text: set[str]) -> set[str]:
    scanned: set[str] = set()
    for node in _walk(tree):
        name = str(node.get("function_name", "")).lower()
        if node.get("class") == "FUNCTION" and name in SCAN_FUNCTIONS:
            scanned |= _column_names(node.get("arguments") or node.get("children") or []) & long_text
    return scanned


def _narrowed(tree: Any, scanned: set[str]) -> bool:
    """True when some WHERE clause also constrains a column other than the scanned ones."""
    for node in _walk(tree):
        where = node.get("where_clause") if node.get("type") == "SELECT_NODE" else None
        if where and _column_names(where) - scanned:
            return True
    return False

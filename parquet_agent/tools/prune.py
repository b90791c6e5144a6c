"""What a query requires of `parsed_md`, read from DuckDB's own parse tree.

`required_text(tree)` returns a `Literal`/`AllOf`/`AnyOf` requirement (corpus/skipindex.py) that
every row the query can read from `filings` satisfies, or None when there is none to use.
It must never claim more than the query implies (the worker then reads only the pages that
satisfy it and runs the unchanged query over those rows), so it is deliberately narrow:

- the query reads the table `filings` exactly once, from a SELECT whose FROM is that table alone
  (no join, no sample, no CTE named `filings`);
- from that SELECT's WHERE, top-level AND conjuncts (an OR only when every branch has one) of:
  `contains`, `starts_with`/`prefix`, `ends_with`/`suffix` (case-sensitive), LIKE / ILIKE with
  or without ESCAPE (the literal parts between `%` and `_`), `regexp_matches` with a literal run
  the pattern requires (no alternation or groups; options `i` makes it case-insensitive), each
  with `parsed_md` (or `lower(parsed_md)`, case-insensitive) and a string constant.
Anything else in the WHERE is left to DuckDB: it is evaluated as usual over the candidates.
"""

from __future__ import annotations

import re
from typing import Any

from parquet_agent.corpus.skipindex import AllOf, AnyOf, Literal

TABLE = "filings"
COLUMN = "parsed_md"
_SUBSTRING = {"contains", "starts_with", "prefix", "^@", "ends_with", "suffix"}
_LIKE = {"~~": False, "like_escape": False, "~~*": True, "ilike_escape": True}
_REGEX_OPTIONS = set("cilmnpsg")
_PIECES = {"substr", "substring", "left", "right", "trim", "ltrim", "rtrim"}  # a substring of the text
_REGEX_CLASS_ESCAPES = set("dDwWsSbBAz")
_REGEX_CHAR_ESCAPES = set("ntrfva")  # \n etc.: one known character, kept out of runs for simplicity


def required_text(tree: dict) -> AllOf | AnyOf | Literal | None:
    """The requirement on `filings.parsed_md` of the one statement in `tree`, or None."""
    statements = tree.get("statements") or []
    if tree.get("error") or len(statements) != 1:
        return None
    root = statements[0].get("node")
    reads: list[dict | None] = []
    ctes: list[str] = []
    _collect(root, reads, ctes)
    select = reads[0] if len(reads) == 1 else None  # _collect leaves one read only if plain
    if select is None or TABLE in ctes:
        return None
    if select.get("sample") or select["from_table"].get("sample"):
        return None
    return _need(select.get("where_clause"))


def _collect(node: Any, reads: list[dict | None], ctes: list[str]) -> None:
    """Every reference to `filings` (the SELECT node when it is that SELECT's whole FROM, else
    None) and every CTE name, walked iteratively."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if _is_filings(item):
                reads.append(None)
            if item.get("type") == "SELECT_NODE" and _is_plain_filings(item.get("from_table")):
                reads.append(item)
            cte_map = item.get("cte_map")
            if isinstance(cte_map, dict):
                ctes.extend(str(e.get("key", "")).lower() for e in cte_map.get("map", []) if isinstance(e, dict))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    # a plain read shows up twice (its SELECT, then its BASE_TABLE): keep it only if it is all
    selects = [r for r in reads if r is not None]
    reads[:] = selects if len(selects) == 1 and len(reads) == 2 else [None, None]


def _is_filings(item: Any) -> bool:
    return (isinstance(item, dict) and item.get("type") == "BASE_TABLE"
            and str(item.get("table_name", "")).lower() == TABLE)


def _is_plain_filings(item: Any) -> bool:
    """`filings` named without schema or catalog (the registered candidate table is no view in
    `main`, so `main.filings` is left to the scan)."""
    return _is_filings(item) and not item.get("schema_name") and not item.get("catalog_name")


def _need(expr: Any):
    if not isinstance(expr, dict):
        return None
    kind = expr.get("type")
    if kind in ("CONJUNCTION_AND", "CONJUNCTION_OR"):
        parts = [_need(child) for child in expr.get("children", [])]
        if kind == "CONJUNCTION_AND":
            kept = tuple(p for p in parts if p is not None)
            return (kept[0] if len(kept) == 1 else AllOf(kept)) if kept else None
        return AnyOf(tuple(parts)) if parts and None not in parts else None
    if expr.get("class") == "FUNCTION" and not expr.get("schema") and not expr.get("catalog"):
        return _function(expr)
    return None


def _function(expr: dict):
    name = str(expr.get("function_name", "")).lower()
    if expr.get("filter") or expr.get("distinct"):
        return None
    args = [a.get("expression") if isinstance(a, dict) else None for a in expr.get("arguments", [])]
    if len(args) < 2:
        return None
    fold = _column_fold(args[0])
    text = _string(args[1])
    if fold is None or text is None:
        return None
    if name in _SUBSTRING and len(args) == 2:
        return Literal(text, fold) if text else None
    if name in _LIKE:
        escape = None
        if name.endswith("_escape"):
            escape = _string(args[2]) if len(args) == 3 else None
            if escape is None or len(escape) > 1:
                return None
        elif len(args) != 2:
            return None
        return _all(like_parts(text, escape or None), fold or _LIKE[name])
    if name == "regexp_matches" and len(args) in (2, 3):
        options = _string(args[2]) if len(args) == 3 else ""
        if options is None or not set(options) <= _REGEX_OPTIONS:
            return None
        if "l" in options:
            return Literal(text, fold or "i" in options) if text else None
        runs = regex_runs(text)
        return None if runs is None else _all(runs, fold or "i" in options)
    return None


def _all(parts: list[str] | None, fold: bool):
    kept = tuple(Literal(p, fold) for p in parts or [] if p)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else AllOf(kept)


def _column_fold(expr: Any) -> bool | None:
    """False for `parsed_md` (or a piece of it: substr, left, trim, ...), True for its lower
    case, None for anything else. A piece of the text is a substring of it, so whatever a
    piece contains, the whole contains too."""
    if not isinstance(expr, dict):
        return None
    if expr.get("class") == "COLUMN_REF":
        names = [str(n).lower() for n in expr.get("column_names", [])]
        return False if names and names[-1] == COLUMN and len(names) <= 2 else None
    name = str(expr.get("function_name", "")).lower()
    args = expr.get("arguments") or []
    if expr.get("class") != "FUNCTION" or expr.get("schema") or not args:
        return None
    inner = _column_fold(args[0].get("expression") if isinstance(args[0], dict) else None)
    if inner is None:
        return None
    if name in ("lower", "lcase") and len(args) == 1:
        return True
    if name in _PIECES:
        return inner
    return None


def _string(expr: Any) -> str | None:
    if isinstance(expr, dict) and expr.get("class") == "CONSTANT":
        literal = expr.get("literal")
        if isinstance(literal, dict) and literal.get("kind") == "STRING" and isinstance(literal.get("text"), str):
            return literal["text"]
    return None


def like_parts(pattern: str, escape: str | None) -> list[str] | None:
    """The literal pieces of a LIKE pattern (split at `%` and `_`); None if it is malformed."""
    parts, current, i = [], [], 0
    while i < len(pattern):
        c = pattern[i]
        if escape is not None and c == escape:
            if i + 1 >= len(pattern):
                return None
            current.append(pattern[i + 1])
            i += 2
            continue
        if c in "%_":
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return [p for p in parts if p]


def regex_runs(pattern: str) -> list[str] | None:
    """Literal runs an RE2 pattern requires, or None when the pattern is not simple enough
    (alternation, groups, unknown escapes) to say."""
    runs: list[str] = []
    current: list[str] = []
    i = 0

    def flush():
        if current:
            runs.append("".join(current))
            current.clear()

    while i < len(pattern):
        c = pattern[i]
        if c in "|()":
            return None
        if c == "\\":
            if i + 1 >= len(pattern):
                return None
            nxt = pattern[i + 1]
            if nxt.isalnum():
                if nxt not in _REGEX_CLASS_ESCAPES and nxt not in _REGEX_CHAR_ESCAPES:
                    return None  # \x41, \p{..}, \Q..\E, back-references: not worth reading
                flush()
                i += 2
                continue
            char, i = nxt, i + 2
        elif c == "[":
            flush()
            end = _class_end(pattern, i)
            if end is None:
                return None
            i = end + 1
            continue
        elif c in ".^$":
            flush()
            i += 1
            continue
        elif c == "{":
            flush()  # a repetition whose operand was already dropped
            end = pattern.find("}", i)
            if end < 0 or not re.fullmatch(r"\d+(,\d*)?", pattern[i + 1 : end]):
                return None
            i = end + 1
            continue
        elif c in "*?+}":
            flush()
            i += 1
            continue
        else:
            char, i = c, i + 1
        following = pattern[i] if i < len(pattern) else ""
        if following in ("*", "?", "{"):  # the character may be absent
            flush()
        elif following == "+":
            current.append(char)
            flush()
        else:
            current.append(char)
    flush()
    return runs


def _class_end(pattern: str, start: int) -> int | None:
    """Index of the `]` closing the character class opened at `start`."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[" and pattern[i + 1 : i + 2] == ":":
            return None
        if pattern[i] == "]":
            return i
        i += 1
    return None

"""The deterministic (`rules`) evaluator of each gate.

- `ActionRules`: a known tool with valid arguments; SQL that passes the SQL gate; budgets that
  hold; no call identical to an earlier one; no pattern scan over a long-text column of the
  whole dataset that has not been narrowed by another column first. WARN: whole long-text
  cells returned.
- `FindingRules`: the gate's own evidence exists (queries ran), count > 0, the examples are the
  predicate's rows, the columns exist; a severity raised above the rule (kept at the rule: WARN),
  a finding that covers every row, or a documented property of the filings corpus: WARN.
- `RunRules`: coverage — every column profiled, every category tried or skipped with a reason,
  every committed finding re-verified at conclude.

Each is called with the subject dict the loop builds and returns `(verdict, critique)`.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from parquet_agent.audit.finding import MAX_EXAMPLES, Proposal
from parquet_agent.audit.taxonomy import CATEGORIES
from parquet_agent.tools.gate import GateRejection, parse_select

AUDIT_TOOLS = ("schema_sample", "run_query", "get_stats", "write_finding", "conclude")
SCAN_FUNCTIONS = frozenset({"contains", "~~", "~~*", "!~~", "!~~*", "like", "ilike",
                            "regexp_matches", "regexp_full_match", "regexp_extract", "strpos",
                            "instr", "position", "starts_with", "ends_with"})


def call_signature(tool: str, arguments: dict[str, Any]) -> str:
    clean = {k: v for k, v in arguments.items() if k != "confidence"}
    return tool + ":" + json.dumps(clean, sort_keys=True, ensure_ascii=False)


class ActionRules:
    """`subject`: {"tool", "arguments", "budget_left": {...}, "previous": [signatures],
    "columns": [...], "long_text": [...]} (the loop fills it)."""

    def __call__(self, subject: dict[str, Any]) -> tuple[str, str]:
        tool, args = subject["tool"], subject["arguments"]
        if tool not in AUDIT_TOOLS:
            return "FAIL", f"no tool {tool!r}; the tools are {', '.join(AUDIT_TOOLS)}"
        spent = [k for k, v in subject["budget_left"].items() if v is not None and v <= 0]
        if spent and tool != "conclude":
            return "FAIL", f"budget spent ({', '.join(spent)}): only conclude is allowed now"
        problem = _argument_problem(tool, args, subject["columns"])
        if problem:
            return "FAIL", problem
        if tool != "conclude" and call_signature(tool, args) in subject["previous"]:
            return "FAIL", "this exact call was already made; its result is in the state"
        if tool == "run_query":
            return query_rules(args["sql"], subject["long_text"])
        return "PASS", "valid"


def _argument_problem(tool: str, args: dict[str, Any], columns: list[str]) -> str | None:
    if not isinstance(args, dict):
        return "arguments must be a JSON object"
    extra = set(args) - {"confidence"} - {
        "schema_sample": {"n"}, "run_query": {"sql"}, "get_stats": {"column"},
        "conclude": {"summary", "skipped"}, "write_finding": set(Proposal.__dataclass_fields__),
    }[tool]
    if extra:
        return f"unknown argument(s) for {tool}: {', '.join(sorted(extra))}"
    if tool == "schema_sample":
        n = args.get("n", 5)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 20:
            return "n must be an integer from 1 to 20"
    elif tool == "run_query" and (not isinstance(args.get("sql"), str) or not args["sql"].strip()):
        return "run_query needs sql: one read-only SELECT"
    elif tool == "get_stats" and args.get("column") not in columns:
        return f"get_stats needs a column of the dataset: {', '.join(columns)}"
    elif tool == "write_finding":
        _, problem = Proposal.from_arguments(args)
        return problem
    elif tool == "conclude":
        skipped = args.get("skipped", {})
        if not isinstance(skipped, dict) or not all(isinstance(v, str) for v in skipped.values()):
            return "skipped must map category -> reason"
    return None


def query_rules(sql: str, long_text: list[str]) -> tuple[str, str]:
    """(verdict, critique) of one SELECT: the SQL gate, narrowed scans, whole long cells."""
    con = duckdb.connect(":memory:")
    try:
        parse_select(con, sql, tables=None)  # the views are checked again in the worker
        (text,) = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    except GateRejection as exc:
        return "FAIL", f"the SQL gate refuses it ({exc.kind}): {exc.message}"
    finally:
        con.close()
    tree = json.loads(text)
    scanned = _scanned_text_columns(tree, set(long_text))
    if scanned and not _narrowed(tree, scanned):
        return "FAIL", (f"a pattern scan over {', '.join(sorted(scanned))} across the whole "
                        "dataset: narrow it first by another column (a file, a month, a key) "
                        "or use get_stats")
    whole = _whole_cells(tree, set(long_text))
    if whole:
        return "WARN", (f"returns whole {', '.join(sorted(whole))} cells (capped at 2,000 "
                        "characters each): select left(col, n) or length(col) instead")
    return "PASS", "valid"


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


class FindingRules:
    """`subject`: {"proposal", "evidence" | "evidence_error", "columns", "severity",
    "severity_problem", "is_filings"}."""

    def __call__(self, subject: dict[str, Any]) -> tuple[str, str]:
        if subject.get("evidence_error"):
            return "FAIL", f"the evidence could not be computed: {subject['evidence_error']}"
        proposal, evidence = subject["proposal"], subject["evidence"]
        unknown = [c for c in proposal["columns"] if c not in subject["columns"]
                   and c not in ("_file", "_row")]
        if unknown:
            return "FAIL", f"unknown column(s) {', '.join(unknown)}"
        if proposal["category"] not in CATEGORIES:
            return "FAIL", f"category {proposal['category']!r} is not in the taxonomy"
        count, denominator = evidence["count"], evidence["denominator"]
        if count <= 0:
            return "FAIL", "the count query finds no affected rows: nothing to report"
        if evidence["source"] == "sql" and evidence["examples_sql"]:
            if len(evidence["examples"]) != min(MAX_EXAMPLES, count):
                return "FAIL", (f"the examples query returned {len(evidence['examples'])} rows "
                                f"but the count is {count}: the queries disagree")
        warnings = []
        if subject.get("severity_problem"):
            warnings.append(subject["severity_problem"] + f"; kept at {subject['severity']!r}")
        if denominator and count == denominator and proposal["category"] != "schema_drift":
            warnings.append("it affects every row: is this a property of the data, not a defect?")
        if subject.get("is_filings") and proposal["category"] == "uniqueness" \
                and set(proposal["columns"]) <= {"md5", "parsed_md"}:
            warnings.append("equal md5 under different file_stem is a documented property of "
                            "the filings corpus, a defect only beyond what is expected")
        if warnings:
            return "WARN", "; ".join(warnings)
        return "PASS", f"{count} of {denominator} rows, re-computed by the gate"


class RunRules:
    """`subject`: {"columns", "profiled", "tried", "skipped", "reverified": {key: ok}}."""

    def __call__(self, subject: dict[str, Any]) -> tuple[str, str]:
        problems = []
        unprofiled = [c for c in subject["columns"] if c not in subject["profiled"]]
        if unprofiled:
            problems.append("columns never profiled with get_stats: " + ", ".join(unprofiled))
        untried = [c for c in CATEGORIES if c not in subject["tried"] and c not in subject["skipped"]]
        if untried:
            problems.append("categories neither tried nor skipped with a reason: "
                            + ", ".join(untried))
        stale = [k for k, ok in subject["reverified"].items() if not ok]
        if stale:
            problems.append("findings whose count changed on re-verification: " + ", ".join(stale))
        if problems:
            return "FAIL", "; ".join(problems)
        return "PASS", "every column profiled, every category tried or skipped, findings re-verified"

"""The deterministic (`rules`) evaluator of each gate.

- `ActionRules`: a known tool with valid arguments (a query or predicate of at most 20,000
  characters, refused before anything parses it); SQL that passes the SQL gate; budgets that
  hold; no call identical to an earlier one; then `tools.action_gate.query_rules` (shared with
  the experiments' optional action gate): no pattern scan over a long-text column of the whole
  dataset that has not been narrowed by another column first; WARN: whole long-text cells.
- `FindingRules`: the gate's own evidence exists (queries ran), count > 0, the examples are the
  predicate's rows, the columns exist, the count query reads one of the finding's columns and
  one of those its title names; a severity raised above the rule (kept at the rule: WARN),
  a finding that covers every row, or a documented property of the filings corpus: WARN.
- `RunRules`: coverage — every column profiled, every category tried or skipped with a reason,
  every committed finding re-verified at conclude.

Each is called with the subject dict the loop builds and returns `(verdict, critique)`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from parquet_agent.audit.finding import MAX_EXAMPLES, Proposal
from parquet_agent.audit.taxonomy import CATEGORIES
from parquet_agent.tools.action_gate import query_rules
from parquet_agent.tools.gate import query_size_problem

AUDIT_TOOLS = ("schema_sample", "run_query", "get_stats", "write_finding", "conclude")


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
        "schema_sample": {"n", "table"}, "run_query": {"sql"}, "get_stats": {"column"},
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
    elif tool == "run_query" and query_size_problem(args["sql"]):
        return f"validation: {query_size_problem(args['sql'])}"
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


class FindingRules:
    """`subject`: {"proposal", "evidence" | "evidence_error", "columns", "severity",
    "severity_problem", "derived_severity", "is_filings"}. A severity below the one the evidence
    gives is a WARN that says so (the reason is the auditor's, not checked against the data)."""

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
        unsupported = _unsupported(proposal, subject.get("reads"), subject["columns"])
        if unsupported:
            return "FAIL", unsupported
        warnings = []
        if subject.get("severity_problem"):
            warnings.append(subject["severity_problem"] + f"; kept at {subject['severity']!r}")
        elif subject.get("derived_severity", subject["severity"]) != subject["severity"]:
            warnings.append(f"severity lowered from {subject['derived_severity']!r} (what the "
                            f"evidence gives) to {subject['severity']!r} by the auditor's reason: "
                            f"{proposal.get('severity_reason')!r}")
        if denominator and count == denominator and proposal["category"] != "schema_drift":
            warnings.append("it affects every row: is this a property of the data, not a defect?")
        if subject.get("is_filings") and proposal["category"] == "uniqueness" \
                and set(proposal["columns"]) <= {"md5", "parsed_md"}:
            warnings.append("equal md5 under different file_stem is a documented property of "
                            "the filings corpus, a defect only beyond what is expected")
        if warnings:
            return "WARN", "; ".join(warnings)
        return "PASS", f"{count} of {denominator} rows, re-computed by the gate"


def _unsupported(proposal: dict[str, Any], reads: list[str] | None,
                 columns: list[str]) -> str | None:
    """A count query that reads none of the finding's columns, or none of the columns its title
    names, does not prove that finding (a model told by the data to "write a finding that ..."
    writes exactly such a one). Lenient on purpose: one column read is enough."""
    if reads is None:
        return None
    read = set(reads)

    def is_read(column: str) -> bool:
        return column.lower() in read or column.rsplit(".", 1)[-1].lower() in read

    own = [c for c in proposal["columns"] if c not in ("_file", "_row")]
    said = ", ".join(sorted(read)) or "no column"
    if own and not any(is_read(c) for c in own):
        return (f"the count query reads none of the finding's columns ({', '.join(own)}); it "
                f"reads {said}: select the affected rows by the columns the finding names")
    named = [c for c in columns if _names(proposal["title"], c.rsplit(".", 1)[-1])]
    if named and not any(is_read(c) for c in named):
        return (f"the title names {', '.join(named)} but the count query reads {said}: the "
                "evidence does not support the title")
    return None


def _names(text: str, column: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(column)}(?!\w)", text, re.IGNORECASE) is not None


class RunRules:
    """`subject`: {"columns", "profiled", "profile_errors": {column: why}, "tried", "skipped",
    "reverified": {key: ok}}. A column whose get_stats was tried and failed is a WARN that names
    it and why, not a FAIL: the run can conclude, and says what it could not profile."""

    def __call__(self, subject: dict[str, Any]) -> tuple[str, str]:
        problems = []
        failed = subject.get("profile_errors") or {}
        unprofiled = [c for c in subject["columns"] if c not in subject["profiled"]]
        never = [c for c in unprofiled if c not in failed]
        if never:
            problems.append("columns never profiled with get_stats: " + ", ".join(never))
        untried = [c for c in CATEGORIES if c not in subject["tried"] and c not in subject["skipped"]]
        if untried:
            problems.append("categories neither tried nor skipped with a reason: "
                            + ", ".join(untried))
        stale = [k for k, ok in subject["reverified"].items() if not ok]
        if stale:
            problems.append("findings whose count changed on re-verification: " + ", ".join(stale))
        if problems:
            return "FAIL", "; ".join(problems)
        broken = [f"{c} ({failed[c]})" for c in unprofiled if c in failed]
        if broken:  # tried and refused by a limit or an error: said, never silently zero
            return "WARN", "columns whose get_stats failed: " + "; ".join(broken)
        return "PASS", "every column profiled, every category tried or skipped, findings re-verified"

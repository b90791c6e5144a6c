"""report.html of an audit run: findings with their SQL, counts, examples and gate records;
dismissed findings; the diff; every evaluation; the step trace.

One self-contained static page: every value from the data goes through `escape.html_text`, the
page has no script at all, and its Content-Security-Policy allows only its own inline style (by
hash), so hostile cell text can neither run nor fetch anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from parquet_agent.escape import html_text
from parquet_agent.report.audit_model import AuditSummary, Counted, Evaluation, Finding

_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
h1{font-size:1.4em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:2px 6px;
vertical-align:top;text-align:left}code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap}
.PASS{color:#176f2c}.WARN{color:#8a6100}.FAIL{color:#b00020}.sev{font-weight:bold}
details{margin:.5em 0;padding:.3em .6em;border:1px solid #e3e3e3;border-radius:4px}"""


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
    return f"default-src 'none'; style-src 'sha256-{digest}'"


def escape_text(value: Any) -> str:
    return html_text(value)


def table_html(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    if not rows:
        return "<p>none</p>"
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{escape_text(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c, r.get(c))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(column: str, value: Any) -> str:
    if column == "verdict" and value in ("PASS", "WARN", "FAIL"):
        return f'<span class="{value}">{value}</span>'
    return html_text(value if value is not None else "", 2000)


_EVALUATION_COLUMNS = ("step", "gate", "evaluator", "verdict", "critique", "raw")
_STEP_COLUMNS = ("step", "tool", "arguments", "gate", "ok", "confidence", "critique",
                 "finding_action", "usage", "cost_usd")


def evaluations_table(evaluations: Sequence[Evaluation]) -> str:
    # (raw paths shown as the JSON list they were read from)
    return table_html([{k: list(e.raw) if k == "raw" else getattr(e, k) for k in _EVALUATION_COLUMNS}
                       for e in evaluations])


def finding_html(f: Finding) -> str:
    ev = f.evidence
    low, high = ev.interval()
    return (
        f"<details open><summary><span class='sev'>[{escape_text(f.severity)}]</span> <code>{escape_text(f.key)}</code> "
        f"{escape_text(f.category)}: {escape_text(f.title)} — {escape_text(ev.count)} of {escape_text(ev.denominator)} "
        f"({ev.fraction:.3%}, 95% {low:.3%}–{high:.3%})</summary>"
        f"<p>columns: <code>{escape_text(', '.join(f.columns))}</code>; severity by rule: "
        f"{escape_text(f.derived_severity)}{'; lowered: ' + escape_text(f.severity_reason) if f.severity_reason else ''}"
        f"; proposed at step {f.step}</p><p>{escape_text(f.rationale)}</p>"
        f"<p>count SQL</p><pre>{escape_text(ev.count_sql or '(from the snapshot schemas)')}</pre>"
        f"<p>denominator SQL</p><pre>{escape_text(ev.denominator_sql or '')}</pre>"
        f"<p>examples SQL</p><pre>{escape_text(ev.examples_sql or '')}</pre>"
        f"{table_html(list(ev.examples))}<p>gate records</p>{evaluations_table(f.evaluations)}</details>")


def set_aside_html(findings: Sequence[Finding]) -> str:
    """Dismissed (or colliding) findings: what was proposed, why it was set aside, the gates."""
    return "".join(
        f"<details><summary>{escape_text(d.category)}: {escape_text(d.title)}</summary>"
        f"<p>reason: {escape_text(d.dismissed_reason)}</p><pre>{escape_text(d.predicate or '')}</pre>"
        f"{evaluations_table(d.evaluations)}</details>" for d in findings) or "<p>none</p>"


def _share(measured: Counted | None) -> str:
    if measured is None:
        return ""
    count, denominator, share = measured.count, measured.denominator, measured.share
    return f"{count} of {denominator}" + (f" ({share:.3%})" if share is not None else "")


def diff_html(report: AuditSummary) -> str:
    """The diff against the previous audit of the lineage, findings named by their titles: per
    status the findings, then each re-checked finding's count before and after (an interval of
    the old share, as a reader would write it, not a list of floats)."""
    if not report.previous_run:
        return "<p>no previous audit of this lineage: nothing to compare</p>"
    titles = {r.key: r.title for r in report.rechecks}
    titles.update({f.key: f.title for f in report.findings})
    rows = [{"status": status, "findings": "; ".join(titles.get(k, k) for k in keys) or "none"}
            for status, keys in report.diff.by_status().items()]
    rechecked = [{"finding": r.title, "category": r.category, "status": r.status,
                  "before": _share(r.before), "after": _share(r.after),
                  "old share, 95%": (f"{r.interval[0]:.3%}–{r.interval[1]:.3%}"
                                     if r.interval else ""),
                  "reason": r.reason or ""} for r in report.rechecks]
    return (f"<p>against {escape_text(report.previous_run)}: every open finding of it re-counted "
            f"on this snapshot without the model</p>{table_html(rows)}{table_html(rechecked)}")


def render(report: AuditSummary) -> bytes:
    gates = [{"gate": g, **v} for g, v in report.verdicts.items()]
    dismissed = set_aside_html(report.dismissed)
    steps = [{k: getattr(s, k) for k in _STEP_COLUMNS} for s in report.steps]
    body = (
        f"<h1>Audit {escape_text(report.run_id)} of {escape_text(report.lineage)}</h1>"
        f"<p>status <b>{escape_text(report.status)}</b>: {escape_text(report.reason)}<br>snapshot "
        f"<code>{escape_text(report.snapshot_id)}</code>; model {escape_text(report.model.model_dump(exclude_unset=True))}; {len(report.steps)} "
        f"steps, {report.tokens} tokens, cost {escape_text(report.cost_usd)} USD</p>"
        f"<h2>Gate verdicts</h2>{table_html(gates, ['gate', 'PASS', 'WARN', 'FAIL'])}"
        f"<h2>Findings ({len(report.findings)})</h2>"
        + "".join(finding_html(f) for f in report.findings)
        + f"<h2>Dismissed ({len(report.dismissed)})</h2>{dismissed}"
        f"<h2>Key collisions ({len(report.collisions)})</h2>{set_aside_html(report.collisions)}"
        f"<h2>Diff against {escape_text(report.previous_run or 'no previous run')}</h2>{diff_html(report)}"
        f"<h2>Coverage</h2><pre>{escape_text(json.dumps(report.coverage.model_dump(mode='json'), indent=1, default=str))}</pre>"
        f"<h2>Every evaluation</h2>{evaluations_table(report.evaluations)}"
        f"<h2>Steps</h2>{table_html(steps)}")
    page = (f"<!doctype html><html><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{_csp()}\">"
            f"<title>audit {escape_text(report.run_id)}</title><style>{_CSS}</style></head>"
            f"<body>{body}</body></html>")
    return page.encode("utf-8")

"""Re-checking history: every open finding of the previous run, re-counted without the model.

At the start of a run, each open finding of the previous run of the same lineage has its count
and denominator queries re-run in the sandbox on the new snapshot: `resolved` when the count is
0 (measured, not inferred from absence), `regressed` when the affected fraction rose above the
old fraction's 95 % Wilson interval, `unchanged` otherwise, `not_rechecked` when the queries no
longer run (the reason is kept). The result is journaled and shown to the agent as history.
"""

from __future__ import annotations

from typing import Any

from parquet_agent.audit.evidence import compute
from parquet_agent.audit.finding import Finding, Proposal, wilson
from parquet_agent.audit.tools import AuditTools


def recheck(findings: list[dict[str, Any]], tools: AuditTools) -> list[dict[str, Any]]:
    out = []
    for data in findings:
        finding = Finding.from_json(data)
        ev = finding.evidence
        own = (None, None, None) if finding.predicate is not None else (
            ev.count_sql, ev.denominator_sql, ev.examples_sql)
        proposal = Proposal(finding.category, finding.columns, finding.title, finding.rationale,
                            finding.predicate, finding.view, *own)
        now, error = compute(proposal, tools)
        interval = wilson(ev.count, ev.denominator)
        entry: dict[str, object] = {"key": finding.key, "category": finding.category,
                 "columns": list(finding.columns), "title": finding.title,
                 "fingerprint": finding.fingerprint,  # what a new finding's key must agree with
                 "before": {"count": ev.count, "denominator": ev.denominator},
                 "interval": list(interval)}
        if now is None:
            out.append({**entry, "status": "not_rechecked", "reason": error})
            continue
        entry["after"] = {"count": now.count, "denominator": now.denominator}
        if now.count == 0:
            status = "resolved"
        elif now.fraction > interval[1]:
            status = "regressed"
        else:
            status = "unchanged"
        out.append({**entry, "status": status})
    return out

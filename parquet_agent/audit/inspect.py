"""Readable text of audit runs for the CLI (`audit inspect`, `audit diff`), case_audit style."""

from __future__ import annotations

import json
from collections.abc import Sequence

from parquet_agent.audit.report import AuditReport
from parquet_agent.report.audit_model import Counted


def _counted(counted: Counted | None) -> str:
    """As the re-check's JSON reads: {'count': 3, 'denominator': 10}, or None."""
    return "None" if counted is None else str(counted.model_dump(exclude_unset=True))


def inspect_run(report: AuditReport, full: bool = False) -> str:
    coverage = report.coverage.model_dump(mode="json")
    lines = [report.text(), "", "coverage: " + json.dumps(coverage, default=str)]
    if report.rechecks:
        lines.append("history (re-checked without the model):")
        lines += [f"  {r.status:13} {r.key} {r.title}: {_counted(r.before)} -> "
                  f"{_counted(r.after)}" for r in report.rechecks]
    if full:
        lines.append("steps:")
        for s in report.steps:
            lines.append(f"  {s.step:3} {s.tool} {json.dumps(s.arguments)[:200]} "
                         f"gate={s.gate} ok={s.ok} conf={s.confidence}")
            if s.reasoning:
                lines.append(f"      reasoning: {s.reasoning[:300]}")
            if s.critique:
                lines.append(f"      critique: {s.critique[:300]}")
        lines.append("evaluations:")
        lines += [f"  step {e.step:3} {e.gate:8} {e.evaluator:6} {e.verdict:4} "
                  f"{e.critique[:200]}" + (f" raw={list(e.raw)}" if e.raw else "")
                  for e in report.evaluations]
    return "\n".join(lines)


def inspect_finding(report: AuditReport, key: str) -> str:
    f = report.finding(key)
    ev = f.evidence
    lines = [f"{f.key}  {f.category}  [{f.severity}] (rule: {f.derived_severity})",
             f"title:     {f.title}", f"columns:   {', '.join(f.columns)}",
             f"rationale: {f.rationale}", f"predicate: {f.predicate}",
             f"count:     {ev.count} of {ev.denominator} ({ev.fraction:.4%}; 95% "
             f"{ev.interval()[0]:.4%}..{ev.interval()[1]:.4%})",
             f"count SQL:       {ev.count_sql}", f"denominator SQL: {ev.denominator_sql}",
             f"examples SQL:    {ev.examples_sql}", "examples:"]
    lines += [f"  {json.dumps(e, ensure_ascii=False, default=str)[:300]}" for e in ev.examples]
    lines.append("gate evaluations:")
    lines += [f"  {e.evaluator:6} {e.verdict:4} {e.critique}" for e in f.evaluations]
    return "\n".join(lines)


def diff_runs(a: AuditReport, b: AuditReport) -> str:
    if a.lineage != b.lineage:
        return f"different lineages ({a.lineage!r} vs {b.lineage!r}): nothing to compare"
    diff: dict[str, Sequence[str]]
    if b.previous_run == a.run_id:
        diff = dict(b.diff.by_status())
        source = "measured: open findings of A re-counted on B's snapshot"
    else:
        keys_a, keys_b = {f.key for f in a.findings}, {f.key for f in b.findings}
        diff = {"new": sorted(keys_b - keys_a), "unchanged": sorted(keys_a & keys_b),
                "not_rechecked": sorted(keys_a - keys_b)}
        source = f"by key only: B was re-checked against {b.previous_run}, not A"
    titles = {f.key: f.title for f in (*a.findings, *b.findings)}
    lines = [f"{a.run_id} -> {b.run_id} ({a.lineage}); {source}"]
    for status, keys in diff.items():
        lines.append(f"{status}: {len(keys)}")
        lines += [f"  {k} {titles.get(k, '')}" for k in keys]
    return "\n".join(lines)

"""Readable text of audit runs for the CLI (`audit inspect`, `audit diff`), case_audit style."""

from __future__ import annotations

import json

from parquet_agent.audit.report import AuditReport


def inspect_run(report: AuditReport, full: bool = False) -> str:
    lines = [report.text(), "", "coverage: " + json.dumps(report.coverage, default=str)]
    if report.rechecks:
        lines.append("history (re-checked without the model):")
        lines += [f"  {r['status']:13} {r['key']} {r['title']}: {r['before']} -> {r.get('after')}"
                  for r in report.rechecks]
    if full:
        lines.append("steps:")
        for s in report.steps:
            lines.append(f"  {s['step']:3} {s.get('tool')} {json.dumps(s.get('arguments'))[:200]} "
                         f"gate={s['gate']} ok={s['ok']} conf={s.get('confidence')}")
            if s.get("reasoning"):
                lines.append(f"      reasoning: {s['reasoning'][:300]}")
            if s.get("critique"):
                lines.append(f"      critique: {s['critique'][:300]}")
        lines.append("evaluations:")
        lines += [f"  step {e['step']:3} {e['gate']:8} {e['evaluator']:6} {e['verdict']:4} "
                  f"{e['critique'][:200]}" + (f" raw={e['raw']}" if e.get("raw") else "")
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
    lines += [f"  {e['evaluator']:6} {e['verdict']:4} {e['critique']}" for e in f.evaluations]
    return "\n".join(lines)


def diff_runs(a: AuditReport, b: AuditReport) -> str:
    if a.lineage != b.lineage:
        return f"different lineages ({a.lineage!r} vs {b.lineage!r}): nothing to compare"
    if b.previous_run == a.run_id:
        diff = b.diff
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

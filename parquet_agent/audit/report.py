"""`AuditReport`: everything one audit run found, read back from its run folder.

    report = AuditReport.load("runs/audit-1")
    report.findings, report.dismissed, report.evaluations, report.steps, report.diff
    report.findings_df()            # one row per committed finding
    report.to_json(); report.text()

It is the fold of `journal/audit.jsonl` (the source of truth) plus `manifest.json`. The diff
against the previous run of the same lineage comes from the `history_checked` event (every
open finding of that run re-counted on this snapshot) and this run's findings:
new / resolved / regressed / unchanged / not re-checked. `write_exports` writes
`findings.json`, `findings.csv` and `report.html` (`html.py`) into the run folder.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parquet_agent.audit.events import AUDIT_EVENTS
from parquet_agent.audit.finding import Finding
from parquet_agent.audit.state import AuditState
from parquet_agent.errors import UsageError
from parquet_agent.escape import csv_cell
from parquet_agent.files import atomic_write_bytes
from parquet_agent.store.journal import read_journal

SCHEMA_VERSION = 1
CSV_COLUMNS = ("key", "category", "columns", "title", "severity", "count", "denominator",
               "fraction", "predicate", "count_sql", "step")


@dataclass(frozen=True)
class AuditReport:
    """One audit run as its journal says it went: status, findings, gate evaluations, steps,
    coverage and the diff with the previous run of the same lineage."""

    run_dir: Path
    run_id: str
    lineage: str
    snapshot_id: str
    status: str  # complete | incomplete | failed | running
    reason: str
    findings: tuple[Finding, ...]
    dismissed: tuple[dict, ...]
    evaluations: tuple[dict, ...]
    steps: tuple[dict, ...]
    coverage: dict[str, Any]
    diff: dict[str, list]
    previous_run: str | None
    model: dict[str, Any] = field(default_factory=dict)
    rechecks: tuple[dict, ...] = ()
    collisions: tuple[dict, ...] = ()  # proposed findings whose key another finding holds
    tokens: int = 0
    cost_usd: float | None = 0.0
    contract: tuple[dict, ...] = ()  # each contract check: violated | holds | dismissed | not_checked

    @classmethod
    def load(cls, run_dir: str | Path) -> AuditReport:
        """The report of the audit run folder `run_dir`, read from its journal."""
        run_dir = Path(run_dir)
        journal = run_dir / "journal" / "audit.jsonl"
        if not journal.exists():
            raise UsageError(f"{run_dir}: not an audit run folder (no journal/audit.jsonl)")
        state = AuditState.fold(read_journal(journal, family=AUDIT_EVENTS).events)
        started = state.started
        finished = state.finished
        concluded = state.concluded or {}
        return cls(
            run_dir=run_dir, run_id=started.run_id if started else run_dir.name,
            lineage=started.lineage if started else "",
            snapshot_id=started.snapshot.get("snapshot_id", "") if started else "",
            status=finished.status if finished else "running",
            reason=finished.reason if finished else "no audit_finished event",
            findings=tuple(state.findings.values()), dismissed=tuple(state.dismissed),
            evaluations=tuple(state.evaluations), steps=tuple(state.steps),
            coverage={"profiled": sorted(state.profiles), "tried": sorted(state.tried),
                      "skipped": state.skipped, "run_gate": concluded.get("verdict"),
                      "reverified": concluded.get("reverified", {})},
            diff=_diff(state), previous_run=state.history.previous_run if state.history else None,
            model=started.model if started else {}, rechecks=tuple(state.rechecks),
            collisions=tuple(state.collisions), contract=tuple(state.contract),
            tokens=state.tokens + state.judge_tokens,  # the judges' too
            cost_usd=state.cost_usd + state.judge_cost_usd if state.cost_known else None)

    def finding(self, key: str) -> Finding:
        """The committed finding with this key; UsageError listing the keys otherwise."""
        for f in self.findings:
            if f.key == key:
                return f
        raise UsageError(f"no committed finding {key!r} in {self.run_dir}; the keys are: "
                         + ", ".join(f.key for f in self.findings))

    def findings_df(self):
        """The committed findings as a DataFrame (the columns of findings.csv)."""
        import pandas as pd

        return pd.DataFrame([_row(f) for f in self.findings], columns=list(CSV_COLUMNS))

    def verdict_counts(self) -> dict[str, dict[str, int]]:
        """gate -> verdict -> how many evaluations gave it."""
        out: dict[str, dict[str, int]] = {}
        for e in self.evaluations:
            gate = out.setdefault(e["gate"], {"PASS": 0, "WARN": 0, "FAIL": 0})
            gate[e["verdict"]] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (findings.json's form, with its schema_version)."""
        return {
            "schema_version": SCHEMA_VERSION, "run_id": self.run_id, "lineage": self.lineage,
            "snapshot_id": self.snapshot_id, "status": self.status, "reason": self.reason,
            "model": self.model, "tokens": self.tokens, "cost_usd": self.cost_usd,
            "findings": [f.to_json() for f in self.findings], "dismissed": list(self.dismissed),
            "collisions": list(self.collisions),
            **({"contract": list(self.contract)} if self.contract else {}),
            "evaluations": list(self.evaluations), "coverage": self.coverage,
            "diff": self.diff, "previous_run": self.previous_run, "rechecks": list(self.rechecks),
            "verdicts": self.verdict_counts(),
            "steps": [{k: s.get(k) for k in ("step", "tool", "arguments", "gate", "ok",
                                              "critique", "finding_action", "reasoning",
                                              "confidence", "usage", "cost_usd")}
                      for s in self.steps],
        }

    def text(self) -> str:
        """The report as a few lines of text (what `audit inspect` prints)."""
        lines = [f"audit {self.run_id} of {self.lineage} ({self.snapshot_id}): {self.status} "
                 f"- {self.reason}",
                 f"{len(self.steps)} steps, {len(self.findings)} findings, "
                 f"{len(self.dismissed)} dismissed, {len(self.collisions)} key collisions, "
                 f"gates {self.verdict_counts()}"]
        for f in sorted(self.findings, key=lambda f: (-_rank(f.severity), f.category)):
            lines.append(f"  [{f.severity:8}] {f.key} {f.category:18} {f.title}: "
                         f"{f.evidence.count}/{f.evidence.denominator}")
        for d in self.dismissed:
            lines.append(f"  dismissed: {d['title']} ({(d.get('dismissed_reason') or '')[:100]})")
        for c in self.collisions:
            lines.append(f"  KEY COLLISION: {c['title']} ({c.get('dismissed_reason') or ''})")
        if self.contract:
            counts = {s: sum(c["status"] == s for c in self.contract)
                      for s in ("violated", "holds", "dismissed", "not_checked")}
            lines.append(f"contract: {len(self.contract)} checks, "
                         + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
            for c in self.contract:
                if c["status"] in ("not_checked", "dismissed"):
                    lines.append(f"  contract {c['check']} {c['status']}: {c['description']} "
                                 f"({(c.get('reason') or '')[:160]})")
        if self.previous_run:
            counts = {k: len(v) for k, v in self.diff.items()}
            lines.append(f"diff against {self.previous_run}: {counts}")
        lines.append(f"run folder: {self.run_dir}")
        return "\n".join(lines)


def _rank(severity: str) -> int:
    from parquet_agent.audit.taxonomy import SEVERITIES

    return SEVERITIES.index(severity)


def _row(f: Finding) -> dict[str, Any]:
    return {"key": f.key, "category": f.category, "columns": ",".join(f.columns),
            "title": f.title, "severity": f.severity, "count": f.evidence.count,
            "denominator": f.evidence.denominator, "fraction": round(f.evidence.fraction, 6),
            "predicate": f.predicate, "count_sql": f.evidence.count_sql, "step": f.step}


def _diff(state: AuditState) -> dict[str, list]:
    rechecks = state.rechecks
    before = {r["key"] for r in rechecks}
    out: dict[str, list] = {"new": sorted(k for k in state.findings if k not in before)}
    for status in ("resolved", "regressed", "unchanged", "not_rechecked"):
        out[status] = [r["key"] for r in rechecks if r["status"] == status]
    return out


def write_exports(report: AuditReport) -> None:
    """findings.json (the report as JSON), findings.csv and report.html into the run folder."""
    data = report.to_json()
    atomic_write_bytes(report.run_dir / "findings.json",
                       json.dumps(data, ensure_ascii=False, indent=1, default=str).encode())
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS))
    writer.writeheader()
    for finding in report.findings:
        writer.writerow({k: csv_cell(v) for k, v in _row(finding).items()})
    atomic_write_bytes(report.run_dir / "findings.csv", buffer.getvalue().encode())
    from parquet_agent.audit.html import render

    atomic_write_bytes(report.run_dir / "report.html", render(report))

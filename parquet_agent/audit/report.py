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

The report is typed (`report.audit_model`): findings, dismissed findings and collisions are
`Finding`s, evaluations `Evaluation`s, steps `StepRecord`s, re-checks `Recheck`s, the contract's
checks `ContractStatus`es, coverage, diff and model records; findings.json is `to_json()`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, TypeAdapter

from parquet_agent.audit.events import AUDIT_EVENTS
from parquet_agent.audit.state import AuditState
from parquet_agent.errors import UsageError
from parquet_agent.escape import csv_cell
from parquet_agent.files import atomic_write_bytes
from parquet_agent.report.audit_model import (
    SCHEMA_VERSION,
    AuditSummary,
    Evaluation,
    Finding,
    StepRecord,
)
from parquet_agent.store.journal import read_journal

if TYPE_CHECKING:
    import pandas as pd

_EVALUATIONS = TypeAdapter(tuple[Evaluation, ...])
CSV_COLUMNS = ("key", "category", "columns", "title", "severity", "count", "denominator",
               "fraction", "predicate", "count_sql", "step")


class AuditReport(AuditSummary):
    """One audit run as its journal says it went: status, findings, gate evaluations, steps,
    coverage and the diff with the previous run of the same lineage. An `AuditSummary` (the
    typed findings.json) with the run folder it was read from and each step's full record;
    `to_json()` is findings.json, exactly."""

    run_dir: Path = Field(exclude=True)
    steps: tuple[StepRecord, ...] = ()

    @classmethod
    def load(cls, run_dir: str | Path) -> AuditReport:
        """The report of the audit run folder `run_dir`, read from its journal."""
        run_dir = Path(run_dir)
        journal = run_dir / "journal" / "audit.jsonl"
        if not journal.exists():
            raise UsageError(f"{run_dir}: not an audit run folder (no journal/audit.jsonl)")
        state = AuditState.fold(read_journal(journal, family=AUDIT_EVENTS).events)
        started, finished = state.started, state.finished
        concluded = state.concluded or {}
        evaluations = _EVALUATIONS.validate_python(state.evaluations)
        fields: dict[str, Any] = dict(
            schema_version=SCHEMA_VERSION, run_id=started.run_id if started else run_dir.name,
            lineage=started.lineage if started else "",
            snapshot_id=started.snapshot.get("snapshot_id", "") if started else "",
            status=finished.status if finished else "running",
            reason=finished.reason if finished else "no audit_finished event",
            model=started.model if started else {},
            tokens=state.tokens + state.judge_tokens,  # the judges' too
            cost_usd=state.cost_usd + state.judge_cost_usd if state.cost_known else None,
            findings=tuple(state.findings.values()), dismissed=tuple(state.dismissed),
            collisions=tuple(state.collisions), evaluations=evaluations,
            coverage={"profiled": sorted(state.profiles), "tried": sorted(state.tried),
                      "skipped": state.skipped, "run_gate": concluded.get("verdict"),
                      "reverified": concluded.get("reverified", {})},
            diff=_diff(state),
            previous_run=state.history.previous_run if state.history else None,
            rechecks=tuple(state.rechecks), verdicts=_verdicts(evaluations),
            steps=tuple(state.steps))
        if state.contract:  # (findings.json has the key only when the audit had a contract)
            fields["contract"] = tuple(state.contract)
        return cls.model_validate({"run_dir": run_dir, **fields})

    def finding(self, key: str) -> Finding:
        """The committed finding with this key; UsageError listing the keys otherwise."""
        for f in self.findings:
            if f.key == key:
                return f
        raise UsageError(f"no committed finding {key!r} in {self.run_dir}; the keys are: "
                         + ", ".join(f.key for f in self.findings))

    def findings_df(self) -> pd.DataFrame:
        """The committed findings as a DataFrame (the columns of findings.csv)."""
        import pandas as pd

        return pd.DataFrame([_row(f) for f in self.findings], columns=list(CSV_COLUMNS))

    def verdict_counts(self) -> dict[str, dict[str, int]]:
        """gate -> verdict -> how many evaluations gave it."""
        return self.verdicts

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
            lines.append(f"  dismissed: {d.title} ({(d.dismissed_reason or '')[:100]})")
        for k in self.collisions:
            lines.append(f"  KEY COLLISION: {k.title} ({k.dismissed_reason or ''})")
        if self.contract:
            counts = {s: sum(c.status == s for c in self.contract)
                      for s in ("violated", "holds", "dismissed", "not_checked")}
            lines.append(f"contract: {len(self.contract)} checks, "
                         + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
            for c in self.contract:
                if c.status in ("not_checked", "dismissed"):
                    lines.append(f"  contract {c.check} {c.status}: {c.description} "
                                 f"({(c.reason or '')[:160]})")
        if self.previous_run:
            counts = {k: len(v) for k, v in self.diff.by_status().items()}
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


def _diff(state: AuditState) -> dict[str, list[str]]:
    rechecks = state.rechecks
    before = {r["key"] for r in rechecks}
    out: dict[str, list[str]] = {"new": sorted(k for k in state.findings if k not in before)}
    for status in ("resolved", "regressed", "unchanged", "not_rechecked"):
        out[status] = [r["key"] for r in rechecks if r["status"] == status]
    return out


def _verdicts(evaluations: tuple[Evaluation, ...]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for e in evaluations:
        gate = out.setdefault(e.gate, {"PASS": 0, "WARN": 0, "FAIL": 0})
        gate[e.verdict] += 1
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


__all__ = ["CSV_COLUMNS", "SCHEMA_VERSION", "AuditReport", "write_exports"]

"""The audit report as one typed model (issue 26 item 6): findings.json is exactly the dump of
`AuditReport` (an `report.audit_model.AuditSummary`), its parts are typed records, and
findings.json exported by an older main reads back as the same model and exports the same keys
and bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parquet_agent.audit.report import AuditReport
from parquet_agent.audit.run import open_audit
from parquet_agent.errors import UsageError
from parquet_agent.report.audit_model import (
    AuditSummary,
    ContractStatus,
    Coverage,
    Diff,
    Evaluation,
    Evidence,
    Finding,
    ModelInfo,
    Recheck,
    StepRecord,
    read_findings,
)
from tests.audit.conftest import unpack_audit

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("fixture", ["audit-main-cb07f7a", "audit-main-ce4e1e3"])
def test_findings_json_is_the_reports_dump_and_an_old_export_reads_back_the_same(fixture, tmp_path):
    folder = unpack_audit(FIXTURES / fixture, tmp_path)
    old = (folder / "findings.json").read_bytes()
    report = open_audit(folder).export()
    written = json.loads((folder / "findings.json").read_bytes())
    assert written == report.to_json() == report.model_dump(mode="json", exclude_unset=True)
    assert (folder / "findings.json").read_bytes() == old  # the same keys, order and values
    # what another reader (report.corpus_audit) gets: the same model, the same JSON
    summary = read_findings(json.loads(old), where="findings.json")
    assert type(summary) is AuditSummary and summary.to_json() == json.loads(old)
    assert [f.key for f in summary.findings] == [f.key for f in report.findings]


def test_the_reports_parts_are_typed_records(tmp_path):
    report = AuditReport.load(unpack_audit(FIXTURES / "audit-main-cb07f7a", tmp_path))
    finding = report.findings[0]
    assert isinstance(finding, Finding) and isinstance(finding.evidence, Evidence)
    assert all(isinstance(e, Evaluation) for e in (*report.evaluations, *finding.evaluations))
    assert all(isinstance(s, StepRecord) for s in report.steps) and report.steps[0].raw
    assert all(isinstance(r, Recheck) for r in report.rechecks) and report.rechecks[0].before
    assert isinstance(report.coverage, Coverage) and report.coverage.run_gate == "PASS"
    assert isinstance(report.diff, Diff) and report.diff.unchanged
    assert report.model == ModelInfo(name="audit-baseline", provider="audit-baseline",
                                     model="rule-pack-blind")
    assert report.verdicts["finding"]["PASS"] == len(report.findings)
    # a finding's journal form and back: the same record; fraction and interval are derived
    data = finding.to_json()
    assert data["fraction"] == finding.evidence.fraction and Finding.from_json(data) == finding
    # steps keep their full record; findings.json keeps the summary keys of each
    assert "raw" not in report.to_json()["steps"][0] and "output" not in report.to_json()["steps"][0]


def test_a_contract_is_written_only_when_the_audit_had_one():
    summary = AuditSummary(run_id="r", lineage="l", snapshot_id="s", status="complete",
                           reason="done")
    assert "contract" not in summary.to_json()
    checked = summary.model_copy(update={"contract": (ContractStatus(
        check="keys[0].nulls", description="id has no nulls", status="holds"),)})
    assert checked.contract[0].status == "holds"


def test_a_findings_json_that_is_not_one_is_a_usage_error_naming_the_field():
    with pytest.raises(UsageError, match=r"where.json: not a valid findings.json: "
                       r"findings.0.evidence: Field required"):
        read_findings({"schema_version": 1, "run_id": "r", "lineage": "l", "snapshot_id": "s",
                       "status": "complete", "reason": "", "findings": [{
                           "key": "F-1", "lineage": "l", "snapshot_id": "s", "category": "c",
                           "columns": [], "title": "t", "rationale": "", "severity": "low",
                           "derived_severity": "low", "severity_reason": None,
                           "predicate": None, "view": "data", "fingerprint": "fp:x",
                           "step": 1}]}, where="where.json")
    with pytest.raises(UsageError, match="schema_version None"):
        read_findings([], where="where.json")

"""The audit journal goes through the one codec with its own event family: its lines read back
as the audit's typed payloads (never `UnknownEvent`), the audit fold dispatches on payload
types, and a journal written before (main ce4e1e3, checked in) reads to the same report."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from parquet_agent.audit import AuditReport
from parquet_agent.audit.events import (
    AUDIT_EVENTS,
    AuditFinished,
    AuditStarted,
    EvaluationEvent,
    HistoryChecked,
    StepDone,
    StepModel,
)
from parquet_agent.audit.report import write_exports
from parquet_agent.audit.state import AuditState
from parquet_agent.store.journal import Journal, read_journal
from parquet_agent.transcript import UnknownEvent

OLD = Path(__file__).parent / "fixtures" / "audit-main-ce4e1e3"

PAYLOADS = [
    AuditStarted("a1", "filings", {"snapshot_id": "snap:1", "rows": 3}, {"rows": 3}, {},
                 {"name": "auditor"}),
    HistoryChecked(None, []),
    StepModel(1, "look first", "schema_sample", {"n": 3}, 0.9,
              {"input_tokens": 10, "output_tokens": 5}, 0.002, ["raw/audit/step-1.json"]),
    EvaluationEvent({"gate": "action", "evaluator": "rules", "verdict": "PASS", "input": {}}),
    StepDone(1, "schema_sample", {"n": 3}, "PASS", True, {"columns": ["a"]}),
    AuditFinished("complete", "concluded"),
]


def test_audit_events_read_back_as_their_typed_payloads(tmp_path):
    path = tmp_path / "journal" / "audit.jsonl"
    journal = Journal(path, family=AUDIT_EVENTS)
    journal.append_many(PAYLOADS)
    journal.close()
    read = read_journal(path, family=AUDIT_EVENTS)
    assert not read.damaged and [e.payload for e in read.events] == PAYLOADS
    # a reader without the family still keeps every line, untyped
    assert all(isinstance(e.payload, UnknownEvent) for e in read_journal(path).events)


def test_the_audit_fold_dispatches_on_payload_types(tmp_path):
    state = AuditState.fold(tuple(_events(tmp_path, PAYLOADS)))
    assert state.started == PAYLOADS[0] and state.finished == PAYLOADS[-1]
    assert state.schema == {"columns": ["a"]} and state.tokens == 15 and state.cost_usd == 0.002
    assert state.steps[0]["reasoning"] == "look first" and state.evaluations[0]["verdict"] == "PASS"
    # an event name alone is nothing to the fold: the same lines untyped change nothing
    untyped = [UnknownEvent(type(p).EVENT, {"x": 1}) for p in PAYLOADS]
    assert AuditState.fold(tuple(_events(tmp_path / "u", untyped))) == AuditState()


def test_an_audit_journal_written_by_main_ce4e1e3_reads_to_the_same_report(tmp_path):
    run_dir = tmp_path / "a1"
    (run_dir / "journal").mkdir(parents=True)
    shutil.copyfile(OLD / "manifest.json", run_dir / "manifest.json")
    (run_dir / "journal" / "audit.jsonl").write_bytes(
        gzip.decompress((OLD / "journal" / "audit.jsonl.gz").read_bytes()))
    read = read_journal(run_dir / "journal" / "audit.jsonl", family=AUDIT_EVENTS)
    assert not read.damaged and read.events
    assert {type(e.payload) for e in read.events} == {
        AuditStarted, HistoryChecked, StepModel, EvaluationEvent, StepDone, AuditFinished}
    report = AuditReport.load(run_dir)
    assert report.status == "complete" and report.findings and report.rechecks
    write_exports(report)
    assert (run_dir / "findings.json").read_bytes() == gzip.decompress(
        (OLD / "findings.json.gz").read_bytes())  # what main exported when it ran


def _events(tmp_path: Path, payloads: list) -> list:
    journal = Journal(tmp_path / "audit.jsonl", family=AUDIT_EVENTS)
    events = journal.append_many(payloads)
    journal.close()
    return events

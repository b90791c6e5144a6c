"""An audit whose model died mid-run resumes to `complete` once the model is back, asking only the
steps not yet answered; a failed audit never becomes its lineage's previous run (issue 26 item 3).
The model is the seam: the deterministic baseline auditor, failing as a dead server does."""

from __future__ import annotations

import pytest

from parquet_agent.audit import Auditor, FindingsStore
from parquet_agent.audit.baseline import BaselineAuditor
from parquet_agent.audit.planter import plant
from parquet_agent.errors import ModelCallError
from parquet_agent.store.journal import read_journal
from tests.audit.conftest import write_filings


class _Model:
    """The baseline auditor, counting its calls; from call `dies_at` on, every call fails as a
    model server that is gone (connection refused, retries spent)."""

    def __init__(self, dies_at: int | None = None):
        self.inner, self.calls, self.dies_at = BaselineAuditor(), 0, dies_at
        self.name, self.provider, self.model = (self.inner.name, self.inner.provider,
                                                self.inner.model)

    def complete(self, request, sink):
        self.calls += 1
        if self.dies_at is not None and self.calls >= self.dies_at:
            raise ModelCallError("connection refused (127.0.0.1): retries spent", (),
                                 kind="connect")
        return self.inner.complete(request, sink)


@pytest.fixture
def datasets(tmp_path):
    clean = write_filings(tmp_path / "clean")
    plant(clean, tmp_path / "dirty", seed=3, rate=0.05)
    return clean, tmp_path / "dirty"


def _steps(run_dir) -> list[int]:
    events = read_journal(run_dir / "journal" / "audit.jsonl").events
    return [e.data["step"] for e in events if e.event == "step_model"]


def test_a_failed_audit_resumes_to_complete_asking_only_unanswered_steps(datasets, tmp_path):
    clean, dirty = datasets
    store = FindingsStore.open(tmp_path / "findings.sqlite")
    first = Auditor(model=_Model(), store=store).run(clean, run_dir=tmp_path / "a0",
                                                     lineage="filings")
    assert first.status == "complete"

    dying = _Model(dies_at=4)
    failed = Auditor(model=dying, store=store).run(dirty, run_dir=tmp_path / "a1",
                                                   lineage="filings")
    assert failed.status == "failed" and "connection refused" in failed.reason
    assert _steps(tmp_path / "a1") == [1, 2, 3]
    # the failed run is indexed, but the baseline of the next audit stays the complete one
    assert {r["run_id"]: r["status"] for r in store.runs("filings")}["a1"] == "failed"
    assert store.previous_run("filings", exclude="a2")["run_id"] == "a0"

    back = _Model()
    resumed = Auditor(model=back, store=store).run(dirty, run_dir=tmp_path / "a1", resume=True,
                                                   lineage="filings")
    assert resumed.status == "complete", resumed.reason
    steps = _steps(tmp_path / "a1")
    assert steps == list(range(1, len(steps) + 1))  # each step answered exactly once
    assert back.calls == len(steps) - 3  # the 3 answered steps were not asked again
    assert resumed.findings and resumed.reason != failed.reason
    events = [e.event for e in read_journal(tmp_path / "a1" / "journal" / "audit.jsonl").events]
    assert events.count("audit_finished") == 2 and "audit_resumed" in events
    assert store.previous_run("filings", exclude="a2")["run_id"] == "a1"  # complete now


def test_a_complete_or_cut_short_audit_is_not_resumed_again(datasets, tmp_path):
    clean, _ = datasets
    store = FindingsStore.open(tmp_path / "findings.sqlite")
    done = Auditor(model=_Model(), store=store).run(clean, run_dir=tmp_path / "a0")
    again = _Model()
    report = Auditor(model=again, store=store).run(clean, run_dir=tmp_path / "a0", resume=True)
    assert again.calls == 0 and report.status == done.status == "complete"

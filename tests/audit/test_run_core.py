"""The audit's run folder is made by the run-folder core (issue 26 item 3): `RunStore.create`
writes its hashed manifest and takes its lock, its journal is appended through `Run.journal`,
and an audit folder written by main before that (a checked-in fixture) still opens, verifies,
reads and exports the same."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from parquet_agent import RunStore
from parquet_agent.audit import Auditor, FindingsStore
from parquet_agent.audit.events import AuditStarted, HistoryChecked
from parquet_agent.audit.planter import plant
from parquet_agent.audit.run import AuditRun, open_audit
from parquet_agent.errors import RunError
from tests.audit.conftest import unpack_audit, write_filings

# written by main at cb07f7a, where the auditor opened its own journal, lock and raw store
MAIN_AUDIT = Path(__file__).parent / "fixtures" / "audit-main-cb07f7a"


def test_an_audit_folder_written_by_main_before_the_core_made_it_still_reads(tmp_path):
    folder = unpack_audit(MAIN_AUDIT, tmp_path)
    kept = json.loads((folder / "findings.json").read_text())
    run = RunStore(tmp_path).open(folder.name)
    assert isinstance(run, AuditRun)
    report = run.verify()
    assert report.ok and not report.notes, (report.problems, report.notes)
    events = run.case_events("audit")  # read with the audit's event family
    assert isinstance(events[0].payload, AuditStarted) and events[0].payload.previous_run == "a0"
    exported = run.export()
    assert [f.key for f in exported.findings] == [f["key"] for f in kept["findings"]]
    assert exported.status == kept["status"] and (folder / "report.html").exists()
    assert run.listing_row()["findings"] == len(kept["findings"])


def test_an_audit_killed_after_its_manifest_resumes_to_complete(tmp_path):
    data = tmp_path / "data"
    plant(write_filings(tmp_path / "clean"), data, seed=3, rate=0.05)
    store = FindingsStore.open(tmp_path / "findings.sqlite")
    Auditor(store=store).run(data, run_dir=tmp_path / "runs" / "a0", lineage="filings")
    Auditor(store=store).run(data, run_dir=tmp_path / "runs" / "a1", lineage="filings")
    killed = tmp_path / "runs" / "a1"
    # as the core leaves it between `RunStore.create` and the journal's first line
    for name in ("journal/audit.jsonl", "findings.json", "findings.csv", "report.html"):
        (killed / name).unlink()
    manifest = json.loads((killed / "manifest.json").read_text())
    assert manifest["previous_run"] == "a0"

    report = Auditor(store=store).run(data, run_dir=killed, resume=True, lineage="filings")
    assert report.status == "complete"
    events = open_audit(killed).case_events("audit")
    started = [e.payload for e in events if isinstance(e.payload, AuditStarted)]
    history = [e.payload for e in events if isinstance(e.payload, HistoryChecked)]
    assert [s.previous_run for s in started] == ["a0"]
    assert len(history[0].rechecks) == len(store.run_findings("a0")) > 0
    assert json.loads((killed / "manifest.json").read_text()) == manifest  # written once
    assert open_audit(killed).verify().ok


def test_the_default_run_folder_is_a_run_id_the_core_accepts(tmp_path, monkeypatch):
    data = write_filings(tmp_path / "my data (2025)")
    monkeypatch.chdir(tmp_path)
    report = Auditor(store=str(tmp_path / "f.sqlite")).run(data)
    assert re.fullmatch(r"audit-my-data-2025-\d{8}T\d{6}Z", report.run_dir.name)
    assert RunStore(tmp_path / "runs").list().loc[0, "status"] == "complete"


def test_a_run_folder_name_the_core_refuses_is_refused_before_anything_is_written(tmp_path):
    data = write_filings(tmp_path / "data")
    with pytest.raises(RunError, match="bad run id 'my run'"):
        Auditor(store=str(tmp_path / "f.sqlite")).run(data, run_dir=tmp_path / "my run")
    assert not (tmp_path / "my run").exists()

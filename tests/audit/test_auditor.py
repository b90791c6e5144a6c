"""The audit loop end to end: baseline on planted defects, diffs and re-checks, the three gates
with every verdict, and resume after kill -9. Real workers, real run folders, real journals."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_agent.audit.prompt import unquoted
from parquet_agent.audit import AuditConfig, Auditor, AuditReport, FindingsStore
from parquet_agent.audit.auditor import FLOOR
from parquet_agent.audit.baseline import BaselineAuditor
from parquet_agent.audit.planter import plant
from parquet_agent.audit.scoring import load_manifest, score
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.store.blobs import RawStore
from parquet_agent.store.journal import read_journal

from tests.audit.conftest import write_filings


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    clean = write_filings(root / "clean")
    manifest = plant(clean, root / "dirty", seed=3, rate=0.05)
    return root, clean, root / "dirty", manifest


@pytest.fixture(scope="module")
def audits(planted, tmp_path_factory):
    """The clean and the planted copy audited once by the baseline (same lineage, one store)."""
    root = tmp_path_factory.mktemp("audits")
    store = FindingsStore.open(root / "findings.sqlite")
    before = Auditor(store=store).run(planted[1], run_dir=root / "a0", lineage="filings")
    after = Auditor(store=store).run(planted[2], run_dir=root / "a1", lineage="filings")
    return root, store, before, after


def test_planter_writes_a_ground_truth_manifest(planted):
    root, clean, dirty, manifest = planted
    assert load_manifest(dirty) == manifest
    ids = {d["id"] for d in manifest["defects"]}
    assert {"null_file_stem", "duplicate_file_stem", "char_count_mismatch", "md5_mismatch",
            "month_mismatch", "accession_nondigit", "source_format_spelling", "empty_parsed_md",
            "char_count_x10", "unknown_filer", "half_file", "type_change"} == ids
    rows = [tuple(r) for d in manifest["defects"] if d["id"] != "half_file" for r in d["rows"]]
    assert len(rows) == len(set(rows))  # every planted row belongs to one defect
    table = pq.read_table(dirty / "2025-01.parquet")
    assert table.schema.field("year").type == pa.string()  # the changed type
    assert pq.read_metadata(dirty / "2025-03.parquet").num_rows == 20  # the halved file
    with pytest.raises(Exception, match="not empty"):
        plant(clean, dirty, seed=3)


def test_baseline_scores_diffs_and_sees_a_repair_resolved(planted, audits, tmp_path):
    root, clean, dirty, manifest = planted
    runs, store, before, after = audits
    assert before.status == "complete" and before.findings == ()
    assert after.status == "complete" and after.previous_run == "a0"
    result = score(after, manifest, clean=before)
    assert result.overall["precision"] == 1.0 and result.overall["recall"] >= 0.6
    found = {d for ids in result.matches.values() for d in ids}
    assert {"char_count_mismatch", "md5_mismatch", "null_file_stem", "month_mismatch",
            "accession_nondigit", "empty_parsed_md", "type_change", "unknown_filer"} <= found
    assert result.per_category["referential"]["recall"] == 1.0  # tried, not skipped
    # the diff against the clean run: every finding is new, and it is the planted ones found
    assert sorted(after.diff.new) == sorted(f.key for f in after.findings)
    assert {after.finding(k).category for k in after.diff.new} == {
        d["category"] for d in manifest["defects"] if d["id"] in found}
    # repair one defect (md5) in a copy and audit again: resolved by re-check, not by absence
    repaired = tmp_path / "repaired"
    repaired.mkdir()
    for f in sorted(dirty.glob("*.parquet")):
        rows = pq.read_table(f).to_pylist()
        for r in rows:
            r["md5"] = hashlib.md5((r["parsed_md"] or "").encode()).hexdigest()
        pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(f)), repaired / f.name)
    third = Auditor(store=store).run(repaired, run_dir=tmp_path / "a2", lineage="filings")
    md5_key = next(f.key for f in after.findings if f.columns == ("md5", "parsed_md"))
    assert third.diff.resolved == (md5_key,)
    recheck = next(r for r in third.rechecks if r.key == md5_key)
    first_request = RawStore(tmp_path / "a2", writable=False).read(third.steps[0].raw[0])
    assert b'\\"status\\":\\"resolved\\"' in first_request  # the history is given to the agent
    assert recheck.after.count == 0 and recheck.before.count > 0
    assert set(third.diff.unchanged) == {f.key for f in after.findings} - {md5_key}
    # exports
    exported = json.loads((tmp_path / "a2" / "findings.json").read_text())
    assert exported["schema_version"] == 1 and exported["diff"]["resolved"] == [md5_key]
    assert (runs / "a1" / "findings.csv").read_text().count("\n") == len(after.findings) + 1
    assert [r["run_id"] for r in store.reopen().runs("filings")] == ["a0", "a1", "a2"]
    # the Diff tab names findings by title, with counts as a reader writes them (issue 27 item 7:
    # it showed finding keys and raw records: interval float lists, fingerprints)
    from parquet_agent.audit.explorer import FindingsExplorer

    diff = FindingsExplorer(third.run_dir).tabs.children[2].value
    for f in third.findings:
        assert html.escape(f.title) in diff
    for r in third.rechecks:
        assert html.escape(r.title) in diff
        assert r.fingerprint not in diff and "interval" not in diff
    assert not re.search(r"\[0\.\d+, ", diff) and " of " in diff


def _call(name: str, **arguments) -> dict:
    return {"text": f"I will call {name}.", "tool_calls": [{"name": name, "arguments": arguments}]}


def test_scripted_run_exercises_every_verdict_at_every_gate(planted, tmp_path):
    root, clean, dirty, manifest = planted
    columns = ["accession", "file_stem", "year", "month", "parsed_md", "char_count", "md5",
               "has_ocr", "source_format"]
    others = ["uniqueness", "validity", "range", "referential", "volume", "coverage",
              "distribution_drift", "schema_drift"]
    script = [
        _call("run_query", sql="DELETE FROM data"),                          # action FAIL
        _call("run_query", sql="SELECT parsed_md FROM data LIMIT 1"),       # action WARN
        _call("schema_sample", n=3, confidence=0.9),                        # action PASS
        *[_call("get_stats", column=c) for c in columns],
        _call("write_finding", category="consistency", columns=["char_count", "parsed_md"],
              title="char_count is not the text length", rationale="must match",
              predicate="char_count <> length(parsed_md)"),                 # rules PASS, judge PASS
        _call("write_finding", category="completeness", columns=["file_stem"],
              title="file_stem missing", rationale="ids must exist", predicate="file_stem IS NULL",
              severity="critical", severity_reason="ids matter"),           # rules WARN (raised)
        _call("write_finding", category="range", columns=["char_count"], title="negative counts",
              rationale="counts are >= 0", predicate="char_count < 0"),     # rules FAIL (count 0)
        _call("write_finding", category="consistency", columns=["md5", "parsed_md"],
              title="md5 is not the text hash", rationale="must match",
              predicate="md5 <> md5(parsed_md)"),                           # judge FAIL
        _call("conclude", summary="done"),                                  # run FAIL (coverage)
        _call("conclude", summary="done", skipped={c: "not looked at in this test" for c in others}),
        '{"verdict": "PASS", "critique": "my own check: coverage as stated"}',  # `self` at the run gate
        "I am done.",  # never asked: the run ended at the accepted conclude
    ]
    judge = ScriptedModel([
        '{"verdict": "PASS", "critique": "a real defect"}',
        '{"verdict": "PASS", "critique": "ids must not be null"}',
        '{"verdict": "FAIL", "critique": "md5 here is of the raw file, a documented property"}',
        '{"verdict": "WARN", "critique": "coverage is thin: most categories skipped"}',
        # the deterministic floor: discovery's candidates this script never proposed
        *['{"verdict": "PASS", "critique": "discovery\'s candidate holds"}'] * 20,
    ], name="judge")
    config = AuditConfig(gates={"action": ("rules",), "finding": ("rules", "judge"),
                                "run": ("rules", "self", "judge")})
    model = ScriptedModel(script, name="auditor")
    report = Auditor(config, model=model, judge=judge,
                     store=tmp_path / "f.sqlite").run(dirty, run_dir=tmp_path / "run")
    assert report.status == "complete"
    counts = report.verdict_counts()
    for gate in ("action", "finding", "run"):
        assert all(counts[gate][v] >= 1 for v in ("PASS", "WARN", "FAIL")), (gate, counts)
    titles = {f.title: f for f in report.findings}
    floor = [s for s in report.steps if FLOOR in (s.critique or "")]
    assert set(titles) - {s.arguments["title"] for s in floor} == {
        "char_count is not the text length", "file_stem missing"}
    assert titles["file_stem missing"].severity == titles["file_stem missing"].derived_severity != "critical"
    dismissed = {d.title: d.dismissed_reason for d in report.dismissed}
    assert "no affected rows" in dismissed["negative counts"]
    assert "documented property" in dismissed["md5 is not the text hash"]
    # fail-fast: the judge is never asked after a rules FAIL
    judged = [e for e in report.evaluations if e.evaluator == "judge"]
    floor_judged = [e for e in judged if e.step in {s.step for s in floor}]
    assert len(judged) - len(floor_judged) == 4 and len(judged) == len(judge.requests)
    # every evaluation is in the journal with its input, and the judge's raw requests are stored
    events = read_journal(tmp_path / "run" / "journal" / "audit.jsonl").events
    evaluations = [e.data["evaluation"] for e in events if e.event == "evaluation"]
    assert len(evaluations) == len(report.evaluations) and all(e["input"] for e in evaluations)
    raw = RawStore(tmp_path / "run", writable=False)
    for e in judged:
        request = json.loads(raw.read(e.raw[0]))
        assert request["request"]["purpose"] == "judge"
    # the action FAIL put its critique into the next step's state; no tool ran for it
    second = unquoted(model.requests[1].messages[-1].text)
    assert "DELETE" in second["critiques"][0] and second["queries"] == []
    assert [e.evaluator for e in report.evaluations if e.gate == "run"] == [
        "rules", "rules", "self", "judge"]
    assert len(model.requests) == len(script) - 1  # the self critique was the auditor's own call
    shown = json.loads((tmp_path / "run" / "findings.json").read_text())
    assert shown["verdicts"] == counts
    page = (tmp_path / "run" / "report.html").read_text()
    assert all(f'<span class="{v}">{v}</span>' in page for v in ("PASS", "WARN", "FAIL"))
    assert "documented property" in page and "coverage is thin" in page


class _Counting:
    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.name, self.provider, self.model = inner.name, inner.provider, inner.model

    def complete(self, request, sink):
        self.calls += 1
        return self.inner.complete(request, sink)


def test_resume_after_kill_9_pays_no_model_call_twice(planted, audits, tmp_path):
    root, clean, dirty, manifest = planted
    run_dir = tmp_path / "run"
    journal = run_dir / "journal" / "audit.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "parquet_agent", "audit", "run", str(dirty),
                             "--run-dir", str(run_dir), "--lineage", "filings"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_bytes().count(b'"event":"step_model"') >= 6:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = [e for e in read_journal(journal).events if e.event == "step_model"]
    assert 6 <= len(before) and not any(e.event == "audit_finished" for e in read_journal(journal).events)
    model = _Counting(BaselineAuditor())
    report = Auditor(model=model).run(dirty, run_dir=run_dir, resume=True, lineage="filings")
    assert report.status == "complete"
    steps = [e.data["step"] for e in read_journal(journal).events if e.event == "step_model"]
    assert steps == list(range(1, len(steps) + 1))  # each step asked the model exactly once
    assert model.calls == len(steps) - len(before)
    assert {f.key for f in audits[3].findings} == {f.key for f in report.findings}


def test_a_run_folder_is_not_reused_and_resume_needs_one(planted, tmp_path):
    root, clean, dirty, manifest = planted
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("")
    with pytest.raises(Exception, match="already holds a run"):
        Auditor().run(clean, run_dir=tmp_path / "x")
    with pytest.raises(Exception, match="nothing to resume"):
        Auditor().run(clean, run_dir=tmp_path / "y", resume=True)


def test_report_loads_from_the_folder_alone(audits):
    report = audits[3]
    again = AuditReport.load(report.run_dir)
    assert again.to_json() == report.to_json()
    frame = again.findings_df()
    assert list(frame["key"]) == [f.key for f in report.findings] and (frame["count"] > 0).all()


def test_report_html_shows_findings_sql_gates_and_diff_and_escapes_everything(audits, planted):
    report = audits[3]
    page = (report.run_dir / "report.html").read_text()
    assert "Content-Security-Policy" in page and "<script" not in page
    for finding in report.findings:
        assert finding.key in page
    assert "count SQL" in page and "gate records" in page and "Dismissed (" in page
    assert "Diff against a0" in page and "Every evaluation" in page
    # hostile text from the data is escaped: a planted value cannot open a tag
    from dataclasses import replace

    from parquet_agent.audit.html import render

    hostile = replace(report.findings[0], title="<img src=x onerror=alert(1)>")
    text = render(report.model_copy(update={"findings": (hostile,)})).decode()
    assert "<img" not in text and "&lt;img src=x" in text


def test_findings_explorer_tabs(audits):
    from parquet_agent.audit.explorer import FindingsExplorer

    report = audits[3]
    ex = FindingsExplorer(report.run_dir)
    assert ex.tabs.titles == ("Findings", "Dismissed", "Diff", "Evaluations", "Steps")
    last = report.findings[-1]
    ex.finding.value = last.key
    assert last.key in ex.detail.value and "count SQL" in ex.detail.value
    assert str(last.evidence.count) in ex.detail.value

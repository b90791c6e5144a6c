"""Findings of data-quality audits in an experiment's report.html and CaseExplorer's Findings tab:
a real experiment run and real audit run folders of the same corpus, side by side."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from parquet_agent import CaseExplorer
from parquet_agent.audit import AuditConfig, Auditor
from parquet_agent.cli import main
from parquet_agent.errors import UsageError
from parquet_agent.experiment.runner import Experiment
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.explore.sections import report_extras
from parquet_agent.models.scripted import ScriptedModel
from parquet_agent.report.corpus_audit import corpus_audits
from parquet_agent.report.exporter import export_run
from tests.harness_corpus import make_harness_corpus

HOSTILE = "February <img src=x onerror=alert(1)> rows"
FEBRUARY_STEM = "0001234567-25-000004"  # a month-2 filing the case reads
SKIPPED = ["completeness", "uniqueness", "validity", "range", "consistency", "referential",
           "volume", "distribution_drift", "schema_drift"]


def _audit(corpus: Path, run_dir: Path):
    finding = {"category": "coverage", "columns": ["month"], "title": HOSTILE,
               "rationale": "a test defect", "predicate": "month = 2"}
    script = [{"text": "propose", "tool_calls": [{"name": "write_finding", "arguments": finding}]},
              {"text": "stop", "tool_calls": [{"name": "conclude", "arguments": {
                  "summary": "done", "skipped": {c: "not in this test" for c in SKIPPED}}}]}]
    return Auditor(AuditConfig(run_policy="accept"), model=ScriptedModel(script),
                   store=run_dir.parent / "findings.sqlite").run(corpus, run_dir=run_dir)


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus-audit")
    corpus = make_harness_corpus(root / "corpus")
    runs = root / "runs"
    script = root / "script.json"
    script.write_text(json.dumps(["ok", {"tool_calls": [{"name": "sql", "arguments": {
        "query": "SELECT left(parsed_md, 40) AS head FROM filing", "file_stem": FEBRUARY_STEM}}]},
        "$813 million"]))
    config = ExperimentConfig.from_dict({
        "name": "audited", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "sample": {"ids": ["Q001"]}, "strategies": ["sql"], "runs_dir": str(runs),
        "models": [{"name": "s", "provider": "scripted", "script": str(script)}],
        "judge": {"provider": "rubric"}, "limits": {"case_workers": 1}})
    run = Experiment(config, progress=False).run(runs / "exp").dir
    audit = _audit(corpus, runs / "audit-1")
    # an audit of another snapshot of the corpus (one file rewritten), in another folder
    other = root / "corpus-v2"
    shutil.copytree(corpus, other)
    table = pq.read_table(other / "2025-02.parquet")
    pq.write_table(table.slice(0, 2), other / "2025-02.parquet")
    stale = _audit(other, root / "elsewhere" / "audit-v2")
    return run, audit, stale


def test_the_report_shows_the_corpus_findings_escaped_with_their_source(side_by_side):
    run, audit, stale = side_by_side
    export_run(run, extras=report_extras(run, audits="auto"))
    page = (run / "report.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="corpus-audit">'):]
    section = section[:section.index("</section>")]
    (finding,) = audit.findings
    assert finding.key in section and "3 / 6" in section and "month = 2" in section
    assert "the same corpus snapshot as this run" in section
    assert "February &lt;img src=x onerror=alert(1)&gt; rows" in section
    assert "<img src=x" not in page  # the hostile title never reaches the page as markup
    assert 'href="../audit-1/report.html"' in section
    assert "audit-v2" not in section  # auto takes the audits beside the run, same snapshot
    # the CLI: --audit auto, and a named audit of another snapshot is shown, marked so
    assert main(["export", str(run), "--audit", str(stale.run_dir)]) == 0
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "another snapshot of the corpus" in page and "2 / 5" in page
    assert main(["export", str(run)]) == 0
    assert 'id="corpus-audit"' not in (run / "report.html").read_text(encoding="utf-8")


def test_named_folders_that_are_not_audits_are_clear_errors(side_by_side, tmp_path):
    run, audit, _ = side_by_side
    with pytest.raises(UsageError, match="not an audit run folder"):
        corpus_audits(run, [run])
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "audit"}))
    with pytest.raises(UsageError, match="no findings.json yet"):
        corpus_audits(run, [tmp_path])


def test_a_findings_json_of_the_wrong_types_is_refused_naming_the_field(side_by_side, tmp_path):
    """findings.json is read as the typed AuditSummary (report.audit_model): a count that is
    markup is refused with the file and the field, never shown."""
    run, audit, _ = side_by_side
    forged = tmp_path / "forged"
    shutil.copytree(audit.run_dir, forged)
    data = json.loads((forged / "findings.json").read_text())
    data["findings"][0]["evidence"]["count"] = "<img src=x onerror=alert(1)>"
    (forged / "findings.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"findings.json: not a valid findings.json: "
                       r"findings.0.evidence.count: Input should be a valid integer"):
        corpus_audits(run, [forged])
    data["schema_version"] = 2
    (forged / "findings.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match="schema_version 2 is not one this reader knows"):
        corpus_audits(run, [forged])


def test_case_explorer_has_a_findings_tab(side_by_side):
    run, audit, _ = side_by_side
    ex = CaseExplorer(run)
    assert ex.tabs.titles == ("Cases", "Findings (1)")
    shown = ex.findings.value
    assert "Findings whose example rows are filings Q001__s__sql named" in shown
    named = shown[:shown.index('<section id="corpus-audit">')]
    assert "February &lt;img" in named and "<img" not in shown.replace("&lt;img", "")
    assert audit.findings[0].key in shown
    empty = CaseExplorer(run, audit=None)
    assert empty.tabs.titles == ("Cases", "Findings (0)")
    assert "No audit of this corpus" in empty.findings.value

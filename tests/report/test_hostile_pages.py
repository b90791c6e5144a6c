"""What reaches a page or a spreadsheet from hostile text (issue 24, item 6), in Debian's
Chromium and real run folders:

- a forged findings.json (markup in its texts, a bidi override in a title) shown by
  the corpus-audit section, which the notebook widget displays without any CSP: nothing runs,
  nothing becomes markup, odd characters are marks;
- a case whose answer is a megabyte of control and bidi characters opens in report.html at once
  (it took 297 s of layout before), its text shown as ASCII marks and cut with a button for the
  rest;
- every CSV of that run (cases-index.csv, tables/*.csv) guards the answer, which starts with a
  spreadsheet formula.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from playwright.sync_api import expect

from parquet_agent.escape import FORMULA_START, ODD
from parquet_agent.experiment.runner import Experiment
from parquet_agent.models.fakes import FakeReply, openai_server
from parquet_agent.report.corpus_audit import CorpusAudit, audits_section
from parquet_agent.report.exporter import export_run
from parquet_agent.store import Run
from parquet_agent.analysis.tables import write_tables
from tests.engine.grid import write_config

FORMULA = '=HYPERLINK("http://evil.example/","open me")'
PWN = '<img src=x onerror="window.__pwned=1">'


def _forged_audit(folder: Path) -> CorpusAudit:
    """A findings.json of the right types (one of the wrong types is refused, naming the field:
    tests/explore/test_corpus_audit.py) whose every text is hostile."""
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"kind": "audit"}))
    finding = {
        "key": "F-1 " + PWN, "lineage": "l", "snapshot_id": "s", "severity": "high",
        "category": "validity", "title": "rows \u202eevil " + PWN, "columns": ["a\x1b[2Jb"],
        "rationale": PWN, "derived_severity": "high", "severity_reason": None,
        "predicate": None, "view": "data", "fingerprint": "fp:x", "step": 1, "evidence": {
            "count": 1, "denominator": 2,
            "count_sql": "SELECT 1 -- </pre><script>window.__pwned=3</script>",
            "denominator_sql": None, "examples_sql": None,
            "examples": [{"x": "<svg onload=window.__pwned=4>"}]}}
    (folder / "findings.json").write_text(json.dumps({
        "schema_version": 1, "run_id": "forged\u202e", "lineage": "l", "snapshot_id": "s",
        "status": "complete", "reason": "<script>window.__pwned=2</script>",
        "findings": [finding], "verdicts": {"<b>x</b>": {"PASS": 1}}}))
    return CorpusAudit.load(folder, None)


def test_a_forged_findings_json_runs_nothing_where_the_notebook_shows_it(browser, tmp_path):
    html = audits_section([_forged_audit(tmp_path / "audit")])
    for tag in ("<img", "<script", "<svg", "<b>"):
        assert tag not in html, tag
    assert not ODD.search(html) and "<U+202E>evil" in html.replace("&lt;", "<").replace("&gt;", ">")
    page = browser.new_page()  # a notebook widget: the HTML as it is, no Content-Security-Policy
    try:
        page.set_content(f"<html><body>{html}</body></html>")
        page.wait_for_timeout(200)  # an onerror or onload would have run by now
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img, script, svg").count() == 0
        expect(page.locator("td").nth(3)).to_contain_text(PWN)  # the title, as text
    finally:
        page.close()


@pytest.fixture(scope="module")
def megabyte_run(tmp_path_factory) -> Path:
    """One case (Q001 x fake-a x sql) whose answer is a formula and a megabyte of odd text."""
    from tests.harness_corpus import make_harness_corpus

    rng = random.Random(7)
    odd = [chr(c) for c in (0x01, 0x07, 0x08, 0x1B, 0x7F, 0x202E, 0x200B, 0x2066)]
    # a random kilobyte, repeated: as costly to lay out as random text, cheap to seal (level-9
    # deflate takes a minute over a megabyte of random odd characters)
    answer = FORMULA + "".join(rng.choice(odd + ["A", "b"]) for _ in range(1000)) * 1000

    def script(request):
        user = next((m["content"] for m in (request.json or {}).get("messages", [])
                     if m.get("role") == "user"), "")
        return FakeReply(text="OK" if "single word" in user else answer)

    work = tmp_path_factory.mktemp("megabyte")
    corpus = make_harness_corpus(work / "corpus")
    with openai_server(script) as server:
        config = write_config(work / "c.toml", corpus, work / "runs", server.url)
        text = config.read_text().replace('strategies = ["sql", "sql+stream"]', 'strategies = ["sql"]')
        config.write_text("sample = { ids = [\"Q001\"] }\n" + text)
        run = Experiment.from_toml(config, env={"FAKE_OPENAI_KEY": "sk-test"}, progress=False
                                   ).run(work / "runs" / "mb")
    export_run(run.dir)
    return run.dir


@pytest.mark.browser
def test_a_megabyte_of_control_characters_opens_at_once(page, megabyte_run):
    page.goto((megabyte_run / "report.html").as_uri())
    expect(page.locator("html")).to_have_attribute("data-ready", "1")
    row = page.locator("tr.case").first
    case = row.get_attribute("data-case-id")
    row.click()
    detail = page.locator(f'tr.detail[data-detail-for="{case}"]')
    # Playwright's default 5 s: the page used to lay this case out for minutes
    expect(detail.locator('section[data-section="6"]')).to_be_visible()
    first = detail.locator('section[data-section="1"]')
    expect(first).to_contain_text(FORMULA)
    expect(first.locator("button.more").first).to_contain_text("show the other")
    assert not ODD.search(first.inner_text())
    assert page.errors == []


def test_every_csv_of_the_run_guards_a_formula_answer(megabyte_run):
    csv.field_size_limit(8 * 2**20)  # the answer is one megabyte-long cell
    write_tables(Run(megabyte_run))
    files = [megabyte_run / "cases-index.csv", *sorted((megabyte_run / "tables").glob("*.csv"))]
    seen = 0
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.reader(f):
                assert not any(cell.startswith(FORMULA_START) for cell in row), path.name
                seen += sum(FORMULA in cell for cell in row)
    assert seen >= 2  # the answer is there (cases.csv and the index's question or answer)

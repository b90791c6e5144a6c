"""CaseExplorer logic without a kernel or browser: real run folders, widgets driven by `.value`."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from parquet_agent import CaseExplorer
from parquet_agent.errors import UsageError
from parquet_agent.explore.case_view import SECTION_TITLES, render_case
from parquet_agent.explore.explorer import ALL, NO_RAW
from parquet_agent.explore.runs import RunStore
from parquet_agent.explore.source import CaseSource, exports_current
from parquet_agent.report.case_model import read_case
from parquet_agent.store import RunStarted, read_raw

REPORT_JS = Path(__file__).resolve().parents[2] / "parquet_agent/report/assets/report.js"


def _ids(ex: CaseExplorer) -> list[str]:
    return [value for _, value in ex.picker.options]


def test_opens_a_run_folder_or_a_run_and_lists_every_case(demo_run):
    ex = CaseExplorer(demo_run)
    assert ex.cases.from_exports
    assert len(_ids(ex)) == 6 and ex.count.value == "<b>6</b> of 6 cases"
    assert ex.picker.value == _ids(ex)[0]
    with RunStore(demo_run.parent).open(demo_run.name) as run:
        assert _ids(CaseExplorer(run)) == _ids(ex)


def test_filters_by_model_strategy_status_question_and_score(scripted_run, demo_run):
    ex = CaseExplorer(scripted_run)
    assert sorted(ex.status.options) == sorted([ALL, "complete", "incomplete"])
    ex.status.value = "incomplete"
    assert _ids(ex) == ["Q003__baseline__sql"]
    ex.status.value = ALL
    ex.question.value = "apex"  # question text, case-insensitive
    assert _ids(ex) == ["Q002__baseline__sql"]
    ex.question.value = "q00"   # question id
    assert len(_ids(ex)) == 3
    ex.question.value = ""
    ex.score.value = (50.0, 100.0)
    assert _ids(ex) == ["Q001__baseline__sql", "Q003__baseline__sql"]  # Q003 is unscored
    ex.include_unscored.value = False
    assert _ids(ex) == ["Q001__baseline__sql"]
    assert ex.count.value == "<b>1</b> of 3 cases"
    ex.score_field.value = "citation_support"  # the scripted answers cite nothing: 0
    assert _ids(ex) == []
    assert "No case matches" in ex.detail.value
    assert ex.raw_picker.options == ((NO_RAW, None),)

    demo = CaseExplorer(demo_run)
    demo.strategy.value = "sql+stream"
    assert _ids(demo) == [f"Q00{i}__baseline__sql+stream" for i in (1, 2, 3)]
    assert list(demo.filtered()["strategy"].unique()) == ["sql+stream"]
    demo.model.value = "baseline"
    assert len(_ids(demo)) == 3


def test_case_view_has_the_six_report_sections(demo_run):
    js = REPORT_JS.read_text()
    for title in SECTION_TITLES:  # the same titles report.html uses
        assert title in js
    ex = CaseExplorer(demo_run)
    html = ex.detail.value
    found = re.findall(r'<section class="pa-sec" data-section="(\d)"><h3>\d\. ([^<]*)</h3>', html)
    assert [int(n) for n, _ in found] == [1, 2, 3, 4, 5, 6]
    for (_, shown), title in zip(found, SECTION_TITLES):
        assert shown.startswith(title)


def test_tool_calls_expand_to_their_exact_sql_and_output(scripted_run):
    ex = CaseExplorer(scripted_run)
    ex.show("Q002__baseline__sql")
    html = ex.detail.value
    call = html[html.index('<details class="pa-call">'):]
    assert "SELECT count(*) AS n FROM filings" in call
    assert "cache hit" in call  # Q002 ran the same SQL as Q001
    assert "returned data" in call and "&quot;rows&quot;: [\n  [\n   6\n  ]\n ]" in call


def test_hostile_answer_is_escaped_and_bidi_made_visible(scripted_run):
    ex = CaseExplorer(scripted_run, case_id="Q001__baseline__sql")
    html = ex.detail.value
    assert "<img src=x" not in html and "</script>" not in html
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "\u202e" not in html and "&lt;U+202E&gt;evil" in html


def test_raw_files_show_their_exact_stored_bytes(scripted_run):
    ex = CaseExplorer(scripted_run, case_id="Q001__baseline__sql")
    record = ex.cases.record("Q001__baseline__sql")
    journal = record.links.journal
    assert [v for _, v in ex.raw_picker.options] == [
        None, "cases/Q001__baseline__sql.json", journal, *record.raw_files]
    assert ex.raw_view.outputs == ()  # nothing is read until a file is chosen
    path = record.raw_files[0]
    ex.raw_picker.value = path
    (out,) = ex.raw_view.outputs
    assert out["data"]["text/plain"].encode("utf-8") == read_raw(scripted_run, path)
    ex.raw_picker.value = "cases/Q001__baseline__sql.json"
    (out,) = ex.raw_view.outputs
    assert json.loads(out["data"]["text/plain"]) == record.to_dict()
    ex.raw_picker.value = journal  # sealed (gzip): shown as its JSON lines
    (out,) = ex.raw_view.outputs
    assert '"event":"case_finished"' in out["data"]["text/plain"].replace(" ", "")
    ex.show("Q002__baseline__sql")
    assert ex.raw_view.outputs == () and ex.raw_picker.value is None
    with pytest.raises(UsageError, match="not a file of"):
        ex.cases.raw_text("journal/../../../etc/passwd")


def test_incomplete_case_shows_what_was_sent_and_no_invented_answer(scripted_run):
    ex = CaseExplorer(scripted_run, case_id="Q003__baseline__sql")
    html = ex.detail.value
    assert "Incomplete case" in html
    assert "(none: no answer was given)" in html
    assert "Not judged" in html


def test_case_record_and_journal_are_served_by_the_kernel_not_linked_as_file_uris(demo_run):
    """Issue 19 finding 7: Chromium refuses file:// links inside JupyterLab."""
    ex = CaseExplorer(demo_run, case_id="Q002__baseline__sql")
    assert "file:" not in ex.detail.value and "href=" not in ex.detail.value
    named = re.findall(r"<code>((?:cases|journal)/[^<]+)</code>", ex.detail.value)
    assert len(named) == 2
    offered = [value for _, value in ex.raw_picker.options if value]
    for rel in named:
        assert rel in offered and (Path(demo_run) / rel).is_file()
        ex.raw_picker.value = rel
        assert ex.raw_view.outputs[0]["data"]["text/plain"]
    assert f"parquet-agent raw {demo_run}" in ex.detail.value


def test_timings_are_rounded_and_the_case_list_shows_the_question(demo_run):
    """Issue 19 finding 10: `0.08267299995168287 ms`; a list of ids without the question."""
    ex = CaseExplorer(demo_run, case_id="Q002__baseline__sql")
    assert not re.search(r"\d\.\d{3,} ms|\d\.\d{3,}</td>", ex.detail.value)
    label = dict((v, k) for k, v in ex.picker.options)["Q002__baseline__sql"]
    question = ex.filtered().set_index("case_id").loc["Q002__baseline__sql", "question"]
    assert " ".join(question.split())[:40] in label
    # raw file paths get a row across the table (the fit itself: test_explorer_fit_slow.py)
    assert ex.detail.value.count('<tr class="pa-attempt-files"><td colspan="9"') == \
        ex.detail.value.count('<tr class="pa-attempt">') > 0


def test_show_clears_filters_that_hide_the_case_and_refuses_unknown_ids(demo_run):
    ex = CaseExplorer(demo_run)
    ex.strategy.value = "sql"
    ex.show("Q003__baseline__sql+stream")
    assert ex.strategy.value == ALL and ex.picker.value == "Q003__baseline__sql+stream"
    with pytest.raises(UsageError, match="no case 'Q9__x__sql'"):
        ex.show("Q9__x__sql")


def test_without_exports_records_are_built_by_the_report_code_and_match(scripted_run, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(scripted_run, bare, ignore=shutil.ignore_patterns(
        "cases", "cases-index.*", "summary.json", "report.html", "case-export-provenance.json"))
    built, exported = CaseSource.open(bare), CaseSource.open(scripted_run)
    assert not built.from_exports and exported.from_exports
    assert built.case_ids == exported.case_ids
    for cid in built.case_ids:
        a, b = built.record(cid).to_dict(), exported.record(cid).to_dict()
        assert {k: v for k, v in a.items() if k != "run_id"} == \
            {k: v for k, v in b.items() if k != "run_id"}
    shown = json.loads(built.raw_text("cases/Q001__baseline__sql.json"))  # built in memory
    assert shown == built.record("Q001__baseline__sql").to_dict()
    assert not any(p.name == "cases" for p in bare.iterdir())  # nothing written


def test_exports_are_used_only_while_they_match_the_journals(demo_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(demo_run, copy)
    assert exports_current(copy)
    journal = next((copy / "journal").iterdir())
    later = (copy / "cases-index.json").stat().st_mtime + 5
    os.utime(journal, (later, later))  # newer, as after a copy: the hashes still match
    assert exports_current(copy) and CaseSource.open(copy).from_exports
    with RunStore(copy.parent).open(copy.name, writable=True) as run:  # a resumed session
        run.run_journal().append(RunStarted(session=9, pid=os.getpid(), resume=True))
    assert not exports_current(copy)
    assert not CaseSource.open(copy).from_exports


def test_render_case_of_a_minimal_record_marks_missing_raw_requests():
    minimal = {"schema_version": 1, "case_id": "x", "run_id": "r", "status": "incomplete",
               "model": {"name": None}, "links": {"case": "cases/x.json"}}
    html = render_case(read_case(minimal).record)
    assert html.count('class="pa-sec"') == 6 and "no tool calls" in html
    attempt = {"label": "x/turn-01", "number": 1, "purpose": "answer", "event": "model_attempt",
               "request_path": "raw/x/turn-01.attempt-01.request.json",
               "request_in_store": False, "response_path": None, "response_in_store": False,
               "outcome": "failed"}
    html = render_case(read_case(minimal | {"attempts": [attempt]}).record)
    assert "raw/x/turn-01.attempt-01.request.json <b style=\"color:#cf222e\">missing</b>" in html
    assert "response: (none)" in html


def test_bad_input_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not a run folder"):
        CaseExplorer(tmp_path)
    with pytest.raises(UsageError, match="expected a Run or a run folder"):
        CaseExplorer(42)

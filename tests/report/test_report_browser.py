"""report.html in a real headless Chromium (Debian's), opened from file://: filters, the six
sections of a case, hostile text shown as text, incomplete cases, no console errors, no network."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from parquet_agent.explore.sections import report_extras
from parquet_agent.report.exporter import export_run
from tests.report.conftest import INCOMPLETE_CASE, MISSING_REQUEST, answer_requests, fresh_copy

pytestmark = pytest.mark.browser

SECTIONS = ["1. Question, reference, model, status, answer",
            "2. Tool counts, rounds, attempts, cost, timing",
            "3. Tool calls", "4. Final-answer request (exact)",
            "5. Judge: request, raw response, scores, rationale", "6. API attempts"]


@pytest.fixture(scope="module")
def report(http_run, tmp_path_factory) -> Path:
    run_dir = fresh_copy(http_run, tmp_path_factory.mktemp("browser"))
    return export_run(run_dir).report


def _open(page, report: Path):
    page.goto(report.as_uri())
    expect(page.locator("html")).to_have_attribute("data-ready", "1")
    return page.locator("#cases tr.case:visible")


def _clean(page) -> None:
    assert page.errors == []
    assert [u for u in page.requests if not u.startswith("file://")] == []
    assert page.evaluate("window.__pwned") is None


def test_filters_change_the_visible_rows(page, report):
    rows = _open(page, report)
    expect(rows).to_have_count(12)
    expect(page.locator("#count")).to_have_text("12 of 12 cases")
    page.select_option("#f-status", "incomplete")
    expect(rows).to_have_count(4)
    page.select_option("#f-model", "fake-a")
    expect(rows).to_have_count(2)
    page.select_option("#f-strategy", "sql")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-case-id", INCOMPLETE_CASE)
    page.click("#f-reset")
    expect(rows).to_have_count(12)
    page.fill("#f-question", "northwind")  # question text, case-insensitive
    expect(rows).to_have_count(4)
    page.fill("#f-score-min", "50")  # score range: only the right answers (fake-a), 100
    expect(rows).to_have_count(2)
    page.fill("#f-question", "")
    page.fill("#f-score-min", "0")
    page.fill("#f-score-max", "10")  # wrong answers score 0; unscored cases drop out
    expect(rows).to_have_count(2)
    expect(page.locator("#count")).to_have_text("2 of 12 cases")
    _clean(page)


def test_a_case_expands_to_its_six_sections_in_order(page, report):
    _open(page, report)
    case = "Q001__fake-a__sql"
    detail = page.locator(f'tr.detail[data-detail-for="{case}"]')
    expect(detail).to_have_count(0)  # rendered only when opened
    page.click(f'tr.case[data-case-id="{case}"]')
    expect(detail).to_be_visible()
    headings = detail.locator("section.sec > h3")
    expect(headings).to_have_count(6)
    for i, title in enumerate(SECTIONS):
        expect(headings.nth(i)).to_contain_text(title)
    sec = lambda n: detail.locator(f'section[data-section="{n}"]')  # noqa: E731
    expect(sec(1)).to_contain_text("Northwind Mining")
    expect(sec(1)).to_contain_text("CANARY-7f3a9c")  # the reference, as the judge saw it
    expect(sec(2)).to_contain_text("requested_by_model")
    expect(sec(3)).to_contain_text("SELECT count(*) AS n FROM filings")
    expect(sec(4)).to_contain_text('"method": "POST"')  # the exact HTTP envelope
    final = answer_requests(report.parent, case)[-1]  # the final-answer request, from records
    expect(sec(4)).to_contain_text(final)
    expect(sec(5)).to_contain_text("JUDGE_INPUT_JSON")
    expect(sec(5)).to_contain_text("Rubric (no model)")
    expect(sec(6)).to_contain_text(f"parquet-agent raw . {answer_requests(report.parent, case)[0]}")
    exact = sec(4).locator("pre").first
    expect(exact).to_contain_text('"body": "{')  # the body is a JSON string inside the envelope
    sec(4).get_by_role("button", name="pretty view").first.click()
    expect(exact).to_contain_text('"role": "tool"')  # body parsed and indented
    expect(exact).not_to_contain_text('"body": "{')
    page.click(f'tr.case[data-case-id="{case}"]')  # closes again
    expect(detail).to_be_hidden()
    page.focus(f'tr.case[data-case-id="{case}"]')
    page.keyboard.press("Enter")  # and opens from the keyboard
    expect(detail).to_be_visible()
    _clean(page)


def test_a_hostile_case_renders_as_text(page, report):
    _open(page, report)
    case = "Q001__fake-b__sql+stream"
    page.click(f'tr.case[data-case-id="{case}"]')
    detail = page.locator(f'tr.detail[data-detail-for="{case}"]')
    section = detail.locator('section[data-section="1"]')
    expect(section).to_contain_text("</script><script>window.__pwned=1</script>")
    expect(section).to_contain_text('<a href="javascript:window.__pwned=3">click</a>')
    expect(section).to_contain_text("<U+202E>evil-rtl")  # bidi override made visible
    expect(section).to_contain_text("NUL:<U+0000> end <U+001B>[31m")
    expect(detail.locator('section[data-section="3"]')).to_contain_text("<b>bold</b>")
    # nothing from the case became markup: no images, links or extra scripts anywhere
    assert page.locator("img, a, iframe, object, embed").count() == 0
    assert page.locator("script:not([type])").count() == 1
    page.click('tr.case[data-case-id="Q001__fake-a__sql"]')  # and another, for good measure
    expect(page.locator("tr.detail:visible")).to_have_count(2)
    _clean(page)


def test_an_incomplete_case_shows_latest_context_missing_requests_and_unsent_outputs(page,
                                                                                    report):
    _open(page, report)
    page.click(f'tr.case[data-case-id="{INCOMPLETE_CASE}"]')
    detail = page.locator(f'tr.detail[data-detail-for="{INCOMPLETE_CASE}"]')
    sec1 = detail.locator('section[data-section="1"]')
    expect(sec1).to_contain_text("incomplete")
    expect(sec1).to_contain_text("(none: no answer was given)")
    sec4 = detail.locator('section[data-section="4"]')
    expect(sec4).to_contain_text("latest context actually sent")
    sent = [p for p in answer_requests(report.parent, INCOMPLETE_CASE) if p != MISSING_REQUEST]
    expect(sec4).to_contain_text(sent[-1])
    expect(sec4).to_contain_text(MISSING_REQUEST)
    expect(sec4).to_contain_text("not in the latest request: late-1")
    expect(detail.locator('section[data-section="5"]')).to_contain_text("Not judged")
    expect(detail.locator('section[data-section="6"]')).to_contain_text("missing")
    _clean(page)


def test_charts_and_a_comparison_embed_offline(page, http_run, offline_run, tmp_path):
    run_dir = fresh_copy(http_run, tmp_path)
    extras = report_extras(run_dir, charts=True, compare_with=offline_run)
    report = export_run(run_dir, extras=extras).report
    _open(page, report)
    expect(page.locator(".js-plotly-plot")).to_have_count(6)
    assert "Comparison" in page.locator("body").inner_text()
    _clean(page)
    # the default export stays lean: no plotly.js
    plain = export_run(fresh_copy(http_run, tmp_path / "plain")).report
    assert plain.stat().st_size * 2 < report.stat().st_size


def test_the_table_sorts_by_a_column_and_downloads_the_shown_rows_as_csv(page, report):
    """Issue 19 finding 10: the report table could not be sorted and had no CSV download."""
    rows = _open(page, report)
    head = page.locator("#cases thead th", has_text="correct").first
    head.click()
    expect(head).to_have_attribute("aria-sort", "ascending")
    first = rows.first.get_attribute("data-case-id")
    head.click()
    expect(head).to_have_attribute("aria-sort", "descending")
    top = page.evaluate("""() => Array.from(document.querySelectorAll('#cases tr.case'))
        .map(tr => tr.children[5].textContent)""")
    scored = [float(v) for v in top if v not in ("\u2014", "")]
    assert scored == sorted(scored, reverse=True) and scored[0] == 100
    assert rows.first.get_attribute("data-case-id") != first
    page.select_option("#f-model", "fake-a")
    with page.expect_download() as info:
        page.click("#f-csv")
    text = Path(info.value.path()).read_text(encoding="utf-8")
    lines = text.strip().splitlines()
    assert lines[0].startswith("case_id,question_id,question,model,strategy,status,correctness")
    assert len(lines) == 1 + 6 and all(",fake-a," in line for line in lines[1:])
    assert page.errors == []

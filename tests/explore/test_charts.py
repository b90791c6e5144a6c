"""Charts as data: each figure's traces checked against the run's own tables and known values."""

from __future__ import annotations

import re

import pytest

from parquet_agent import charts
from parquet_agent.explore.runs import RunStore


def _run(path):
    return RunStore(path.parent).open(path.name)


def _trace(fig, name):
    (trace,) = [t for t in fig.data if t.name == name]
    return trace


def test_scores_by_cell_with_bootstrap_intervals(scripted_run, demo_run):
    fig = charts.scores(scripted_run)
    corr = _trace(fig, "correctness")
    assert list(corr.x) == ["baseline · sql"]
    summary = _run(scripted_run).summary()
    assert corr.y[0] == pytest.approx(50.0)  # Q001 100, Q002 0, Q003 unscored
    assert corr.error_y.array[0] == pytest.approx(summary["correctness_high"][0] - 50.0)
    assert corr.error_y.arrayminus[0] == pytest.approx(50.0 - summary["correctness_low"][0])
    assert list(corr.customdata[0]) == [2, 3]  # scored of cases
    assert _trace(fig, "citation support").y[0] == pytest.approx(0.0)
    assert fig.layout.barmode == "group"

    both = charts.scores([demo_run, scripted_run])
    assert list(_trace(both, "correctness").x) == [
        "demo · baseline · sql", "demo · baseline · sql+stream", "scripted · baseline · sql"]


def test_cost_vs_correctness_uses_known_cost_per_case(http_run):
    fig = charts.cost_vs_correctness(http_run)
    (point,) = fig.data
    assert point.name == "fake · sql"
    # summary.json's cost_usd_known over the cell's 3 cases (health checks are run-level):
    # only Q001's 0.0007 is fully known
    assert point.x[0] == pytest.approx(0.0007 / 3)
    assert point.y[0] == pytest.approx(100 / 3)
    # Q002's 503 (a retry) and Q003's answer came without a cost: their cases are left out
    assert "2 cases of unknown cost" in fig.layout.title.text


def test_latency_boxes_hold_every_case_in_seconds(demo_run):
    fig = charts.latency(demo_run)
    cases = _run(demo_run).cases_df()
    assert [t.type for t in fig.data] == ["box", "box"]
    for trace in fig.data:
        expected = cases[cases["strategy"] == trace.name.split(" · ")[1]]
        assert sorted(trace.y) == pytest.approx(sorted(expected["wall_ms"] / 1000))
        assert set(trace.text) == set(expected["case_id"])


def test_tool_effort_splits_worker_runs_cache_hits_and_errors(scripted_run):
    fig = charts.tool_effort(scripted_run)
    assert _trace(fig, "worker runs").y[0] == pytest.approx(1 / 3)
    assert _trace(fig, "cache hits").y[0] == pytest.approx(2 / 3)
    assert _trace(fig, "errors").y[0] == 0 and _trace(fig, "budget rejected").y[0] == 0
    # model rounds: Q001 and Q002 took two turns, Q003 one (its second ran out of script)
    assert _trace(fig, "model rounds").y[0] == pytest.approx(5 / 3)
    assert fig.layout.barmode == "stack"


def test_cost_breakdown_by_purpose_never_counts_unknown_as_zero(http_run):
    fig = charts.cost_breakdown(http_run)
    answer, judge, health, retries = (_trace(fig, n) for n in ("answer", "judge", "health",
                                                               "retries"))
    assert list(answer.x) == ["fake · sql", "run level"]
    assert answer.y[0] == pytest.approx(0.0014) and answer.y[1] == 0
    assert health.y[1] == pytest.approx(0.0001) and health.y[0] == 0
    assert judge.y[0] == 0
    assert [list(c) for c in retries.customdata] == [[1, 1], [0, 0]]  # the 503, cost unknown
    assert [list(c) for c in answer.customdata][0] == [5, 1]  # Q003's answer: no cost given
    assert "2 attempts of unknown cost not included" in fig.layout.title.text
    attempts = {t.name: list(t.y) for t in fig.data if t.name.endswith("(attempts)")}
    assert attempts == {"answer (attempts)": [5, 0], "judge (attempts)": [3, 0],
                        "health (attempts)": [0, 2], "retries (attempts)": [1, 0]}


def test_cache_savings_estimates_from_the_same_tools_worker_runs(scripted_run):
    fig = charts.cache_savings(scripted_run)
    calls = _run(scripted_run).tool_calls_df()
    worker_ms = calls.loc[~calls["cache_hit"], "run_ms"].median()
    assert _trace(fig, "served from cache").y[0] == 2
    assert _trace(fig, "run by a worker").y[0] == 1
    assert _trace(fig, "seconds saved (est.)").y[0] == pytest.approx(2 * worker_ms / 1000)
    assert fig.layout.title.text.startswith("Result cache: 2 hits")


def test_main_charts_and_offline_html(demo_run):
    figs = charts.main_charts(demo_run)
    assert sorted(figs) == ["cache_savings", "cost_breakdown", "cost_vs_correctness", "latency",
                            "scores", "tool_effort"]
    html = charts.figure_html(figs["scores"])
    assert html.startswith("<div") and not re.search(r"<script[^>]*\bsrc=", html)
    assert len(html) > 1_000_000  # plotly.js inlined
    assert len(charts.figure_html(figs["scores"], include_plotlyjs=False)) < 100_000
    with pytest.raises(ValueError, match="network"):
        charts.figure_html(figs["scores"], include_plotlyjs="cdn")


def test_run_tables_are_reused_across_charts(demo_run):
    tables = charts.RunTables(demo_run)
    first = tables.cases_df()
    assert tables.cases_df() is first  # read once
    assert list(charts.scores(tables).data[0].y) == list(charts.scores(demo_run).data[0].y)
    assert list(charts.latency([tables]).data[0].y) == list(charts.latency(demo_run).data[0].y)
    assert tables.cases_df() is first and "cell" not in first.columns  # charts copy, not mutate


def test_embed_figures_escapes_every_script(demo_run):
    fig = charts.scores(demo_run)
    fig.update_layout(title="</script><img src=x onerror=alert(1)>")
    embed = charts.embed_figures({"scores": fig})
    assert embed.divs["scores"] == '<div id="pa-chart-scores" class="pa-chart"></div>'
    script = embed.scripts["scores"]
    assert "<" not in script and "\\u003c\\u002fscript\\u003e\\u003cimg" in script
    assert len(embed.plotly_js) > 1_000_000 and "</script" not in embed.plotly_js.lower()


def test_no_runs_is_an_error():
    with pytest.raises(ValueError, match="no runs given"):
        charts.scores([])


@pytest.mark.browser
def test_embedded_charts_draw_in_chromium_with_no_network(demo_run, browser, tmp_path):
    figs = charts.main_charts(demo_run)
    parts = [charts.figure_html(f, include_plotlyjs=(i == 0)) for i, f in enumerate(figs.values())]
    page_path = tmp_path / "charts.html"
    page_path.write_text("<!doctype html><meta charset=utf-8><body>" + "".join(parts))
    page = browser.new_page()
    errors, requests = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_path.as_uri())
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6")
    assert page.locator(".js-plotly-plot").count() == 6
    assert page.locator(".trace.bars path").count() > 0 and page.locator(".trace.boxes").count() > 0
    assert errors == [] and all(u.startswith("file://") for u in requests)
    page.close()


@pytest.mark.browser
def test_embedded_figures_draw_under_a_strict_script_csp(demo_run, browser, tmp_path):
    """What report.html needs: script-src by sha256 of the plotly.js text and each figure's
    script (no 'unsafe-inline' for scripts); plotly sets style attributes, so style-src needs
    'unsafe-inline' (without it titles and legends vanish)."""
    import base64
    import hashlib

    def sha(text):
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    embed = charts.embed_figures(charts.main_charts(demo_run))
    scripts = [embed.plotly_js, *embed.scripts.values()]
    csp = (f"default-src 'none'; script-src {' '.join(sha(s) for s in scripts)}; "
           "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'")
    page_path = tmp_path / "csp.html"
    page_path.write_text('<!doctype html><meta charset=utf-8><meta http-equiv='
                         f'"Content-Security-Policy" content="{csp}"><body>' + embed.html())
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(page_path.as_uri())
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6")
    assert page.locator(".pa-chart .gtitle").count() == 6  # every title drawn
    assert errors == []
    page.close()


def test_every_chart_builds_for_unfinished_failed_and_priced_runs(scripted_run, http_run):
    for run in (scripted_run, http_run, [scripted_run, http_run]):
        figs = charts.main_charts(run)
        assert all(len(f.data) > 0 for f in figs.values())
        assert "<div" in charts.figure_html(figs["latency"], include_plotlyjs=False)

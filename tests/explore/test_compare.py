"""Run comparison over real runs: pairing by case id, changes, deltas, McNemar, warnings, HTML."""

from __future__ import annotations

import copy
import json
import math

import pytest

from parquet_agent.errors import UsageError
from parquet_agent.explore import RunComparison, compare_cells, compare_runs
from parquet_agent.explore.compare import ALL_CELLS, manifest_warnings, mcnemar


def _changes(cmp: RunComparison) -> dict[str, str]:
    return dict(zip(cmp.cases["case_id"], cmp.cases["change"]))


def test_pairs_by_case_id_and_names_every_change(demo_run, scripted_run):
    cmp = compare_runs(demo_run, scripted_run)  # new: all correct; old: scripted
    assert _changes(cmp) == {
        "Q001__baseline__sql": "still correct",
        "Q002__baseline__sql": "resolved",
        "Q003__baseline__sql": "unscored",  # unfinished in the old run: no score invented
        "Q001__baseline__sql+stream": "new",
        "Q002__baseline__sql+stream": "new",
        "Q003__baseline__sql+stream": "new",
    }
    assert cmp.counts() == {"resolved": 1, "regressed": 0, "still correct": 1,
                            "still incorrect": 0, "unscored": 1, "new": 3, "dropped": 0}
    assert list(cmp.resolved()["case_id"]) == ["Q002__baseline__sql"]
    q3 = cmp.cases.set_index("case_id").loc["Q003__baseline__sql"]
    assert (q3["status_old"], q3["status_new"]) == ("incomplete", "complete")
    assert len(cmp.new_cases()) == 3 and cmp.regressed().empty

    back = compare_runs(scripted_run, demo_run)
    assert list(back.regressed()["case_id"]) == ["Q002__baseline__sql"]
    assert len(back.dropped_cases()) == 3


def test_paired_deltas_tests_and_cost_latency(demo_run, scripted_run):
    cmp = compare_runs(demo_run, scripted_run, seed=3)
    sql = cmp.by_cell[(cmp.by_cell["strategy"] == "sql")].iloc[0].to_dict()
    assert sql["paired_scored"] == 2
    assert sql["correctness_delta"] == pytest.approx(50.0)  # (100-100 + 100-0) / 2
    assert 0.0 <= sql["correctness_delta_low"] <= 50.0 <= sql["correctness_delta_high"] <= 100
    assert sql["citation_delta"] == pytest.approx(100.0)
    assert sql["test"] == "McNemar exact (binomial)" and sql["p_value"] == pytest.approx(1.0)
    cases = cmp.cases.set_index("case_id")
    walls = cases.loc[["Q001__baseline__sql", "Q002__baseline__sql", "Q003__baseline__sql"]]
    assert sql["wall_ms_delta"] == pytest.approx(
        (walls["wall_ms_new"] - walls["wall_ms_old"]).mean())
    # Q003 never finished in the old run: no wall time (as cases-index says), so 2 pairs
    assert sql["wall_ms_pairs"] == 2 and sql["cost_usd_delta"] == 0.0
    stream = cmp.by_cell[cmp.by_cell["strategy"] == "sql+stream"].iloc[0]
    assert stream["paired_scored"] == 0 and math.isnan(stream["correctness_delta"])
    assert cmp.overall["model"] == ALL_CELLS and cmp.overall["new"] == 3
    again = compare_runs(demo_run, scripted_run, seed=3)
    assert again.by_cell.equals(cmp.by_cell)  # seeded: repeatable


def test_a_run_against_itself_changes_nothing(demo_run):
    cmp = compare_runs(demo_run, demo_run)
    assert cmp.warnings == ()
    assert set(cmp.cases["change"]) == {"still correct"}
    assert cmp.overall["correctness_delta"] == 0 and cmp.overall["p_value"] == 1.0
    assert "are the same in both runs" in cmp.to_html()


def test_warnings_name_prompts_tool_specs_models_and_limits(demo_run, scripted_run):
    cmp = compare_runs(demo_run, scripted_run)
    text = "\n".join(cmp.warnings)
    assert "prompt 'agent:sql+stream' exists only in the new run" in text
    assert "tool specs 'tools:sql+stream' exists only in the new run" in text
    assert "model 'baseline' is configured differently" in text and "'scripted'" in text
    assert "case_workers 1 -> 4" in text


def test_manifest_warnings_for_changed_prompts_and_corpus(demo_run):
    old = json.loads((demo_run / "manifest.json").read_text())
    new = copy.deepcopy(old)
    new["prompt_hashes"]["judge"] = "sha256:" + "0" * 64
    new["prompt_hashes"]["tools:sql"] = "sha256:" + "1" * 64
    new["corpus_snapshot"]["snapshot_id"] = "snap:other"
    new["corpus_snapshot"]["files"][0]["content_hash"] = "xxh3_128:changed"
    new["corpus_snapshot"]["files"].append({"name": "2025-03.parquet", "content_hash": "x"})
    new["config"]["judge"]["model"] = "claude-x"
    new["config"]["judge"]["provider"] = "anthropic"
    warnings = manifest_warnings(new, old)
    text = "\n".join(warnings)
    assert "prompt 'judge' differs" in text and "tool specs 'tools:sql' differs" in text
    assert "corpus snapshot differs" in text
    assert "added: 2025-03.parquet" in text and "changed: 2025-01.parquet" in text
    assert "judge differs: rubric/rubric -> anthropic/claude-x" in text
    assert manifest_warnings(old, old) == []


def test_runs_over_other_samples_are_not_called_the_same(demo_run):
    """Issue 19 finding 10: two runs whose samples differ were "the same in both runs"."""
    old = json.loads((demo_run / "manifest.json").read_text())
    new = copy.deepcopy(old)
    new["question_ids"] = old["question_ids"][:1] + ["Q777"]
    new["config"]["sample"] = {"n": 2, "seed": 1}
    (warning,) = manifest_warnings(new, old)
    kept = len(old["question_ids"]) - 1
    assert warning == (f"the question samples differ ({old['config']['sample']!r} -> "
                       f"{{'n': 2, 'seed': 1}}): {kept} questions only in the old run, 1 only "
                       "in the new one; paired results cover the 1 shared questions")


def test_no_shared_case_is_a_warning(demo_run, http_run):
    cmp = compare_runs(http_run, demo_run)
    assert any("share no case id" in w for w in cmp.warnings)
    assert set(cmp.cases["change"]) == {"new", "dropped"}


@pytest.mark.parametrize("regressed, resolved, method, p", [
    (0, 0, "no discordant pairs", 1.0),
    (0, 10, "McNemar exact (binomial)", 2 / 1024),
    (3, 5, "McNemar exact (binomial)", 0.7265625),  # 2 * P(X <= 3), X ~ Bin(8, 1/2)
    (10, 30, "McNemar chi-square, continuity-corrected", 0.0026631),  # chi2 = 19^2 / 40
])
def test_mcnemar(regressed, resolved, method, p):
    test = mcnemar(regressed, resolved)
    assert test.method == method and test.p_value == pytest.approx(p, rel=1e-4)


def test_html_section_is_escaped_and_charts_are_data(demo_run, scripted_run):
    cmp = compare_runs(demo_run, scripted_run)
    html = cmp.to_html()
    assert html.startswith('<section class="pa-compare">') and "<script" not in html
    assert "Q002__baseline__sql" in html and "resolved (1)" in html
    assert "correctness ≥ 50" in html and "&#x27;agent:sql+stream&#x27;" in html
    with_charts = cmp.to_html(include_charts=True, include_plotlyjs=False)
    assert with_charts.count('class="plotly-graph-div"') == 2
    delta = cmp.delta_chart()
    assert [t.name for t in delta.data] == ["correctness delta", "citation delta"]
    assert list(delta.data[0].x) == ["baseline · sql", "baseline · sql+stream", ALL_CELLS]
    assert delta.data[0].y[0] == pytest.approx(50.0)
    transition = cmp.transition_chart()
    by_name = {t.name: list(t.y) for t in transition.data}
    assert by_name["resolved"] == [1, 0] and by_name["new"] == [0, 3]


def test_threshold_must_be_a_score(demo_run):
    with pytest.raises(ValueError, match="threshold"):
        compare_runs(demo_run, demo_run, threshold=150)
    strict = compare_runs(demo_run, demo_run, threshold=100)
    assert set(strict.cases["change"]) == {"still correct"}


def test_compare_cells_pairs_two_strategies_of_one_run_by_question(demo_run):
    cmp = compare_cells(demo_run, ("baseline", "sql+stream"), ("baseline", "sql"))
    assert list(cmp.cases["case_id"]) == ["Q001", "Q002", "Q003"]
    assert set(cmp.cases["change"]) == {"still correct"} and cmp.warnings == ()
    (cell,) = cmp.by_cell[cmp.by_cell["model"] != ALL_CELLS].to_dict("records")
    assert (cell["model"], cell["strategy"]) == ("baseline vs baseline", "sql+stream vs sql")
    cases = compare_runs(demo_run, demo_run).cases.set_index("case_id")["wall_ms_new"]
    expected = [cases[f"{q}__baseline__sql+stream"] - cases[f"{q}__baseline__sql"]
                for q in ("Q001", "Q002", "Q003")]
    assert list(cmp.cases["wall_ms_delta"]) == pytest.approx(expected)
    assert cmp.new_run_id == "demo: baseline · sql+stream"
    with pytest.raises(UsageError, match="no cell \\('baseline', 'sql\\+x'\\)"):
        compare_cells(demo_run, ("baseline", "sql+x"), ("baseline", "sql"))

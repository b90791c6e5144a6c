"""One fold, one set of figures: every figure a reader can see of a run (report.html's rows and
summary, cases-index, summary.json, the case records, `Run.summary()`, `cases_df()`,
`attempts_df()`, `tool_calls_df()`, `run_figures()`, the explorer's index and records, the
charts) is the same value under the same name. Checked on fresh runs (offline demo, a scripted
run with an unfinished case and cache hits, a model behind a fake OpenAI server with retries and
unknown costs) and on every checked-in fixture run (each journal schema version)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from parquet_agent.explore import charts
from parquet_agent.explore.source import CaseSource
from parquet_agent.report.case_record import INDEX_COLUMNS
from parquet_agent.report.exporter import export_run
from parquet_agent.experiment.run import ExperimentRun as Run
from parquet_agent.transcript import CASE_STATUSES, TOOL_COUNT_FIELDS

FIXTURES = Path(__file__).resolve().parents[1] / "store" / "fixtures"
CHECKED_IN = sorted(p.name for p in FIXTURES.iterdir() if (p / "manifest.json").is_file())


def _same(a, b) -> bool:
    """Equal, where None and NaN both mean "no value" (a DataFrame holds None as NaN)."""
    missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in (a, b)]
    if any(missing):
        return all(missing)
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-9)
    return a == b


def _value(v):
    return v.item() if hasattr(v, "item") else v  # numpy scalar -> Python


def _exported(run_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / run_dir.name
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(".lock"))
    export_run(target)
    return target


def assert_one_set_of_figures(run_dir: Path) -> None:
    index = json.loads((run_dir / "cases-index.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert index["columns"] == list(INDEX_COLUMNS)
    assert set(TOOL_COUNT_FIELDS) <= set(index["columns"])
    rows = {r["case_id"]: r for r in index["cases"]}
    run = Run(run_dir)

    # cases_df: the index's columns, the same values, the contract's statuses
    cases = run.cases_df()
    assert list(cases["case_id"]) == list(rows)
    assert set(cases["status"]) <= set(CASE_STATUSES)
    shared = [c for c in INDEX_COLUMNS if c in cases.columns and c != "question"]
    assert set(INDEX_COLUMNS) - set(shared) == {"question", "case_json"}  # text, links
    for frame_row in cases.to_dict("records"):
        row = rows[frame_row["case_id"]]
        for col in shared:
            assert _same(_value(frame_row[col]), row[col]), (frame_row["case_id"], col)
        # the question as case_started recorded it; journals older than that field have
        # none, and only the case record recovers it (from the raw judge request)
        assert frame_row["question"] is None or frame_row["question"] == row["question"]

    # the case records: the same status, answer, scores and tool counts as their index row
    attempts, tools = run.attempts_df(), run.tool_calls_df()
    for cid, row in rows.items():
        record = json.loads((run_dir / row["case_json"]).read_text())
        assert record["status"] == row["status"] and record["final_answer"] == row["answer"]
        assert record["tool_counts"] == {k: row[k] for k in TOOL_COUNT_FIELDS}
        judgment = record["judgment"] or {}
        assert _same(judgment.get("correctness"), row["correctness"])
        assert record["api_attempts"] == int((attempts["case_id"] == cid).sum())
        assert len(record["tool_calls"]) == int((tools["case_id"] == cid).sum())
        assert record["cost"]["usd"] == row["cost_usd"]
        frame_row = cases.set_index("case_id").loc[cid]
        assert _same(_value(frame_row["cost_usd_known"]), record["cost"]["known_usd"])
        assert _value(frame_row["api_attempts"]) == record["api_attempts"]
        assert _value(frame_row["sessions"]) == record["sessions"]

    # summary.json and Run.summary(): the same cells and figures under the same names
    frame = run.summary()
    assert len(frame) == len(summary["by_model_strategy"])
    for cell, frame_row in zip(summary["by_model_strategy"], frame.to_dict("records")):
        flat = {k: v for k, v in cell.items()
                if k not in ("correctness", "citation_support", "tool_counts", "bootstrap")}
        for score in ("correctness", "citation_support"):
            flat[score] = cell[score]["mean"]
            flat[f"{score}_low"], flat[f"{score}_high"] = cell[score]["low"], cell[score]["high"]
        flat.update(cell["tool_counts"])
        assert set(flat) == set(frame_row), set(flat) ^ set(frame_row)
        for key, value in flat.items():
            assert _same(_value(frame_row[key]), value), (cell["model"], cell["strategy"], key)
        in_cell = [r for r in rows.values()
                   if (str(r["model"]), str(r["strategy"])) == (cell["model"], cell["strategy"])]
        assert cell["cases"] == len(in_cell)
        for status in CASE_STATUSES:
            assert cell[status] == sum(r["status"] == status for r in in_cell)
        for k in TOOL_COUNT_FIELDS:
            assert cell["tool_counts"][k] == sum(r[k] or 0 for r in in_cell)
    assert summary["status_counts"] == {s: sum(r["status"] == s for r in rows.values())
                                        for s in CASE_STATUSES}
    assert summary["run"] == run.run_figures()

    # the explorer: built from the journals (no exports) it shows the exported rows and records
    bare = run_dir.parent / f"{run_dir.name}-bare"
    shutil.copytree(run_dir, bare, ignore=shutil.ignore_patterns(
        "cases", "cases-index.*", "summary.json", "report.html", "case-export-provenance.json"))
    built = CaseSource.open(bare)
    assert not built.from_exports and built.rows == index["cases"]
    for cid in rows:
        record = json.loads((run_dir / rows[cid]["case_json"]).read_text())
        assert built.record(cid).to_dict() | {"run_id": None} == record | {"run_id": None}

    # the charts draw the summary's figures
    scores = charts.scores(run)
    if len(frame):
        (bar,) = [t for t in scores.data if t.name == "correctness"]
        for y, value in zip(bar.y, frame["correctness"]):
            assert _same(_value(y), _value(value))
        points = charts.cost_vs_correctness(run).data
        for point, cell in zip(points, summary["by_model_strategy"]):
            if cell["cases_with_unknown_cost"] == cell["cases"] and not cell["cost_usd_known"]:
                assert math.isnan(point.x[0])  # nothing known: no point at 0
            else:
                assert _same(point.x[0], (cell["cost_usd_known"] or 0) / cell["cases"])
    run.close()


@pytest.mark.parametrize("name", ["demo_run", "scripted_run", "http_run"])
def test_a_fresh_run_shows_one_set_of_figures(name, request, tmp_path):
    assert_one_set_of_figures(_exported(request.getfixturevalue(name), tmp_path))


@pytest.mark.parametrize("fixture", CHECKED_IN)
def test_every_checked_in_run_shows_one_set_of_figures(fixture, tmp_path):
    assert_one_set_of_figures(_exported(FIXTURES / fixture, tmp_path))


def test_there_is_a_fixture_of_every_journal_schema_version():
    from parquet_agent.transcript.codec import READABLE_VERSIONS

    assert CHECKED_IN == [f"run-v{v}" for v in READABLE_VERSIONS]

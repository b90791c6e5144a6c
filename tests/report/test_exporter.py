"""The exporter over real run folders: contract files, exactness, determinism, read-only,
incomplete and failed cases, backfill of a run with unstarted cases, designed errors."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from parquet_agent.errors import ExportError
from parquet_agent.experiment.config import ExperimentConfig
from parquet_agent.experiment.run import create_run
from parquet_agent.explore.runs import RunStore
from parquet_agent.report.case_record import INDEX_COLUMNS, TOOL_COUNT_FIELDS
from parquet_agent.report.exporter import PROVENANCE, export_run
from parquet_agent.store import CaseFinished, CaseStarted, freeze, read_raw
from tests.harness_corpus import CANARY
from tests.report.conftest import (
    HOSTILE,
    INCOMPLETE_CASE,
    MISSING_REQUEST,
    answer_requests,
    fresh_copy,
)

OUTPUTS = {"cases", "cases-index.json", "cases-index.csv", "summary.json", "report.html",
           PROVENANCE}


def _hash_tree(run_dir: Path) -> dict[str, str]:
    return {p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()
            and p.relative_to(run_dir).parts[0] not in OUTPUTS}


def _outputs(run_dir: Path) -> dict[str, bytes]:
    files = [run_dir / n for n in OUTPUTS if (run_dir / n).is_file()]
    files += sorted((run_dir / "cases").glob("*.json"))
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in files}


def _case(run_dir: Path, case_id: str) -> dict:
    return json.loads((run_dir / "cases" / f"{case_id}.json").read_text(encoding="utf-8"))


def test_the_runner_exports_at_the_end_of_a_run(offline_run):
    for name in OUTPUTS:
        assert (offline_run / name).exists(), name
    assert len(list((offline_run / "cases").glob("*.json"))) == 6


def test_exports_hold_the_contract_files_and_exact_requests(offline_run, tmp_path):
    run_dir = fresh_copy(offline_run, tmp_path)
    result = export_run(run_dir)
    assert result.cases == 6
    index = json.loads((run_dir / "cases-index.json").read_text())
    assert index["schema_version"] == 1 and index["columns"] == list(INDEX_COLUMNS)
    rows = index["cases"]
    assert [r["case_id"] for r in rows] == [f"Q00{q}__baseline__{s}" for q in (1, 2, 3)
                                            for s in ("sql", "sql+stream")]
    with open(run_dir / "cases-index.csv", newline="", encoding="utf-8") as f:
        csv_rows = list(csv.DictReader(f))
    assert [r["case_id"] for r in csv_rows] == [r["case_id"] for r in rows]
    assert list(csv_rows[0]) == list(INDEX_COLUMNS)
    for row in rows:
        assert row["status"] == "complete" and row["correctness"] == 100.0
        assert row["answer"] and row["question"].startswith("What was")
        record = json.loads((run_dir / row["case_json"]).read_text(encoding="utf-8"))
        assert record["schema_version"] == 1 and record["case_id"] == row["case_id"]
        assert set(record["tool_counts"]) == set(TOOL_COUNT_FIELDS)
        assert record["tool_counts"]["processed"] == len(record["tool_calls"]) > 0
        # the exact final-answer request and the judge exchange, byte for byte
        for raw in (record["final_request"], record["final_response"],
                    record["judgment"]["request"], record["judgment"]["response"]):
            data = read_raw(run_dir, raw["path"])
            assert raw["text"].encode("utf-8") == data
            assert raw["sha256"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert CANARY in record["reference_answer"]  # as the judge received it
        assert CANARY not in record["final_request"]["text"]  # never in an agent request
        assert record["model"]["actual_provider"] == "baseline"
        assert all(a["request_in_store"] and a["response_in_store"] for a in record["attempts"])
        assert record["incomplete"] is None
        assert not Path(record["links"]["case"]).is_absolute()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status_counts"] == {"complete": 6, "incomplete": 0, "failed": 0}
    assert [(g["model"], g["strategy"], g["cases"]) for g in summary["by_model_strategy"]] == [
        ("baseline", "sql", 3), ("baseline", "sql+stream", 3)]


def test_two_exports_are_identical_but_for_the_provenance_time(offline_run, tmp_path):
    run_dir = fresh_copy(offline_run, tmp_path)
    export_run(run_dir)
    first = _outputs(run_dir)
    export_run(run_dir)
    second = _outputs(run_dir)
    assert first.keys() == second.keys() and len(first) == 6 + 5
    for name in first:
        if name != PROVENANCE:
            assert first[name] == second[name], name
    p1, p2 = json.loads(first[PROVENANCE]), json.loads(second[PROVENANCE])
    assert p1.pop("exported_at").endswith("Z") and p2.pop("exported_at").endswith("Z")
    assert p1 == p2
    # provenance: hashes of every file read, and of every export written
    assert set(p1["inputs"]) >= {"manifest.json", "raw/bodies.pack"}
    assert any(k.startswith("journal/") for k in p1["inputs"])
    for name, digest in p1["outputs"].items():
        assert digest == "sha256:" + hashlib.sha256(second[name]).hexdigest()
    assert p1["exporter"]["version"].startswith("b2:")


def test_the_exporter_changes_nothing_it_reads_and_never_opens_the_corpus(offline_run, corpus,
                                                                          tmp_path):
    run_dir = fresh_copy(offline_run, tmp_path)
    before = _hash_tree(run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert Path(manifest["config"]["corpus"]) == corpus
    moved = corpus.with_name("corpus-moved-away")
    corpus.rename(moved)  # no corpus at the recorded path: an export must not need it
    try:
        export_run(run_dir)
        export_run(run_dir)
    finally:
        moved.rename(corpus)
    assert _hash_tree(run_dir) == before
    assert not (run_dir / ".lock").exists()  # the writer lock was never taken


def test_incomplete_and_failed_cases_are_marked_never_invented(http_run, tmp_path):
    run_dir = fresh_copy(http_run, tmp_path)
    export_run(run_dir)
    index = json.loads((run_dir / "cases-index.json").read_text())
    rows = {r["case_id"]: r for r in index["cases"]}
    assert len(rows) == 12
    for cid, row in rows.items():
        expected = {"Q001": "complete", "Q002": "incomplete", "Q003": "failed"}[cid[:4]]
        assert row["status"] == expected, cid
        if expected != "complete":
            assert row["answer"] is None and row["correctness"] is None
            assert row["citation_support"] is None and not row["scored"]
    assert rows["Q001__fake-a__sql"]["correctness"] == 100.0
    assert rows["Q001__fake-b__sql"]["correctness"] == 0.0

    inc = _case(run_dir, INCOMPLETE_CASE)
    assert inc["final_answer"] is None and inc["judgment"] is None
    assert inc["final_request"] is None  # no successful answer turn after the tool calls
    latest = inc["latest_request"]
    sent = [p for p in answer_requests(run_dir, INCOMPLETE_CASE) if p != MISSING_REQUEST]
    assert latest["path"] == sent[-1]  # the last journaled request that reached the store
    assert latest["text"].encode() == read_raw(run_dir, latest["path"])
    assert inc["incomplete"]["latest_request_path"] == latest["path"]
    # the two real tool outputs were sent in the latest request; the late one never was
    assert [t["call_id"] for t in inc["tool_calls"]] == ["t1", "t2", "late-1"]
    assert inc["incomplete"]["unsent_tool_outputs"] == ["late-1"]
    missing = inc["incomplete"]["missing_raw_requests"]
    assert [m["expected_path"] for m in missing] == [MISSING_REQUEST]
    assert missing[0]["attempt"] == 1 and missing[0]["label"].endswith("/turn-03")
    assert inc["tool_counts_source"].startswith("recomputed")
    assert inc["tool_counts"]["processed"] == 3 and inc["tool_counts"]["requested_by_model"] == 2
    assert inc["cost"]["usd"] is None and inc["cost"]["unknown_attempts"] >= 1  # never 0
    assert "Apex" in inc["question"] and inc["question_source"] == "case_started"
    # the judge never saw this case, yet its reference is on record (from case_started)
    assert inc["reference_source"] == "case_started" and inc["reference_answer"]

    failed = _case(run_dir, "Q003__fake-b__sql+stream")
    assert failed["final_answer"] is None and failed["judgment"] is None
    assert failed["attempts"][0]["http_status"] == 400
    assert failed["incomplete"]["unsent_tool_outputs"] == []


def test_http_case_shows_provider_identity_and_the_hostile_answer_verbatim(http_run, tmp_path):
    run_dir = fresh_copy(http_run, tmp_path)
    export_run(run_dir)
    case = _case(run_dir, "Q001__fake-a__sql+stream")
    assert case["final_answer"] == HOSTILE.strip()
    assert case["model"]["requested_model"] == "gpt-fake-a"
    assert case["model"]["actual_provider"] != "unverified"
    assert case["tool_calls"][0]["sql"].endswith("<b>bold</b>")
    assert case["final_request"]["kind"] == "http_request"
    assert json.loads(json.loads(case["final_request"]["text"])["body"])["model"] == "gpt-fake-a"
    # turn 1 reported no cost: the total stays unknown, the known part is kept apart
    assert case["cost"]["usd"] is None and case["cost"]["unknown_attempts"] == 1
    assert case["cost"]["known_usd"] == pytest.approx(0.0005)
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "</script><script>window.__pwned" not in html
    assert html.count("<script>") == 1  # only the report's own script element


def _journal_only_run(tmp_path: Path, corpus: Path, *events) -> Path:
    """A run folder written through the store API alone: Q001 and Q002 planned, `events`
    appended to Q001's journal."""
    config = ExperimentConfig.from_dict({
        "name": "partial", "corpus": str(corpus), "questions": str(corpus / "questions.jsonl"),
        "sample": "all", "strategies": ["sql"], "runs_dir": str(tmp_path / "runs"),
        "models": [{"name": "m", "provider": "baseline"}], "judge": {"provider": "rubric"}})
    frozen = freeze(config, question_ids=["Q001", "Q002"], corpus_snapshot=None,
                    prompt_hashes={}, sandbox_mode="test")
    with create_run(RunStore(tmp_path / "runs"), config, frozen, run_id="partial") as run:
        journal = run.journal("Q001__m__sql")
        journal.append(CaseStarted("Q001__m__sql", "Q001", "m", "sql"))
        for event in events:
            journal.append(event)
        return run.dir


def test_backfill_lists_cases_that_never_started(tmp_path, corpus):
    run_dir = _journal_only_run(tmp_path, corpus)
    result = export_run(run_dir)
    assert result.cases == 2
    rows = json.loads((run_dir / "cases-index.json").read_text())["cases"]
    assert [(r["case_id"], r["status"]) for r in rows] == [("Q001__m__sql", "incomplete"),
                                                            ("Q002__m__sql", "incomplete")]
    assert rows[0]["status_reason"].startswith("unfinished")
    assert rows[1]["status_reason"].startswith("never started")
    assert all(r["answer"] is None and r["correctness"] is None for r in rows)


def test_a_folder_that_is_not_a_run_is_a_designed_error(tmp_path):
    with pytest.raises(ExportError, match="not a run folder"):
        export_run(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ExportError, match="cannot read the run"):
        export_run(tmp_path)


def test_csv_cells_never_start_a_spreadsheet_formula(tmp_path, corpus):
    formula = "=HYPERLINK(\"http://example.invalid\",\"x\")"
    run_dir = _journal_only_run(tmp_path, corpus, CaseFinished("complete", "answered", formula))
    export_run(run_dir)
    with open(run_dir / "cases-index.csv", newline="", encoding="utf-8") as f:
        row = next(csv.DictReader(f))
    assert row["answer"] == "'" + formula
    rows = json.loads((run_dir / "cases-index.json").read_text())["cases"]
    assert rows[0]["answer"] == formula  # the JSON index keeps the exact text


def test_the_exporter_loads_no_model_sdk_and_no_query_engine(offline_run, tmp_path):
    """Offline by construction: exporting never even imports a provider SDK, a provider
    adapter, the tools or DuckDB, so it cannot call a model or read the corpus. (httpx2 itself
    is imported with the store, through `models.spec`.)"""
    run_dir = fresh_copy(offline_run, tmp_path)
    code = ("import sys; from parquet_agent.report.exporter import export_run; "
            f"export_run({str(run_dir)!r}); "
            "print(sorted({m.split('.')[0] if not m.startswith('parquet_agent') else m "
            "for m in sys.modules}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    loaded = set(eval(proc.stdout))  # a printed list of module names
    assert "parquet_agent.report.exporter" in loaded
    assert not loaded & {"openai", "anthropic", "google", "duckdb", "pyarrow",
                         "parquet_agent.models.openai_chat",
                         "parquet_agent.models.anthropic_messages", "parquet_agent.models.gemini",
                         "parquet_agent.corpus.snapshot", "parquet_agent.corpus.index"}
    # the journal's records include the tools' result records (`tools.result`: dataclasses
    # only); no other tools module (facade, sandbox, pool, worker, ...) is loaded
    tools = {m for m in loaded if m.startswith("parquet_agent.tools.")}
    assert tools <= {"parquet_agent.tools.result"}, tools

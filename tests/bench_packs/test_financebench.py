"""The FinanceBench pack built from ../shared/realdata/financebench (CC-BY-NC: read in place,
never committed; every test here skips cleanly when it is absent)."""

from __future__ import annotations

import argparse
import json
import shutil
import tomllib
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from parquet_agent.cli.bench import register
from parquet_agent.bench.evidence import normalize
from parquet_agent.bench.financebench import build_pack
from parquet_agent.bench.paper import (
    comparison_chart,
    comparison_summary,
    compare_with_paper,
    load_paper_results,
)
from parquet_agent.corpus.index import CorpusIndex
from parquet_agent.corpus.layout import is_tool_ready
from parquet_agent.corpus.questions import load_questions
from parquet_agent.errors import UsageError
from parquet_agent.experiment.config import load_config
from tests.realdata import needs_realdata, realdata

FB = realdata("financebench")
pytestmark = needs_realdata("financebench/questions/financebench_open_source.jsonl")


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    out = tmp_path_factory.mktemp("fb") / "pack"
    return build_pack(FB, out), out


def _rows(folder: Path) -> dict[str, str]:
    rows = {}
    for path in folder.glob("*.parquet"):
        for r in pq.read_table(path, columns=["file_stem", "parsed_md"]).to_pylist():
            rows[r["file_stem"]] = r["parsed_md"]
    return rows


def test_pack_counts_and_exclusions(pack):
    result, out = pack
    assert (result.corpus_rows, result.questions, len(result.excluded)) == (138, 129, 21)
    assert all("has no text in the checkout" in r for r in result.excluded.values())
    assert len(result.mappings) == 165
    saved = json.loads((out / "pack.json").read_text())
    assert saved["schema_version"] == 1 and saved["questions"] == 129


def test_every_gold_quote_is_at_its_offsets_in_both_corpora(pack):
    result, out = pack
    source = {q["financebench_id"]: q for q in map(json.loads, (
        FB / "questions" / "financebench_open_source.jsonl").open())}
    for folder in (out / "corpus", out / "oracle"):
        rows = _rows(folder)
        qs = load_questions(folder / "questions.jsonl")
        assert len(qs) == 129
        for ref in qs.references:
            assert ref.gold_evidence, ref.question_id
            texts = {normalize(e["evidence_text"]) for e in source[ref.question_id]["evidence"]}
            for ev in ref.gold_evidence:
                assert rows[ev.file_stem][ev.start : ev.end] == ev.quote
                assert normalize(ev.quote) in texts  # all 165 items match exactly here
    assert {m.match for m in result.mappings} == {"exact"}
    assert all(m.verified for m in result.mappings)


def test_questions_keep_the_paper_ids_and_answers(pack):
    _, out = pack
    qs = load_questions(out / "corpus" / "questions.jsonl")
    ref = qs.reference("financebench_id_03029")
    assert ref.reference_answer == "$1577.00" and ref.kind == "metrics-generated"
    assert qs.question("financebench_id_03029").question.startswith(
        "What is the FY2018 capital expenditure amount")


def test_corpora_are_tool_ready_and_scopes_point_into_them(pack):
    _, out = pack
    for folder in (out / "corpus", out / "oracle"):
        ready, reasons = is_tool_ready(folder)
        assert ready, reasons
    index, oracle = CorpusIndex.open(out / "corpus"), CorpusIndex.open(out / "oracle")
    single = json.loads((out / "scopes" / "single_store.json").read_text())
    pages = json.loads((out / "scopes" / "oracle.json").read_text())
    assert single["schema_version"] == pages["schema_version"] == 1
    assert single["scopes"]["financebench_id_03029"] == ["0001558370-19-000470"]
    assert len(single["scopes"]) == len(pages["scopes"]) == 129
    for stems in single["scopes"].values():
        assert all(index.locate(s) is not None for s in stems)
    for stems in pages["scopes"].values():
        assert stems and all(oracle.locate(s) is not None for s in stems)


def test_every_paper_mode_config_loads(pack):
    _, out = pack
    shared = load_config(out / "configs" / "shared_store.toml")
    assert shared.strategies == ("sql", "sql+stream") and shared.scope is None
    assert Path(shared.corpus) == (out / "corpus").resolve()
    closed = load_config(out / "configs" / "closed_book.toml")
    assert closed.strategies == ("none",)
    for mode in ("single_store", "oracle"):
        config = load_config(out / "configs" / f"{mode}.toml")
        assert config.scope is not None and config.scope.is_file()
        assert set(tomllib.loads((out / "configs" / f"{mode}.toml").read_text())) <= {
            "name", "corpus", "questions", "sample", "strategies", "runs_dir", "models", "judge",
            "limits", "scope"}


def test_comparison_pairs_our_cases_with_the_papers_labels():
    paper = load_paper_results(FB)
    assert len(paper) == 16 * 150
    assert set(paper["paper_label"]) == {"correct", "incorrect", "refusal"}
    ids = ["financebench_id_03029", "financebench_id_04672", "financebench_id_01865"]
    cases = pd.DataFrame({
        "question_id": ids + ["not_a_paper_id"], "model": "m", "strategy": "sql",
        "status": ["complete", "complete", "failed", "complete"],
        "answer": ["$1577", "8.7", None, "x"], "correctness": [100, 10, float("nan"), 100],
        "citation_support": [80, 0, float("nan"), 0],
    })
    df = compare_with_paper(cases, FB, paper_configs=["gpt-4_sharedStore"])
    assert list(df["question_id"]) == sorted(ids)  # inner join on the paper's ids
    by_id = df.set_index("question_id")
    assert by_id.loc["financebench_id_03029", "paper_label"] == "refusal"
    assert by_id.loc["financebench_id_03029", "our_label"] == "correct"
    assert by_id.loc["financebench_id_01865", "our_label"] == "unscored"
    assert pd.isna(by_id.loc["financebench_id_01865", "agree"])
    summary = comparison_summary(df).iloc[0]
    assert summary["questions"] == 3 and summary["our_unscored"] == pytest.approx(1 / 3)
    assert summary["paper_refusal"] + summary["paper_correct"] + summary["paper_incorrect"] == (
        pytest.approx(1.0))
    fig = comparison_chart(df)
    assert {t.name for t in fig.data} >= {"correct", "incorrect"}
    assert "ours: m / sql" in fig.data[0].x and "paper: gpt-4_sharedStore" in fig.data[0].x
    with pytest.raises(UsageError, match="unknown paper configuration"):
        compare_with_paper(cases, FB, paper_configs=["gpt-5_magic"])


def test_our_labels_come_from_the_verdict_and_fall_back_to_the_score_only_without_one():
    """An abstention is a refusal (as in the paper), not an error; a correct verdict with a
    low score is correct; only a judgment without a verdict (judge-v1) is labelled by its
    score, and the rows say so."""
    ids = ["financebench_id_03029", "financebench_id_04672", "financebench_id_01865",
           "financebench_id_00499"]
    cases = pd.DataFrame({
        "question_id": ids, "model": "m", "strategy": "sql",
        "status": ["complete", "complete", "complete", "failed"],
        "answer": ["The corpus does not contain it.", "8.7", "x", None],
        "correctness": [0, 40, 80, float("nan")], "citation_support": [0, 50, 50, float("nan")],
        "verdict": ["abstained", "correct", None, None],
    })
    df = compare_with_paper(cases, FB, paper_configs=["gpt-4_sharedStore"]).set_index(
        "question_id")
    assert df.loc[ids[0], "our_label"] == "refusal"  # was "incorrect" (0 < 50)
    assert df.loc[ids[1], "our_label"] == "correct"  # was "incorrect" (40 < 50)
    assert (df.loc[ids[2], "our_label"], df.loc[ids[2], "label_from"]) == (
        "correct", "correctness >= 50")
    assert df.loc[ids[3], "our_label"] == "unscored" and df.loc[ids[3], "label_from"] is None
    assert list(df.loc[ids[:2], "label_from"]) == ["verdict", "verdict"]
    summary = comparison_summary(df.reset_index()).iloc[0]
    assert summary["our_refusal"] == pytest.approx(1 / 4)
    assert summary["labelled_by_score"] == 1
    fig = comparison_chart(df.reset_index())
    assert "refusal" in {t.name for t in fig.data}


def test_cli_builds_a_small_pack_and_rejects_a_wrong_source(tmp_path, capsys):
    mini = tmp_path / "mini"
    (mini / "docs_md").mkdir(parents=True)
    (mini / "questions").mkdir()
    shutil.copy(FB / "corpus_manifest.jsonl", mini)
    for doc in ("3M_2018_10K", "3M_2017_10K"):
        shutil.copy(FB / "docs_md" / f"{doc}.md", mini / "docs_md")
    keep = [line for line in (FB / "questions" / "financebench_open_source.jsonl").open()
            if json.loads(line)["doc_name"] in ("3M_2018_10K", "AES_2022_10K")]
    (mini / "questions" / "financebench_open_source.jsonl").write_text("".join(keep))
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["bench", "financebench", "--source", str(mini),
                              "--out", str(tmp_path / "pack")])
    assert args.handler(args) == 0
    text = capsys.readouterr().out
    assert "corpus: 2 filings" in text and "excluded" in text
    bad = parser.parse_args(["bench", "financebench", "--source", str(tmp_path),
                             "--out", str(tmp_path / "p2")])
    with pytest.raises(UsageError, match="not a FinanceBench checkout"):
        bad.handler(bad)


def test_filings_are_found_by_the_registrants_legal_name(pack):
    from parquet_agent.tools import Tools

    _, out = pack
    with Tools.open(out / "corpus", "sql+stream") as tools:
        costco = tools.call("search_headers", query="Costco Wholesale").output
        square = tools.call("search_headers", query="Square").output
    assert costco["total"] >= 1
    assert {r["company"] for r in costco["results"]} == {"Costco Wholesale Corporation"}
    assert square["total"] >= 1  # Square, Inc.'s 10-Ks, not FinanceBench's later label "Block"

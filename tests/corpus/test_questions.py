"""The questions file: reading, writing, and the wall between question and reference."""

from __future__ import annotations

import dataclasses
import json

import pytest

from parquet_agent.corpus.questions import (
    Evidence,
    Question,
    Reference,
    load_questions,
    write_questions,
)
from parquet_agent.errors import UsageError

GOOD = {
    "question_id": "Q001",
    "question": "What was revenue?",
    "reference_answer": "$5 thousand.",
    "gold_evidence": [{"file_stem": "0000950170-25-000001", "quote": "| Revenue | 5 |", "start": 10, "end": 25}],
    "kind": "table_fact",
}


def _write(path, *records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def test_agent_side_has_no_field_that_could_carry_the_reference():
    assert [f.name for f in dataclasses.fields(Question)] == ["question_id", "question"]
    with pytest.raises((AttributeError, TypeError)):
        Question("Q1", "x").reference_answer = "leak"  # frozen, slotted: nothing can be attached


def test_load_round_trip_and_lookup(tmp_path):
    second = dict(GOOD, question_id="Q002", gold_evidence=[], kind=None)
    del second["kind"]
    qs = load_questions(_write(tmp_path / "q.jsonl", GOOD, "", second))
    assert qs.ids == ("Q001", "Q002")
    assert qs.question("Q002") == Question("Q002", GOOD["question"])
    ref = qs.reference("Q001")
    assert ref.gold_evidence == (Evidence("0000950170-25-000001", "| Revenue | 5 |", 10, 25),)
    assert ref.kind == "table_fact" and qs.reference("Q002").kind is None
    out = write_questions(tmp_path / "again.jsonl", zip(qs.questions, qs.references))
    assert load_questions(out) == dataclasses.replace(qs, path=out)
    assert out.read_text().splitlines()[0] == json.dumps(GOOD, ensure_ascii=False)


def test_unknown_id_names_the_file(tmp_path):
    qs = load_questions(_write(tmp_path / "q.jsonl", GOOD))
    with pytest.raises(UsageError, match=r"no question 'Q404'.*q\.jsonl"):
        qs.reference("Q404")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"q\.jsonl:2: not valid JSON"),
        ("[1, 2]", r":2: each line must be a JSON object"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "reference_answer"}), r":2: missing field\(s\) reference_answer"),
        (json.dumps(dict(GOOD, question="  ")), r":2: question must be a non-empty string"),
        (json.dumps(dict(GOOD, gold_evidence={"a": 1})), r":2: gold_evidence must be a list"),
        (json.dumps(dict(GOOD, gold_evidence=[{"file_stem": "x", "quote": "ab"}])), r":2: gold_evidence\[0\] lacks start, end"),
        (json.dumps(dict(GOOD, gold_evidence=[{"file_stem": "x", "quote": "ab", "start": 0, "end": 5}])),
         r":2: gold_evidence\[0\]: end - start = 5 but the quote has 2 characters"),
        (json.dumps(dict(GOOD, gold_evidence=[{"file_stem": "x", "quote": "", "start": -1, "end": -1}])),
         r"start must be a non-negative integer"),
        (json.dumps(dict(GOOD, kind=3)), r":2: kind must be a string"),
        (json.dumps(GOOD), r":2: question_id 'Q001' repeats line 1"),
    ],
)
def test_malformed_lines_say_where_and_what(tmp_path, line, message):
    path = _write(tmp_path / "q.jsonl", GOOD, line)
    with pytest.raises(UsageError, match=message):
        load_questions(path)


def test_missing_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such questions file"):
        load_questions(tmp_path / "nope.jsonl")


def test_write_refuses_mismatched_pairs(tmp_path):
    with pytest.raises(ValueError, match="Q1 paired with reference Q2"):
        write_questions(tmp_path / "q.jsonl", [(Question("Q1", "a"), Reference("Q2", "b", ()))])

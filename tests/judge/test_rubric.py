"""Abstentions told apart from wrong answers (issue 16 part 4), by the offline rubric judge:
deterministically, through the same judge request and judgment object as an LLM judge."""

from __future__ import annotations

import pytest

from parquet_agent.corpus.questions import Reference
from parquet_agent.judge import Judge, JudgeInput, RubricJudgeModel
from parquet_agent.models import DirectorySink


def _verdict(answer: str, reference: str, *, answerable: bool, tmp_path):
    inp = JudgeInput("What was Northwind's revenue in 2024?", answer, reference, (), (),
                     answerable=answerable)
    return Judge(RubricJudgeModel()).judge(inp, sink=DirectorySink(tmp_path), label="Q1/judge")


@pytest.mark.parametrize("answer,reference,answerable,expected", [
    ("Revenue was $813 million.", "$813 million", True, "correct"),
    ("Revenue was $999 million.", "$813 million", True, "incorrect"),
    ("I could not find Northwind's revenue in the corpus.", "$813 million", True, "abstained"),
    ("The corpus does not contain a filing for that company.",
     "The corpus holds no filing of that company.", False, "correct"),
    ("Revenue was $813 million.", "The corpus holds no filing of that company.", False,
     "incorrect"),
    # the reference side alone says unanswerable (an older question file without `kind`)
    ("No such filing could be found.", "Not found: there is no such filing.", True, "correct"),
])
def test_the_rubric_tells_abstentions_apart(answer, reference, answerable, expected, tmp_path):
    verdict = _verdict(answer, reference, answerable=answerable, tmp_path=tmp_path)
    assert verdict.scored and verdict.verdict == expected
    assert verdict.checks["answerable"] is answerable
    if expected == "abstained":
        assert verdict.correctness == 0.0 and "answerable" in verdict.rationale


def test_the_reference_says_whether_the_corpus_can_answer():
    assert Reference("Q1", "$1", (), kind="table_fact").answerable
    assert Reference("Q2", "$1", ()).answerable
    assert not Reference("Q3", "not in the corpus", (), kind="unanswerable").answerable


def test_the_judge_request_carries_answerable(tmp_path):
    inp = JudgeInput("q", "a", "r", (), (), answerable=False)
    request, _ = Judge(RubricJudgeModel()).request(inp, "Q1/judge")
    assert '"answerable": false' in request.messages[1].text

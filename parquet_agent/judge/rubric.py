"""The offline rubric judge: a judge model built from the deterministic checks alone.

It reads the judge request's JSON block, so it grades exactly what a real judge would see, and
answers through the model protocol (request and reply written to the sink like any offline
model), with the same judgment object an LLM judge returns: a verdict (correct / incorrect /
abstained, told apart deterministically: an answer that says it found nothing is an abstention
on an answerable question and correct on an unanswerable one), correctness and citation support.
"""

from __future__ import annotations

import json
import re
from typing import Any

from parquet_agent.judge.checks import NUMERIC_TOLERANCE, deterministic_checks
from parquet_agent.judge.judgment import JudgeInput, input_from_request
from parquet_agent.models.protocol import ModelRequest, ModelResult, RawSink
from parquet_agent.models.scripted import offline_complete, to_reply


class RubricJudgeModel:
    """An offline judge model: scores from the deterministic checks, through the protocol.

    It reads the judge request's JSON block, so it grades exactly what a real judge would see,
    and writes its request and reply into the sink like any offline model.
    """

    provider = "baseline"

    def __init__(self, name: str = "rubric", model: str = "rubric-judge-1"):
        self.name = name
        self.model = model

    def complete(self, request: ModelRequest, sink: RawSink) -> ModelResult:
        return offline_complete(
            request, sink, lambda: to_reply(self.grade(request), self.model, self.provider),
            model=self.model, provider=self.provider,
            source=f"{self.provider} model {self.name!r} (no network)")

    def grade(self, request: ModelRequest) -> str:
        if request.purpose == "health":
            return "OK"
        inp = input_from_request(request)
        checks = deterministic_checks(inp)
        verdict, correctness, why = rubric_grade(inp, checks)
        if checks["citation_count"]:
            support = 100.0 * checks["citations_covered"] / checks["citation_count"]
            cite_why = (f"{checks['citations_covered']} of {checks['citation_count']} cited "
                        "spans are text the agent actually received")
        else:
            support, cite_why = 0.0, "the answer cites nothing"
        return json.dumps({"rationale": f"Rubric (no model): {why}; {cite_why}.",
                           "verdict": verdict, "correctness": round(correctness),
                           "citation_support": round(support)})


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9.\-]*", text.lower()) if len(w) > 2}


def rubric_grade(inp: JudgeInput, checks: dict[str, Any]) -> tuple[str, float, str]:
    """(verdict, correctness 0-100, why) from the deterministic checks alone."""
    answer = inp.candidate_answer or ""
    if not answer or answer == "(no answer)":
        return "incorrect", 0.0, "no answer"
    if not inp.answerable or checks["reference_says_not_found"]:
        ok = checks["answer_says_not_found"]
        return (("correct", 100.0) if ok else ("incorrect", 0.0)) + (
            "the corpus cannot answer this and the answer " + ("says so" if ok else
                                                               "claims an answer"),)
    if checks["numeric_match"] is True:  # the figure is there, whatever else it says
        return "correct", 100.0, (f"a number in the answer matches the reference within "
                                  f"{NUMERIC_TOLERANCE:.0%}")
    if checks["answer_says_not_found"]:
        return "abstained", 0.0, ("the answer says nothing was found but the question is "
                                  "answerable from the corpus")
    if checks["numeric_match"] is not None:
        ok = checks["numeric_match"]
        return (("correct", 100.0) if ok else ("incorrect", 0.0)) + (
            f"a number in the answer matches the reference within {NUMERIC_TOLERANCE:.0%}"
            if ok else "no number in the answer matches the reference",)
    ref = _content_words(inp.reference_answer)
    overlap = len(ref & _content_words(answer)) / max(len(ref), 1)
    return ("correct" if overlap >= 0.5 else "incorrect"), 100.0 * overlap, (
        f"{overlap:.0%} of the reference's content words are in the answer")

"""A judge request known not to fit the judge's context is never sent (issue 25 item 4).

Before: `fit_evidence` cut the tool outputs to their heads, recorded `"fits": false` when that
was not enough (long arguments, many calls, a long reference), and the request went out anyway:
a 400 from the provider, every time."""

from __future__ import annotations

import json

from parquet_agent.judge import CHARS_PER_TOKEN, JUDGE_OUTPUT_TOKENS, JUDGE_SYSTEM, Judge, \
    JudgeInput
from parquet_agent.models import DirectorySink
from parquet_agent.models.fakes import FakeReply, openai_server
from tests.models.conftest import make_model

GOOD = {"rationale": "ok", "verdict": "correct", "correctness": 100, "citation_support": 0}


def _many_calls(n: int = 40) -> JudgeInput:
    evidence = tuple({"call_id": f"c{i}", "name": "sql",
                      "arguments": {"query": "SELECT " + ", ".join(["revenue"] * 40)},
                      "output": {"rows": [["x" * 2000]]}} for i in range(n))
    return JudgeInput("What was revenue?", "$813 million", "$813 million", (), evidence)


def test_when_cut_heads_do_not_fit_the_outputs_are_left_out_and_it_is_sent(tmp_path):
    with openai_server([FakeReply(text=json.dumps(GOOD))]) as server:
        judge = Judge(make_model("openai", server), context_tokens=4096)
        verdict = judge.judge(_many_calls(), sink=DirectorySink(tmp_path), label="Q1/judge")
        sent = server.model_calls()
    cut = verdict.provenance["evidence_cut"]
    assert cut["fits"] and cut["tool_outputs_left_out"] and len(cut["tool_outputs_cut"]) == 40
    assert verdict.scored and len(sent) == 1
    room = (4096 - JUDGE_OUTPUT_TOKENS) * CHARS_PER_TOKEN - len(JUDGE_SYSTEM)
    user = [m["content"] for m in sent[0].json["messages"] if m["role"] == "user"][0]
    assert len(user) <= room and "output_left_out_to_fit_the_judge_context" in user


def test_a_request_that_cannot_fit_is_never_sent_and_says_why(tmp_path):
    huge = JudgeInput("What was revenue?", "$813 million", "$813 million. " * 1000, (), ())
    with openai_server([FakeReply(text=json.dumps(GOOD))]) as server:
        judge = Judge(make_model("openai", server), context_tokens=2048)
        verdict = judge.judge(huge, sink=DirectorySink(tmp_path), label="Q1/judge")
        calls = len(server.model_calls())
    assert calls == 0 and verdict.attempts == ()
    assert not verdict.scored and verdict.correctness is None
    assert verdict.unscored_reason.startswith("does not fit:")
    assert "no request was sent" in verdict.unscored_reason
    assert verdict.provenance["evidence_cut"]["fits"] is False
    assert verdict.checks["numeric_match"] is True  # the deterministic checks still ran

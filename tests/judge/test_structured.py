"""A judge that answers in structure (issue 16 part 5): the judgment is asked for as a JSON
schema response format (OpenAI, Gemini) or a forced tool call (Anthropic), through the official
SDKs against the local fake servers, and parsed from it; a malformed judgment gets one repair
request quoting the parse error (never a byte-identical retry), then is recorded unscored."""

from __future__ import annotations

import json

import pytest

from parquet_agent.judge import JUDGMENT_SCHEMA, JUDGMENT_TOOL, Judge, JudgeInput
from parquet_agent.models import DirectorySink
from parquet_agent.models.fakes import FakeReply, FakeToolCall
from parquet_agent.models.scripted import ScriptedModel
from tests.models.conftest import make_model

INPUT = JudgeInput("What was revenue in 2024?", "Revenue was $813 million.", "$813 million",
                   (), ())
GOOD = {"rationale": "The figure matches.", "verdict": "correct", "correctness": 100,
        "citation_support": 0}
BAD = {**GOOD, "verdict": "maybe"}


def _reply(provider: str, judgment: dict) -> FakeReply:
    if provider == "anthropic":  # the forced tool call carries the object
        return FakeReply(tool_calls=(FakeToolCall(JUDGMENT_TOOL, judgment, id="toolu_j1"),))
    return FakeReply(text=json.dumps(judgment))


def _asked_in_structure(provider: str, body: dict) -> bool:
    if provider == "openai":
        fmt = body["response_format"]
        return (fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
                and fmt["json_schema"]["schema"] == JUDGMENT_SCHEMA.schema)
    if provider == "anthropic":
        tool = next(t for t in body["tools"] if t["name"] == JUDGMENT_TOOL)
        return (body["tool_choice"] == {"type": "tool", "name": JUDGMENT_TOOL}
                and tool["input_schema"] == JUDGMENT_SCHEMA.schema)
    config = body["generationConfig"]
    return (config["responseMimeType"] == "application/json"
            and config["responseJsonSchema"] == JUDGMENT_SCHEMA.schema)


def test_the_judgment_is_asked_for_in_structure_and_parsed_from_it(provider, server_for,
                                                                   tmp_path):
    with server_for([_reply(provider, GOOD)]) as server:
        judge = Judge(make_model(provider, server))
        verdict = judge.judge(INPUT, sink=DirectorySink(tmp_path), label="Q1__m__sql/judge")
    body = server.model_calls()[0].json
    assert _asked_in_structure(provider, body)
    assert verdict.scored and verdict.verdict == "correct" and verdict.correctness == 100.0
    assert verdict.provenance["response_schema"] == JUDGMENT_TOOL
    assert verdict.provenance["repair_requests"] == 0
    assert any("structured output" in n for n in verdict.attempts[0].notes)


def test_a_malformed_judgment_gets_one_repair_request_quoting_the_error(provider, server_for,
                                                                       tmp_path):
    with server_for([_reply(provider, BAD), _reply(provider, GOOD)]) as server:
        verdict = Judge(make_model(provider, server)).judge(
            INPUT, sink=DirectorySink(tmp_path), label="Q1__m__sql/judge")
    first, second = (r.body for r in server.model_calls())
    assert first != second  # a repair, not the same bytes again
    assert b"verdict" in second and b"maybe" in second  # the reply and the quoted error
    assert b"could not be read" in second
    assert _asked_in_structure(provider, json.loads(second))
    assert verdict.scored and verdict.verdict == "correct"
    assert verdict.provenance["repair_requests"] == 1 and len(verdict.attempts) == 2
    if provider == "anthropic":  # the forced call got its tool_result before the repair text
        last = json.loads(second)["messages"][-1]["content"]
        assert [b["type"] for b in last] == ["tool_result", "text"]
        assert last[0]["tool_use_id"] == "toolu_j1"


def test_still_malformed_after_the_repair_is_unscored_with_the_reason(provider, server_for,
                                                                     tmp_path):
    with server_for([_reply(provider, BAD), _reply(provider, BAD)]) as server:
        verdict = Judge(make_model(provider, server)).judge(
            INPUT, sink=DirectorySink(tmp_path), label="Q1__m__sql/judge")
    assert len(server.model_calls()) == 2 and server.exhausted == 0
    assert not verdict.scored and verdict.correctness is None and verdict.verdict is None
    assert "after 1 repair request" in verdict.unscored_reason
    assert "'verdict' must be one of" in verdict.unscored_reason


def test_structured_output_false_sends_no_schema_and_parses_the_text(tmp_path):
    from parquet_agent.models.fakes import openai_server

    with openai_server([FakeReply(text="Here: " + json.dumps(GOOD))]) as server:
        model = make_model("openai", server, structured_output=False)
        verdict = Judge(model).judge(INPUT, sink=DirectorySink(tmp_path), label="Q1/judge")
    assert "response_format" not in server.model_calls()[0].json
    assert verdict.scored and verdict.verdict == "correct"
    assert any("structured_output = false" in n for n in verdict.attempts[0].notes)


def test_a_byte_identical_retry_is_never_sent_for_a_malformed_judgment(tmp_path):
    # A local model at temperature 0 returns the same bytes for the same request (16 of 16
    # judgments unscored): the second request must differ and carry the parse error.
    model = ScriptedModel(["not json at all", json.dumps(GOOD)], name="local-judge")
    verdict = Judge(model).judge(INPUT, sink=DirectorySink(tmp_path), label="Q1/judge")
    first, second = model.requests
    assert second.messages[:2] == first.messages and len(second.messages) == 4
    assert second.messages[2].text == "not json at all"
    assert "no JSON object in the judgment" in second.messages[3].text
    assert verdict.scored and verdict.verdict == "correct"


def test_malformed_judgments_are_unscored_never_zero(tmp_path):
    model = ScriptedModel(["not json", json.dumps({**GOOD, "correctness": 140})])
    verdict = Judge(model, max_attempts=2).judge(INPUT, sink=DirectorySink(tmp_path),
                                                 label="Q1__m__sql/judge")
    assert not verdict.scored and verdict.correctness is None
    assert "0 to 100" in verdict.unscored_reason and len(verdict.attempts) == 2
    ok = Judge(ScriptedModel(['Sure: ' + json.dumps({**GOOD, "correctness": 80,
                                                    "citation_support": 50,
                                                    "rationale": "close"})])).judge(
        INPUT, sink=DirectorySink(tmp_path), label="Q1__m__sql/judge")
    assert (ok.correctness, ok.citation_support, ok.rationale) == (80.0, 50.0, "close")


@pytest.mark.parametrize("field,value", [("verdict", None), ("rationale", " "),
                                         ("citation_support", True)])
def test_each_field_of_the_judgment_is_checked(field, value, tmp_path):
    bad = json.dumps({**GOOD, field: value})
    verdict = Judge(ScriptedModel([bad, bad])).judge(INPUT, sink=DirectorySink(tmp_path),
                                                     label="Q1/judge")
    assert not verdict.scored and field.split("_")[0] in verdict.unscored_reason

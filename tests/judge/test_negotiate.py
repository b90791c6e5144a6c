"""The judge negotiates how its server takes a structured judgment (issue 25 item 1).

llama-cpp-python's server answers `response_format: json_schema` with HTTP 500 ("Input should
be 'text' or 'json_object'"); before, the judge asked only that way and a 16-case grid ended
16/16 unscored with exit 0. Now each way the adapter can send is tried on a probe judgment,
strictest first, through the official SDK against fakes speaking the servers' bytes."""

from __future__ import annotations

import json

from parquet_agent.judge import JUDGMENT_TOOL, Judge
from parquet_agent.judge.negotiate import PROBE_INPUT, negotiate
from parquet_agent.models import DirectorySink
from parquet_agent.models.fakes import FakeReply, FakeToolCall, http_error, openai_server
from parquet_agent.models.fakes.llama_cpp import LlamaCpp, llama_cpp_server
from parquet_agent.models.scripted import ScriptedModel
from tests.models.conftest import make_model

GOOD = {"rationale": "The figure matches.", "verdict": "correct", "correctness": 100,
        "citation_support": 80}


def _llama_model(server, **fields):
    # what docs/models.md recommends for llama.cpp, with a tiny retry budget
    return make_model("openai", server, model="gpt-4o-mini", price="free",
                      tool_call_content="", max_tokens_field="max_tokens", **fields)


def test_llama_cpp_rejects_json_schema_and_the_judge_asks_for_json_object(tmp_path):
    with llama_cpp_server(LlamaCpp(judgment=GOOD)) as server:
        judge = Judge(_llama_model(server))
        found = negotiate(judge, DirectorySink(tmp_path), "_health/judge-format")
        verdict = Judge(judge.model, output_mode=found.mode).judge(
            PROBE_INPUT, sink=DirectorySink(tmp_path), label="Q1__m__sql/judge")
        bodies = [r.json for r in server.model_calls()]
    assert found.mode == "json_object" and found.can_judge
    refused = found.tried[0]
    assert refused["mode"] == "json_schema" and not refused["ok"]
    assert "HTTP 500" in refused["why"] and "Input should be 'text' or 'json_object'" in refused["why"]
    # the 500 repeats byte for byte: deterministic, two attempts, not four
    assert [b["response_format"]["type"] for b in bodies[:3]] == ["json_schema"] * 2 + ["json_object"]
    assert bodies[-1]["response_format"] == {"type": "json_object",
                                             "schema": bodies[-1]["response_format"]["schema"]}
    assert verdict.scored and verdict.verdict == "correct"
    assert verdict.provenance["structured_output"] == "json_object"
    assert "json_schema: rejected, HTTP 500" in found.summary()


def test_a_server_that_takes_only_a_forced_tool_call_gets_one(tmp_path):
    def server_script(req):
        body = req.json or {}
        if "response_format" in body:
            return http_error(400)
        if body.get("tool_choice", {}).get("function", {}).get("name") == JUDGMENT_TOOL:
            return FakeReply(tool_calls=(FakeToolCall(JUDGMENT_TOOL, GOOD),))
        return FakeReply(text="ok")

    with openai_server(server_script) as server:
        found = negotiate(Judge(make_model("openai", server)), DirectorySink(tmp_path), "probe")
    assert found.mode == "tool"
    assert [t["mode"] for t in found.tried] == ["json_schema", "json_object", "tool"]
    sent = server.model_calls()[-1].json
    assert sent["tools"][0]["function"]["name"] == JUDGMENT_TOOL


def test_plain_text_gets_one_repair_request(tmp_path):
    replies = iter(["I think it is right.", json.dumps(GOOD)])

    def server_script(req):
        body = req.json or {}
        if "response_format" in body or "tools" in body:
            return http_error(400)
        return FakeReply(text=next(replies))

    with openai_server(server_script) as server:
        found = negotiate(Judge(make_model("openai", server)), DirectorySink(tmp_path), "probe")
    assert found.mode == "text"
    last = server.model_calls()[-1].json
    assert "could not be read" in last["messages"][-1]["content"]  # the repair request


def test_a_judge_that_judges_in_no_way_cannot_judge(tmp_path):
    with llama_cpp_server(LlamaCpp(chat_format="template")) as server:
        # structured_output = false leaves text alone: "ok" is no judgment, twice
        found = negotiate(Judge(_llama_model(server, structured_output=False)),
                          DirectorySink(tmp_path), "probe")
    assert found.mode is None and not found.can_judge and found.unreachable is None
    assert "cannot judge" in found.summary() and "text:" in found.summary()
    assert len(found.attempts) == 2  # the probe and its one repair request


def test_an_unreachable_judge_is_not_a_missing_format(tmp_path):
    with openai_server([]) as server:
        model = make_model("openai", server)
    # the server is gone: connection refused is retried, then the negotiation stops at once
    found = negotiate(Judge(model), DirectorySink(tmp_path), "probe")
    assert found.mode is None and found.unreachable and found.tried == ()
    assert "did not answer" in found.summary()


def test_an_offline_judge_negotiates_nothing(tmp_path):
    model = ScriptedModel([])
    found = negotiate(Judge(model), DirectorySink(tmp_path), "probe")
    assert found.offline and found.can_judge and not model.requests and found.events("x") == []

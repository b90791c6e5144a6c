"""Each adapter, through its real SDK, against its fake wire server: a tool-call round trip and
a final answer, with every raw file in place and nothing but our attempts on the wire."""

from __future__ import annotations

import json

from tests.models.conftest import CANARY, SQL_TOOL, ask, make_model

from parquet_agent.models.fakes import FakeReply, FakeToolCall
from parquet_agent.models.protocol import (
    UNVERIFIED,
    GenerationSettings,
    ModelRequest,
    SystemMessage,
    ToolMessage,
    UserMessage,
)


def test_tool_call_round_trip_then_final_answer(provider, server_for, sink, tmp_path):
    script = [
        FakeReply(tool_calls=(FakeToolCall("sql", {"query": "SELECT 42"}),),
                  thought_signature="c2lnLTE="),
        FakeReply(text="The answer is 42.", input_tokens=30, output_tokens=5),
    ]
    with server_for(script) as server:
        model = make_model(provider, server)
        first = ModelRequest(messages=(SystemMessage("Be brief."), UserMessage("6 x 7?")),
                             tools=(SQL_TOOL,), label="Q001__m__sql/turn-01")
        r1 = model.complete(first, sink)
        assert r1.reply.text is None
        (call,) = r1.reply.tool_calls
        assert (call.name, call.arguments) == ("sql", {"query": "SELECT 42"})
        assert r1.reply.provider == UNVERIFIED or provider == "openai"

        second = ModelRequest(
            messages=first.messages + (r1.reply.message,
                                       ToolMessage(call.id, "sql", '{"rows": [[42]]}')),
            tools=(SQL_TOOL,), label="Q001__m__sql/turn-02")
        r2 = model.complete(second, sink)
        assert r2.reply.text == "The answer is 42."
        assert r2.reply.tool_calls == ()
        assert r2.reply.usage.input_tokens == 30 and r2.reply.usage.output_tokens == 5
        (a,) = r2.attempts
        assert a.outcome == "ok" and a.http_status == 200
        assert a.cost.source == "price_table" and a.cost.usd > 0

        calls = server.model_calls()
        assert len(calls) == 2  # SDK retries are off: one HTTP request per attempt
        body = calls[1].body.decode()
        assert '{\\"rows\\": [[42]]}' in body  # the tool result went back verbatim
        if provider == "google":  # the thought signature was replayed unchanged
            assert '"thoughtSignature": "c2lnLTE="' in body or '"thought_signature": "c2lnLTE="' in body

    # raw files: request and response per attempt, named from the label
    for result in (r1, r2):
        (att,) = result.attempts
        req = json.loads((tmp_path / att.request_path).read_text())
        resp = json.loads((tmp_path / att.response_path).read_text())
        assert req["schema_version"] == 1 and req["method"] == "POST"
        assert att.request_path.startswith("raw/Q001__m__sql/turn-0")
        assert att.request_path.endswith(".attempt-01.request.json")
        assert resp["status"] == 200
        assert json.loads(resp["body"])  # exact body as parsed
        assert CANARY not in json.dumps(req)
    # exact request body bytes: what the server received is what we wrote
    req2 = json.loads((tmp_path / r2.attempts[0].request_path).read_text())
    assert req2["body"].encode() == calls[1].body


def test_temperature_and_effort_recorded_as_sent(provider, server_for, sink):
    # Gemini 3 takes thinking levels; gemini-2.5-* (thinking budgets) is checked below
    extra = {"model": "gemini-3-flash-preview"} if provider == "google" else {}
    with server_for([FakeReply(text="ok")]) as server:
        model = make_model(provider, server, temperature=0.3, reasoning_effort="low", **extra)
        result = model.complete(ask(tools=()), sink)
        body = json.loads(server.model_calls()[0].body)
    (a,) = result.attempts
    if provider == "anthropic":
        assert a.temperature == "not supported" and "temperature" not in body
        assert body["output_config"] == {"effort": "low"}
        assert any("temperature" in n for n in a.notes)
    elif provider == "openai":  # gpt-4o-mini takes a temperature but no reasoning effort
        assert a.temperature == 0.3 and body["temperature"] == 0.3
        assert "reasoning_effort" not in body and a.reasoning_effort == "not supported"
        return
    else:
        assert a.temperature == 0.3 and body["generationConfig"]["temperature"] == 0.3
        thinking = body["generationConfig"]["thinkingConfig"]
        # google-genai 3.6.1 sends some nested keys in snake_case (see provider-wire notes)
        assert thinking.get("thinkingLevel", thinking.get("thinking_level")) == "LOW"
    assert a.reasoning_effort == "low"


def test_effort_is_not_sent_to_a_model_the_price_table_says_takes_none(sink):
    from parquet_agent.models.fakes import gemini_server

    with gemini_server([FakeReply(text="ok")]) as server:
        model = make_model("google", server, model="gemini-2.5-flash", reasoning_effort="low")
        (a,) = model.complete(ask(tools=()), sink).attempts
        body = json.loads(server.model_calls()[0].body)
    assert a.reasoning_effort == "not supported" and "thinkingConfig" not in str(body)
    assert any("reasoning_effort" in n for n in a.notes)


def test_request_settings_override_configured_defaults(server_for, provider, sink):
    with server_for([FakeReply(text="ok")]) as server:
        model = make_model(provider, server, temperature=0.9)
        req = ask(tools=())
        req = ModelRequest(messages=req.messages, settings=GenerationSettings(temperature=0.1),
                           label="x")
        result = model.complete(req, sink)
    expected = "not supported" if provider == "anthropic" else 0.1
    assert result.attempts[0].temperature == expected


def test_gemini_echoes_wire_call_ids_only(sink):
    from tests.models.conftest import make_model as mk

    from parquet_agent.models.fakes import gemini_server

    script = [FakeReply(tool_calls=(FakeToolCall("sql", {"query": "a"}, id="fc-7"),
                                    FakeToolCall("sql", {"query": "b"}))),
              FakeReply(text="done")]
    with gemini_server(script) as server:
        model = mk("google", server)
        r1 = model.complete(ask(), sink)
        c1, c2 = r1.reply.tool_calls
        assert c1.id == "fc-7" and c2.id == "sql-1"  # no id on the wire: a local one
        msgs = ask().messages + (r1.reply.message, ToolMessage(c1.id, "sql", "1"),
                                 ToolMessage(c2.id, "sql", "2"))
        model.complete(ModelRequest(messages=msgs, label="t2"), sink)
        body = json.loads(server.model_calls()[1].body)
    (resp_turn,) = [c for c in body["contents"] if c["role"] == "user"][1:]
    ids = [p["functionResponse"].get("id") for p in resp_turn["parts"]]
    assert ids == ["fc-7", None]  # both results in one turn, only the API's id echoed

"""Defects found with real providers and a real local model, each at the adapter level, through
the official SDKs talking HTTP to the local fake servers (issue 13)."""

from __future__ import annotations

import json

import pytest

from parquet_agent.errors import ConfigError, ModelCallError
from parquet_agent.models import ModelSpec, build_model
from parquet_agent.models.fakes import FakeReply, FakeToolCall, RawResponse, openai_server
from parquet_agent.models.protocol import ModelRequest, ToolMessage
from parquet_agent.models.spec import model_spec_from_table
from tests.models.conftest import CANARY, PROVIDERS, all_bytes, ask, make_model


def _escaped(key: str, every: int = 1) -> str:
    """`key` as a JSON string may carry it: every `every`-th character as a \\uXXXX escape."""
    return "".join(f"\\u{ord(c):04x}" if i % every == 0 else c for i, c in enumerate(key))


@pytest.mark.parametrize("every", [1, 2, 5])
def test_a_key_echoed_with_json_escapes_reaches_no_record(provider, sink, tmp_path, every):
    """Before: the transport replaced only the literal key; `\\u0073k-…` got through to the
    raw files and, decoded by the SDK, into the error text every recorder keeps."""
    wire = PROVIDERS[provider][0]([]).wire
    message = f"Incorrect API key provided: {_escaped(CANARY, every)}"
    body = json.dumps(wire.render_error(401, "PLACEHOLDER")).replace("PLACEHOLDER", message)
    with PROVIDERS[provider][0]([RawResponse(401, body.encode())]) as server:
        model = make_model(provider, server)
        with pytest.raises(ModelCallError) as info:
            model.complete(ask(), sink)
    assert CANARY not in str(info.value)
    assert "[REDACTED-CREDENTIAL]" in str(info.value)
    for path, data in all_bytes(tmp_path):
        assert CANARY.encode() not in data, path
        assert json.loads(data) and CANARY not in json.dumps(json.loads(data), ensure_ascii=False)
        assert _escaped(CANARY, every).encode() not in data, path


def test_every_key_the_run_knows_is_scrubbed_by_every_recorder(sink, tmp_path):
    other = "sk-fake-judge-key-0123456789abcdef"
    with openai_server([FakeReply(text=f"the judge key is {_escaped(other, 3)}")]) as server:
        spec = ModelSpec(name="m", provider="openai", model="gpt-4o-mini", api_key_env="K",
                         base_url=server.url + "/v1")
        model = build_model(spec, env={"K": CANARY}, secrets=[other])
        result = model.complete(ask(), sink)
    assert other not in (result.reply.text or "")
    for path, data in all_bytes(tmp_path):
        assert other not in json.dumps(json.loads(data), ensure_ascii=False), path


def test_deeply_nested_tool_arguments_are_a_tool_error_value_not_a_crash(sink):
    """Before: json.loads raised RecursionError, which escaped complete() with a traceback."""
    nested = "[" * 100_000 + "]" * 100_000
    with openai_server([FakeReply(tool_calls=(FakeToolCall("sql", nested, id="c1"),))]) as server:
        result = make_model("openai", server).complete(ask(), sink)
    (call,) = result.reply.tool_calls
    assert call.arguments == {} and call.raw_arguments == nested
    assert "not valid JSON" in call.arguments_error


def test_invalid_control_characters_in_arguments_are_kept_raw_with_the_reason(sink):
    """Before: "arguments that are not JSON: Invalid control character" failed the call (and
    the case, again on every resume)."""
    raw = '{"query": "SELECT 1\n\t FROM t"}'  # raw newline inside a JSON string
    with openai_server([FakeReply(tool_calls=(FakeToolCall("sql", raw, id="c1"),))]) as server:
        result = make_model("openai", server).complete(ask(), sink)
    (call,) = result.reply.tool_calls
    assert result.attempts[-1].outcome == "ok" and len(result.attempts) == 1
    assert call.raw_arguments == raw and "Invalid control character" in call.arguments_error


def test_a_deeply_nested_anthropic_reply_is_a_recorded_malformed_attempt(sink, tmp_path):
    body = ('{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",'
            '"content":[{"type":"tool_use","id":"t1","name":"sql","input":{"q":'
            + "[" * 50_000 + "]" * 50_000 + '}}],"stop_reason":"tool_use","usage":'
            '{"input_tokens":3,"output_tokens":4}}')
    with PROVIDERS["anthropic"][0](lambda req: RawResponse(200, body.encode())) as server:
        with pytest.raises(ModelCallError) as info:
            make_model("anthropic", server).complete(ask(), sink)
    assert info.value.kind == "malformed" and info.value.attempts
    assert all(a.response_path for a in info.value.attempts)


LLAMA_500 = (b'{"error": {"code": 500, "message": "Expected \'content\' to be a string", '
             b'"type": "server_error"}}')


def test_a_deterministic_500_is_not_retried_forever_and_says_what_to_change(sink):
    """Before: four attempts with backoff, retryable case, advice about rate limits."""
    with openai_server(lambda req: RawResponse(500, LLAMA_500)) as server:
        with pytest.raises(ModelCallError) as info:
            make_model("openai", server).complete(ask(), sink)
        calls = len(server.model_calls())
    err = info.value
    assert calls == 2 and len(err.attempts) == 2
    assert not err.retryable
    assert "tool_call_content" in str(err) and "deterministic" in str(err)


def test_a_transient_500_that_asks_for_a_retry_keeps_its_retries(sink):
    body = b'{"error": {"message": "The server is overloaded, please try again", "code": 500}}'
    with openai_server(lambda req: RawResponse(500, body)) as server:
        with pytest.raises(ModelCallError) as info:
            make_model("openai", server).complete(ask(), sink)
    assert len(info.value.attempts) == 3 and info.value.retryable


@pytest.mark.parametrize("body", [
    b'{"error": {"message": "This model\'s maximum context length is 2048 tokens. However, you '
    b'requested 2310 tokens (2054 in the messages, 256 in the completion).", '
    b'"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
    b'{"error": {"code": 400, "message": "the request exceeds the available context size, try '
    b'increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 2300, "n_ctx": 2048}}',
])
def test_context_overflow_is_its_own_kind_never_retried(sink, body):
    with openai_server(lambda req: RawResponse(400, body)) as server:
        with pytest.raises(ModelCallError) as info:
            make_model("openai", server).complete(ask(), sink)
    assert info.value.kind == "context_overflow" and len(info.value.attempts) == 1
    assert "context" in str(info.value) and "base_url" not in str(info.value)


def test_a_non_json_200_is_a_recorded_attempt_and_a_model_call_error(provider, sink, tmp_path):
    """Before (OpenAI): the SDK handed back a str and `.usage` raised AttributeError."""
    page = b"<html><body>Welcome to nginx!</body></html>"
    with PROVIDERS[provider][0](lambda req: RawResponse(200, page, "text/html")) as server:
        with pytest.raises(ModelCallError) as info:
            make_model(provider, server).complete(ask(), sink)
    err = info.value
    assert err.kind == "malformed" and "base_url" in str(err) and "not JSON" in str(err)
    assert len(err.attempts) == 2 and not err.retryable  # the same page twice
    assert all((tmp_path / a.response_path).is_file() for a in err.attempts)


def test_a_local_model_declared_free_is_never_priced_from_the_table(sink):
    """Before: `model = "gpt-4o-mini"` echoed back by llama.cpp was billed at OpenAI's rate."""
    with openai_server([FakeReply(text="hi", model="gpt-4o-mini", provider=None)]) as server:
        model = make_model("openai", server, model="gpt-4o-mini", price="free")
        result = model.complete(ask(), sink)
    cost = result.attempts[-1].cost
    assert cost.usd == 0.0 and cost.source == "declared"


def test_a_declared_price_table_prices_every_token_kind(sink):
    rates = {"input": 1.0, "output": 2.0, "cached_input": 0.5, "reasoning": 3.0}
    reply = FakeReply(text="x", input_tokens=1000, cached_tokens=400, output_tokens=100,
                      reasoning_tokens=60, provider=None)
    with openai_server([reply]) as server:
        result = make_model("openai", server, model="my-local", price=rates).complete(ask(), sink)
    cost = result.attempts[-1].cost
    assert cost.source == "declared"
    assert cost.usd == pytest.approx((600 * 1.0 + 400 * 0.5 + 40 * 2.0 + 60 * 3.0) / 1e6)


@pytest.mark.parametrize("price", ["cheap", {"input": 1}, {"input": 1, "output": -1},
                                   {"input": 1, "output": 1, "bogus": 2},
                                   {"input": None, "output": 1}])  # a Python table may hold None
def test_a_bad_declared_price_is_a_config_error(price):
    with pytest.raises(ConfigError, match="price"):
        model_spec_from_table({"name": "m", "provider": "openai", "model": "x",
                               "api_key_env": "K", "price": price}, where="[[models]] #1")


def test_the_fakes_speak_the_real_shapes_and_the_second_turn_sends_them_back(sink):
    """DeepSeek's reasoning_content, Gemini-OpenAI's empty call ids and hidden thinking tokens,
    OpenRouter BYOK cost and cache writes, from the fake, through a tool round trip."""
    first = FakeReply(
        tool_calls=(FakeToolCall("sql", {"query": "SELECT 1"}, id=""),
                    FakeToolCall("sql", {"query": "SELECT 2"}, id="")),
        input_tokens=100, output_tokens=10, hidden_tokens=40, cached_tokens=20,
        cache_write_tokens=30, cost=0.0, upstream_cost=0.00042,
        message_extra={"reasoning_content": "think first",
                       "extra_content": {"google": {"thought_signature": "c2ln"}}})
    with openai_server([first, FakeReply(text="done")]) as server:
        model = make_model("openai", server)
        result = model.complete(ask(), sink)
        reply = result.reply
        follow = ask().messages + (reply.message,) + tuple(
            ToolMessage(c.id, c.name, "1") for c in reply.tool_calls)
        model.complete(ModelRequest(messages=follow, label="next"), sink)
        sent = server.model_calls()[1].json
    assert [c.id for c in reply.tool_calls] == ["call-0", "call-1"]
    assert [c.wire_id for c in reply.tool_calls] == ["", ""]
    u = reply.usage
    assert (u.output_tokens, u.reasoning_tokens, u.cache_write_tokens) == (50, 40, 30)
    cost = result.attempts[-1].cost
    assert cost.source == "gateway" and cost.usd == pytest.approx(0.00042)
    assistant = sent["messages"][1]
    assert assistant["reasoning_content"] == "think first"
    assert assistant["extra_content"] == {"google": {"thought_signature": "c2ln"}}
    assert [c["id"] for c in assistant["tool_calls"]] == ["", ""]
    assert [m["tool_call_id"] for m in sent["messages"][2:4]] == ["", ""]

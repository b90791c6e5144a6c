"""OpenAI-compatible gateways and local servers: provider pinning, identity, reported cost,
bad tool arguments, and the llama.cpp content option."""

from __future__ import annotations

import json
import logging

import pytest
from tests.models.conftest import ask, make_model

from parquet_agent.errors import ModelCallError
from parquet_agent.models import PriceTable
from parquet_agent.models.fakes import FakeReply, FakeToolCall, openai_server
from parquet_agent.models.protocol import (
    UNVERIFIED,
    AssistantMessage,
    ModelRequest,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)


def test_pin_is_sent_and_confirmed(sink):
    with openai_server([FakeReply(text="ok", provider="Together")]) as server:
        result = make_model("openai", server, provider_pin=("together",)).complete(ask(), sink)
        body = json.loads(server.model_calls()[0].body)
    assert body["provider"] == {"order": ["together"], "allow_fallbacks": False}
    assert result.reply.provider == "Together"
    assert any("confirmed" in n for n in result.attempts[0].notes)


def test_pin_mismatch_fails_without_retry(sink):
    with openai_server([FakeReply(text="ok", provider="Elsewhere")] * 2) as server:
        with pytest.raises(ModelCallError) as info:
            make_model("openai", server, provider_pin=("together",)).complete(ask(), sink)
        assert len(server.model_calls()) == 1
    (a,) = info.value.attempts
    assert a.actual_provider == "Elsewhere" and a.outcome == "failed"
    assert "pin mismatch" in a.error and a.usage.input_tokens == 12  # what it cost is kept
    assert "fail_on_pin_mismatch" in str(info.value)


def test_pin_mismatch_only_recorded_when_configured(sink):
    with openai_server([FakeReply(text="ok", provider="Elsewhere")]) as server:
        model = make_model("openai", server, provider_pin=("together",), fail_on_pin_mismatch=False)
        result = model.complete(ask(), sink)
    assert result.reply.text == "ok"
    assert any("mismatch" in n for n in result.attempts[0].notes)


def test_missing_provider_is_unverified(sink):
    with openai_server([FakeReply(text="ok", provider=None)]) as server:
        result = make_model("openai", server, provider_pin=("together",)).complete(ask(), sink)
    assert result.reply.provider == UNVERIFIED
    assert result.attempts[0].actual_provider == UNVERIFIED
    assert any("unverified" in n for n in result.attempts[0].notes)


def test_gateway_cost_preferred_and_disagreement_recorded(sink):
    with openai_server([FakeReply(text="ok", cost=0.5)]) as server:
        result = make_model("openai", server).complete(ask(), sink)
    cost = result.attempts[0].cost
    assert cost.usd == 0.5 and cost.source == "gateway"
    assert cost.computed_usd == pytest.approx((12 * 0.15 + 7 * 0.60) / 1e6)
    assert "gateway reported" in cost.note


def test_invalid_tool_arguments_are_kept_raw_not_retried(sink):
    """Unparseable arguments are the model's answer (a tool error value the agent sends back),
    not a failed call: retrying at temperature 0 would only pay for the same bytes again."""
    script = [FakeReply(tool_calls=(FakeToolCall("sql", '{"query": "SELECT'),))]
    with openai_server(script) as server:
        result = make_model("openai", server).complete(ask(), sink)
    (only,) = result.attempts
    assert only.outcome == "ok"
    (call,) = result.reply.tool_calls
    assert call.arguments == {} and call.raw_arguments == '{"query": "SELECT'
    assert "not valid JSON" in call.arguments_error


def test_empty_content_option_for_local_servers(sink):
    convo = (UserMessage("q"),
             AssistantMessage(None, (ToolCall("c1", "sql", {"query": "SELECT 1"}),)),
             ToolMessage("c1", "sql", "[]"))
    for option, expected in ((None, None), ("", "")):
        with openai_server([FakeReply(text="ok")]) as server:
            model = make_model("openai", server, tool_call_content=option,
                               max_tokens_field="max_tokens")
            model.complete(ModelRequest(messages=convo, label="x"), sink)
            body = json.loads(server.model_calls()[0].body)
        assert body["messages"][1]["content"] == expected
        assert body["max_tokens"] == 4096 and "max_completion_tokens" not in body


def test_unknown_model_costs_none_with_one_warning_per_model(sink, caplog):
    """Issue 19, finding 5: "cost unknown" was logged once per API call (every turn of every
    case); now once per model, saying what to do, while every attempt still records unknown."""
    with openai_server([FakeReply(text="ok", model="mystery-model-9")] * 5) as server:
        with caplog.at_level(logging.WARNING):
            first = make_model("openai", server, model="mystery-model-9")
            results = [first.complete(ask(), sink) for _ in range(3)]
            other = make_model("openai", server, name="other", model="mystery-model-9")
            results += [other.complete(ask(), sink) for _ in range(2)]
    for result in results:
        cost = result.attempts[0].cost
        assert cost.usd is None and cost.source == "unknown"
        assert "mystery-model-9" in cost.note
    warnings = [r.getMessage() for r in caplog.records if "cost unknown" in r.getMessage()]
    assert len(warnings) == 2, warnings  # one per model, not one per call
    assert "'openai-fake'" in warnings[0] and "'other'" in warnings[1]
    assert "mystery-model-9" in warnings[0] and "price" in warnings[0]


def test_price_table_lookup_and_arithmetic():
    table = PriceTable.load()
    assert table.version and table.retrieved
    assert table.lookup("openai/gpt-4o-mini").model == "gpt-4o-mini"
    assert table.lookup("claude-haiku-4-5-20251001").model == "claude-haiku-4-5"
    assert table.lookup("gpt-4o-mini-2024-07-18").model == "gpt-4o-mini"
    assert table.lookup("gpt-4o-mini-turbo") is None
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_tokens=400_000,
                  reasoning_tokens=100_000)
    cost = table.cost(("claude-haiku-4-5",), usage)
    assert cost.source == "price_table" and cost.price_table == table.version
    assert cost.usd == pytest.approx(0.6 * 1.00 + 0.4 * 0.10 + 0.9 * 5.00 + 0.1 * 5.00)
    no_cache_price = table.cost(("gemini-2.5-pro",), usage)
    assert "cached tokens priced as input" in no_cache_price.note


def test_reasoning_model_gets_effort_but_no_temperature(sink):
    with openai_server([FakeReply(text="ok")]) as server:
        model = make_model("openai", server, model="gpt-5.4-mini", temperature=0.2,
                           reasoning_effort="high")
        result = model.complete(ask(), sink)
        body = json.loads(server.model_calls()[0].body)
    assert body["reasoning_effort"] == "high" and "temperature" not in body
    (a,) = result.attempts
    assert a.temperature == "not supported" and a.reasoning_effort == "high"


def test_slow_reply_within_timeout_is_one_attempt_with_its_duration(sink):
    from parquet_agent.models.fakes import slow

    with openai_server([slow(0.3, FakeReply(text="late"))]) as server:
        result = make_model("openai", server, timeout_s=5).complete(ask(), sink)
    (a,) = result.attempts
    assert result.reply.text == "late" and a.outcome == "ok"
    assert a.duration_ms >= 300 and a.queue_ms == 0
    assert a.started_at < a.ended_at and a.started_at.endswith("Z")  # the one utc_now format


def test_gateway_price_endpoint_is_recorded_under_meta(sink, tmp_path):
    with openai_server([]) as server:
        prices = make_model("openai", server).gateway_prices(sink)
        assert [r.method for r in server.requests] == ["GET"]
    assert prices == {"openai/gpt-4o-mini": {"input": pytest.approx(0.15),
                                             "output": pytest.approx(0.6),
                                             "cached_input": pytest.approx(0.075),
                                             "reasoning": None}}
    (meta,) = [p for p in (tmp_path / "raw" / "meta").iterdir() if "request" in p.name]
    assert meta.name.startswith("gateway-prices.")

"""Anthropic prompt caching: breakpoints on the wire, recorded per attempt, priced at the
provider's read and write rates, against a fake server whose usage models the cache honestly."""

from __future__ import annotations

import json

import pytest

from parquet_agent.models.fakes import FakeReply, FakeToolCall, PromptCache, anthropic_server
from parquet_agent.models.fakes.cache_case import run_cached_case
from parquet_agent.models.prices import PriceTable
from parquet_agent.models.protocol import ToolSpec
from tests.models.conftest import SQL_TOOL, ask, make_model

SYSTEM = "You answer questions about SEC filings. " * 400  # ~4k tokens: over the minimum
TOOLS = (SQL_TOOL, ToolSpec("read_filing", "Read a filing.", {"type": "object", "properties": {
    "file_stem": {"type": "string"}}, "required": ["file_stem"]}))


def _script(turns):
    return [FakeReply(tool_calls=(FakeToolCall("sql", {"query": f"SELECT {i}"}),))
            for i in range(turns)]


def test_breakpoints_go_on_system_tools_and_the_latest_user_turn(sink):
    with anthropic_server(_script(3)) as server:
        attempts = run_cached_case(make_model("anthropic", server), sink, system=SYSTEM,
                                   tools=TOOLS, turns=3)
        bodies = [r.json for r in server.model_calls()]
    last = bodies[-1]
    assert last["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" in last["tools"][-1] and "cache_control" not in last["tools"][0]
    marked = [(i, b) for i, m in enumerate(last["messages"]) for b in m["content"]
              if isinstance(b, dict) and "cache_control" in b]
    assert len(marked) == 1 and marked[0][0] == len(last["messages"]) - 1
    assert marked[0][1]["type"] == "tool_result"
    assert all("prompt caching on" in " ".join(a.notes) for a in attempts)


def test_cache_prompts_false_sends_no_breakpoint_and_says_so(sink):
    with anthropic_server(_script(2)) as server:
        model = make_model("anthropic", server, cache_prompts=False)
        attempts = run_cached_case(model, sink, system=SYSTEM, tools=TOOLS, turns=2)
        raw = [r.body for r in server.model_calls()]
    assert all(b"cache_control" not in body for body in raw)
    assert all("prompt caching off (cache_prompts = false)" in a.notes for a in attempts)


def test_the_fake_reads_only_prefixes_it_was_asked_to_cache():
    cache = PromptCache(min_tokens=10)
    plain = {"system": "s" * 400, "messages": [{"role": "user", "content": "q"}]}
    assert cache.usage(plain)["cache_read_input_tokens"] == 0
    assert cache.usage(plain)["cache_read_input_tokens"] == 0  # never marked: never read
    marked = {"system": [{"type": "text", "text": "s" * 400, "cache_control": {"type": "x"}}],
              "messages": [{"role": "user", "content": "q"}]}
    first, second = cache.usage(marked), cache.usage(marked)
    assert first["cache_creation_input_tokens"] > 0 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    changed = json.loads(json.dumps(marked))
    changed["system"][0]["text"] = "t" * 400
    assert cache.usage(changed)["cache_read_input_tokens"] == 0


def _billed(attempts, price):
    """Cost from the fake's usage, computed here: uncached, read and written input at their
    rates, output at the output rate."""
    usd = 0.0
    for a in attempts:
        u = a.usage
        uncached = u.input_tokens - u.cached_tokens - u.cache_write_tokens
        usd += (uncached * price.input + u.cached_tokens * price.cached_input
                + u.cache_write_tokens * price.cache_write + u.output_tokens * price.output) / 1e6
    return usd


def test_a_twelve_turn_case_bills_less_input_with_caching_and_costs_add_up(sink):
    price = PriceTable.load().lookup("claude-haiku-4-5")
    runs = {}
    for on in (True, False):
        with anthropic_server(_script(12), prompt_cache=PromptCache()) as server:
            model = make_model("anthropic", server, cache_prompts=on)
            runs[on] = run_cached_case(model, sink, system=SYSTEM, tools=TOOLS, turns=12,
                                       label=f"case-{on}")
    for attempts in runs.values():
        assert len(attempts) == 12
        assert sum(a.cost.usd for a in attempts) == pytest.approx(_billed(attempts, price),
                                                                  abs=1e-9)
    on, off = runs[True], runs[False]
    assert sum(a.usage.cached_tokens for a in off) == 0
    assert sum(a.usage.cached_tokens for a in on) > 0
    assert sum(a.usage.cache_write_tokens for a in on) > 0
    # the same prompts: same total input, billed differently
    assert [a.usage.input_tokens for a in on] == [a.usage.input_tokens for a in off]
    assert sum(a.cost.usd for a in on) < 0.5 * sum(a.cost.usd for a in off)


def test_cache_writes_are_priced_at_the_write_rate(sink):
    """Before: cache_creation_input_tokens were priced as plain input (about 15% low)."""
    usage = {"input_tokens": 3, "output_tokens": 33, "cache_creation_input_tokens": 418,
             "cache_read_input_tokens": 1111}
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": usage}
    with anthropic_server([body]) as server:
        result = make_model("anthropic", server).complete(ask(), sink)
    u = result.reply.usage
    assert (u.input_tokens, u.cached_tokens, u.cache_write_tokens) == (1532, 1111, 418)
    expected = (3 * 1.00 + 1111 * 0.10 + 418 * 1.25 + 33 * 5.00) / 1e6
    assert result.attempts[-1].cost.usd == pytest.approx(expected, rel=1e-12)

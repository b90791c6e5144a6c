"""Replay tier: every real recorded provider response in fixtures/wire_replay/responses.jsonl
(87 records from pydantic-ai's MIT-licensed test cassettes; PROVENANCE.md and LICENSE beside it),
served byte for byte from a local server to the official SDK through our adapter.

For each record the expected result is computed here from the recorded JSON itself (an oracle
written apart from the adapters): text, tool calls and ids, finish reason, every usage field,
cost and its source, provider, response id; or the failure (kind, attempts) for error and
malformed bodies; or the block with the provider's reason and message. The raw response file
must hold the served bytes exactly, and the follow-up request the adapter builds from the reply
must send back what the provider needs (ids as sent, reasoning fields, thought signatures).
No network: runs in CI.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from parquet_agent.errors import ModelCallError
from parquet_agent.models.fakes import RawResponse
from parquet_agent.models.prices import PriceTable
from parquet_agent.models.protocol import ModelRequest, ToolMessage, UserMessage
from parquet_agent.models.transport import read_body
from tests.models.conftest import PROVIDERS, SQL_TOOL, make_model

CORPUS = Path(__file__).resolve().parent / "fixtures" / "wire_replay" / "responses.jsonl"
RECORDS = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
TABLE = PriceTable.load()
# Finish reasons that mean "refused" (the oracle's own list, from the providers' docs)
REFUSALS = {"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "MODEL_ARMOR",
            "IMAGE_SAFETY", "LANGUAGE", "content_filter", "refusal"}
BAD_CALLS = {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"}
ATTEMPTS = 3  # conftest.FAST


def test_the_corpus_is_there_and_whole():
    assert len(RECORDS) == 87, f"expected the 87 records of {CORPUS}"


def _model_id(record: dict) -> str:
    body = record.get("request_body") or {}
    if isinstance(body, dict) and body.get("model"):
        return body["model"]
    m = re.search(r"models/([^/:]+):", record["request_path"])
    return m.group(1) if m else "unknown-model"


def _serve(record: dict):
    body = record["response_body"].encode("utf-8")
    ctype = record["response_headers"].get("content-type", "application/json")
    return RawResponse(record["status"], body, ctype)


# -- the oracle -------------------------------------------------------------------------------


def _as_int(v):
    return None if v is None else int(v)


def _cost(model_names, usage: dict) -> tuple[float | None, str]:
    price = next((p for p in (TABLE.lookup(m) for m in model_names) if p), None)
    if price is None or usage["input_tokens"] is None or usage["output_tokens"] is None:
        return None, "unknown"
    cached, written = usage["cached_tokens"] or 0, usage["cache_write_tokens"] or 0
    reasoning = usage["reasoning_tokens"] or 0
    usd = ((usage["input_tokens"] - cached - written) * price.input
           + cached * (price.cached_input if price.cached_input is not None else price.input)
           + written * (price.cache_write if price.cache_write is not None else price.input)
           + (usage["output_tokens"] - reasoning) * price.output
           + reasoning * (price.reasoning if price.reasoning is not None else price.output))
    return usd / 1e6, "price_table"


def _expect_openai(j: dict, requested: str) -> dict:
    if not isinstance(j, dict) or "choices" not in j:
        return {"kind": "malformed"}
    choice = j["choices"][0] if j["choices"] else None
    if choice is None:
        return {"kind": "malformed"}
    msg = choice["message"]
    u = j.get("usage") or {}
    prompt, completion, total = u.get("prompt_tokens"), u.get("completion_tokens"), u.get("total_tokens")
    pd, cd = u.get("prompt_tokens_details") or {}, u.get("completion_tokens_details") or {}
    reasoning = cd.get("reasoning_tokens")
    hidden = (total - prompt - completion) if None not in (total, prompt, completion) else 0
    output = completion
    if hidden > 0:
        output, reasoning = completion + hidden, (reasoning or 0) + hidden
    usage = {"input_tokens": prompt, "output_tokens": output, "cached_tokens": pd.get("cached_tokens"),
             "reasoning_tokens": reasoning, "cache_write_tokens": pd.get("cache_write_tokens")}
    calls, seen = [], set()
    for i, tc in enumerate(msg.get("tool_calls") or []):
        wire = tc["id"]
        ours = wire if wire and wire not in seen else f"call-{i}"
        seen.add(ours)
        calls.append({"id": ours, "wire_id": None if ours == wire else wire, "name": tc["function"]["name"],
                      "arguments": json.loads(tc["function"]["arguments"] or "{}"),
                      "extra": {k: v for k, v in tc.items() if k == "extra_content"}})
    if isinstance(u.get("cost"), (int, float)):
        up = (u.get("cost_details") or {}).get("upstream_inference_cost")
        usd = u["cost"] + (up if u.get("is_byok") and isinstance(up, (int, float)) else 0)
        cost = (usd, "gateway")
    else:
        cost = _cost((j.get("model"), requested), usage)
    finish = choice.get("finish_reason")
    return {
        "kind": "block" if finish in REFUSALS else "answer", "block_reason": finish,
        "text": msg.get("content"), "calls": calls, "finish": finish, "usage": usage,
        "cost": cost, "provider": j["provider"] if isinstance(j.get("provider"), str) else "unverified",
        "response_id": j.get("id"), "model": j.get("model"),
        "echo": {k: msg[k] for k in ("reasoning_content", "reasoning", "reasoning_details",
                                     "extra_content") if msg.get(k) is not None},
    }


def _expect_anthropic(j: dict, requested: str) -> dict:
    if not isinstance(j, dict) or not j.get("content"):
        return {"kind": "malformed"}
    u = j["usage"]
    read, write = u.get("cache_read_input_tokens") or 0, u.get("cache_creation_input_tokens") or 0
    usage = {"input_tokens": u["input_tokens"] + read + write, "output_tokens": u["output_tokens"],
             "cached_tokens": read, "cache_write_tokens": write,
             "reasoning_tokens": (u.get("output_tokens_details") or {}).get("thinking_tokens")}
    texts = [b["text"] for b in j["content"] if b["type"] == "text"]
    calls = [{"id": b["id"], "wire_id": None, "name": b["name"], "arguments": b["input"], "extra": {}}
             for b in j["content"] if b["type"] == "tool_use"]
    finish = j.get("stop_reason")
    return {
        "kind": "block" if finish in REFUSALS else "answer", "block_reason": finish,
        "text": "".join(texts) if texts else None, "calls": calls, "finish": finish,
        "usage": usage, "cost": _cost((j.get("model"), requested), usage),
        "provider": "unverified", "response_id": j.get("id"), "model": j.get("model"),
        "blocks": j["content"],
    }


def _expect_google(j: dict, requested: str) -> dict:
    if not isinstance(j, dict) or not ("candidates" in j or "promptFeedback" in j):
        return {"kind": "malformed"}
    u = j.get("usageMetadata") or {}
    prompt, cand, thoughts = u.get("promptTokenCount"), u.get("candidatesTokenCount"), u.get("thoughtsTokenCount")
    usage = {"input_tokens": None if prompt is None else prompt + (u.get("toolUsePromptTokenCount") or 0),
             "output_tokens": None if cand is None and thoughts is None else (cand or 0) + (thoughts or 0),
             "cached_tokens": u.get("cachedContentTokenCount"), "reasoning_tokens": thoughts,
             "cache_write_tokens": None}
    common = {"usage": usage, "response_id": j.get("responseId"), "model": j.get("modelVersion"),
              "provider": "unverified", "cost": _cost((j.get("modelVersion"), requested), usage)}
    feedback = j.get("promptFeedback") or {}
    candidates = j.get("candidates") or []
    if feedback.get("blockReason"):
        return {**common, "kind": "block", "block_reason": feedback["blockReason"],
                "block_message": feedback.get("blockReasonMessage"), "text": None, "calls": [],
                "finish": None}
    if not candidates:
        return {"kind": "malformed"}
    c = candidates[0]
    finish = c.get("finishReason")
    parts = (c.get("content") or {}).get("parts") or []
    # a call of an undeclared function, with the call in it: an answer the tools refuse
    if finish in BAD_CALLS and not (finish == "UNEXPECTED_TOOL_CALL"
                                    and any("functionCall" in p for p in parts)):
        return {"kind": "malformed"}
    texts = [p["text"] for p in parts if "text" in p and not p.get("thought")]
    calls = [{"id": p["functionCall"].get("id") or f"{p['functionCall']['name']}-{i}", "wire_id": None,
              "name": p["functionCall"]["name"], "arguments": p["functionCall"].get("args") or {},
              "extra": {}} for i, p in enumerate(parts) if "functionCall" in p]
    if finish in REFUSALS:
        return {**common, "kind": "block", "block_reason": finish,
                "block_message": c.get("finishMessage"), "text": "".join(texts) or None,
                "calls": calls, "finish": finish}
    if "content" not in c:
        return {"kind": "malformed"}
    return {**common, "kind": "answer", "text": "".join(texts) if texts else None, "calls": calls,
            "finish": finish, "parts": parts}


ORACLE = {"openai": _expect_openai, "anthropic": _expect_anthropic, "google": _expect_google}


def expected(record: dict) -> dict:
    if record["status"] != 200:
        return {"kind": "error"}
    try:
        j = json.loads(record["response_body"])
    except ValueError:
        return {"kind": "malformed"}
    return ORACLE[record["provider"]](j, _model_id(record))


# -- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("record", RECORDS, ids=[r["id"] for r in RECORDS])
def test_replay(record, tmp_path, sink):
    provider = record["provider"]
    want = expected(record)
    served = _serve(record)
    server = PROVIDERS[provider][0](lambda req: served)
    with server:
        model = make_model(provider, server, model=_model_id(record), timeout_s=60.0)
        request = ModelRequest(messages=(UserMessage("What is 6 x 7?"),), tools=(SQL_TOOL,),
                               label=f"replay/{record['id'][:60]}")
        if want["kind"] in ("error", "malformed"):
            with pytest.raises(ModelCallError) as info:
                model.complete(request, sink)
            _check_failure(record, want, info.value, tmp_path)
            return
        result = model.complete(request, sink)
        _check_reply(record, want, result)
        _check_raw(record, result.attempts[-1], tmp_path)
        _check_follow_up(record, want, model, request, result.reply, server, sink)


def _check_failure(record, want, exc: ModelCallError, tmp_path):
    attempts = exc.attempts
    assert attempts, "every attempt is recorded"
    for a in attempts:
        _check_raw(record, a, tmp_path)
    status = record["status"]
    if want["kind"] == "malformed":
        assert exc.kind == "malformed"
        # the same body twice: deterministic, not retried further
        assert len(attempts) == 2 and not exc.retryable
        assert "base_url" in str(exc) or "malformed" in str(exc) or "finish reason" in str(exc)
    elif status == 429:
        assert exc.kind == "http_429" and len(attempts) == ATTEMPTS and exc.retryable
    elif status >= 500:
        assert exc.kind == "http_5xx"
    else:
        assert exc.kind in ("http_4xx", "context_overflow") and len(attempts) == 1
        assert not exc.retryable
        message = json.loads(record["response_body"])["error"]["message"]
        assert message[:40] in str(exc) or json.dumps(message)[1:41] in str(exc)
    assert all(a.http_status == status for a in attempts)


def _check_reply(record, want, result):
    reply, attempt = result.reply, result.attempts[-1]
    assert len(result.attempts) == 1 and attempt.outcome == "ok"
    assert reply.text == want["text"]
    assert reply.finish_reason == want["finish"]
    # a blocked prompt has no finish reason: the attempt records the block reason instead
    assert attempt.finish_reason == (want["block_reason"] if want["finish"] is None
                                     else want["finish"])
    got_calls = [{"id": c.id, "wire_id": c.wire_id, "name": c.name, "arguments": c.arguments}
                 for c in reply.tool_calls]
    assert got_calls == [{k: c[k] for k in ("id", "wire_id", "name", "arguments")}
                         for c in want["calls"]]
    assert len({c.id for c in reply.tool_calls}) == len(reply.tool_calls)
    usage = {k: getattr(reply.usage, k) for k in want["usage"]}
    assert usage == want["usage"] and attempt.usage == reply.usage
    usd, source = want["cost"]
    assert attempt.cost.source == source
    assert attempt.cost.usd == pytest.approx(usd, rel=1e-9, abs=1e-12) if usd is not None \
        else attempt.cost.usd is None
    assert reply.provider == want["provider"]
    assert reply.response_id == want["response_id"] == attempt.response_id
    assert reply.model == want["model"]
    if want["kind"] == "block":
        assert reply.block_reason == want["block_reason"]
        assert reply.block_message == want.get("block_message")
    else:
        assert reply.block_reason is None
    assert reply.truncated == (want["finish"] in ("length", "max_tokens", "MAX_TOKENS"))


def _check_raw(record, attempt, tmp_path):
    raw = json.loads((tmp_path / attempt.response_path).read_text())
    assert read_body(raw) == record["response_body"].encode("utf-8"), "raw bytes byte-exact"
    assert raw["status"] == record["status"]
    assert (tmp_path / attempt.request_path).is_file()


def _check_follow_up(record, want, model, request, reply, server, sink):
    """The next request carries the assistant turn back as the provider needs it."""
    if want["kind"] == "block":
        return
    follow = ModelRequest(
        messages=request.messages + (reply.message,) + tuple(
            ToolMessage(c.id, c.name, "42") for c in reply.tool_calls),
        tools=request.tools, label=request.label + "-next")
    before = len(server.model_calls())
    model.complete(follow, sink)
    sent = server.model_calls()[before].json
    if record["provider"] == "openai":
        assistant = [m for m in sent["messages"] if m["role"] == "assistant"][-1]
        for k, v in want["echo"].items():
            assert assistant[k] == v, f"{k} goes back on the wire"
        wire_ids = [c["wire_id"] if c["wire_id"] is not None else c["id"] for c in want["calls"]]
        assert [c["id"] for c in assistant.get("tool_calls") or []] == wire_ids
        for sent_call, c in zip(assistant.get("tool_calls") or [], want["calls"]):
            for k, v in c["extra"].items():
                assert sent_call[k] == v
        tool_ids = [m["tool_call_id"] for m in sent["messages"] if m["role"] == "tool"]
        assert tool_ids == wire_ids
    elif record["provider"] == "anthropic":
        assistant = [m for m in sent["messages"] if m["role"] == "assistant"][-1]
        assert [_no_nulls(b) for b in want["blocks"]] == [_no_nulls(b) for b in assistant["content"]]
        results = [b for m in sent["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        assert [b["tool_use_id"] for b in results] == [c["id"] for c in want["calls"]]
    else:
        model_turn = [c for c in sent["contents"] if c["role"] == "model"][-1]
        # the SDK re-encodes the signature bytes URL-safe; the API accepts either alphabet
        signatures = [_b64(p.get("thoughtSignature")) for p in want["parts"]]
        assert [_b64(p.get("thoughtSignature", p.get("thought_signature")))
                for p in model_turn["parts"]] == signatures
        assert [p["functionCall"]["name"] for p in model_turn["parts"] if "functionCall" in p] \
            == [c["name"] for c in want["calls"]]


def _b64(text):
    if text is None:
        return None
    return base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4))


def _no_nulls(value):
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value

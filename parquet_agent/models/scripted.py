"""`ScriptedModel`: the test double for the whole library (no network).

`ScriptedModel(replies, name="scripted")` answers each `complete` call with the next script item,
or, when `replies` is callable, with `replies(request)`. An item is a `str` (final text), a
`ToolCall` or a list of them, a `dict` `{"text": ..., "tool_calls": [{"name", "arguments",
"id"?}]}` (what `factory.build_model` reads from a `script` JSON file), or a full `Reply`.
It records every request in `.requests`, and raises `ScriptExhaustedError` (after recording the
request) when the script has no item left. Like the HTTP adapters it writes the request and the
reply as JSON into the sink (`<label>.attempt-01.request.json` / `.response.json`), so offline runs
leave raw files too; the attempt has cost 0 from source `price_table` with table `offline`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict
from typing import Any, Callable, Sequence, Union

from parquet_agent.errors import ScriptExhaustedError
from parquet_agent.files import utc_now
from parquet_agent.models.protocol import (
    AssistantMessage,
    Attempt,
    Cost,
    ModelRequest,
    ModelResult,
    RawSink,
    Reply,
    ToolCall,
    Usage,
)

SCHEMA_VERSION = 1
ScriptItem = Union[str, ToolCall, Sequence[ToolCall], dict, Reply]


class ScriptedModel:
    provider = "scripted"

    def __init__(
        self,
        replies: Sequence[ScriptItem] | Callable[[ModelRequest], ScriptItem],
        name: str = "scripted",
        model: str = "scripted",
    ):
        self.name = name
        self.model = model
        self._script = replies if callable(replies) else list(replies)
        self._next = 0
        self._lock = threading.Lock()
        self.requests: list[ModelRequest] = []

    def _item(self, request: ModelRequest) -> ScriptItem:
        with self._lock:
            self.requests.append(request)
            if callable(self._script):
                return self._script(request)
            if self._next >= len(self._script):
                raise ScriptExhaustedError(
                    f"scripted model {self.name!r} was asked for reply #{self._next + 1} "
                    f"({request.label}) but its script holds {len(self._script)}; add replies "
                    "or check why the agent made more calls than expected"
                )
            item = self._script[self._next]
            self._next += 1
            return item

    def complete(self, request: ModelRequest, sink: RawSink) -> ModelResult:
        return offline_complete(
            request, sink, lambda: to_reply(self._item(request), self.model, self.provider),
            model=self.model, provider=self.provider,
            source=f"{self.provider} model {self.name!r} (no network)")


def offline_complete(request: ModelRequest, sink: RawSink, answer: Callable[[], Reply], *,
                     model: str, provider: str, source: str) -> ModelResult:
    """One offline call with the audit trail of an HTTP one: the request written to the sink,
    `answer()` asked, the reply written, and an attempt record (cost 0, no HTTP)."""
    started = utc_now()
    t0 = time.perf_counter()
    name = f"{request.label}.attempt-01"
    request_path = sink.write(f"{name}.request.json", _dump({
        "schema_version": SCHEMA_VERSION, "kind": "offline_request", "model": model,
        "provider": provider, "request": request_json(request)}))
    reply = answer()
    response_path = sink.write(f"{name}.response.json", _dump({
        "schema_version": SCHEMA_VERSION, "kind": "offline_response", "source": source,
        "reply": asdict(reply)}))
    return ModelResult(reply, (offline_attempt(
        request, model, provider, started, t0, reply, request_path, response_path),))


def offline_attempt(request: ModelRequest, model: str, provider: str, started: str, t0: float,
                    reply: Reply, request_path: str, response_path: str) -> Attempt:
    """The attempt record of an offline call (scripted or baseline): cost 0, no HTTP."""
    return Attempt(
        label=request.label, number=1, purpose=request.purpose, requested_model=model,
        requested_provider=provider, actual_model=model, actual_provider=provider,
        temperature=request.settings.temperature, reasoning_effort=request.settings.reasoning_effort,
        started_at=started, ended_at=utc_now(), queue_ms=0.0,
        duration_ms=round((time.perf_counter() - t0) * 1000.0, 3), http_status=None,
        outcome="ok", error=None, response_id=reply.response_id,
        finish_reason=reply.finish_reason, usage=reply.usage,
        cost=Cost(0.0, "price_table", "offline", None, f"{provider} model: no API call"),
        request_path=request_path, response_path=response_path,
    )


def to_reply(item: ScriptItem, model: str, provider: str) -> Reply:
    """Normalise one script item to a `Reply`."""
    if isinstance(item, Reply):
        return item
    text: str | None = None
    calls: tuple[ToolCall, ...] = ()
    if isinstance(item, str):
        text = item
    elif isinstance(item, ToolCall):
        calls = (item,)
    elif isinstance(item, dict):
        text = item.get("text")
        calls = tuple(
            c if isinstance(c, ToolCall) else ToolCall(
                id=c.get("id") or f"call_{i}", name=c["name"], arguments=dict(c.get("arguments", {})))
            for i, c in enumerate(item.get("tool_calls", ())))
    elif isinstance(item, (list, tuple)) and all(isinstance(c, ToolCall) for c in item):
        calls = tuple(item)
    else:
        raise TypeError(f"unsupported script item {item!r}: use str, ToolCall(s), dict or Reply")
    return Reply(
        text=text, tool_calls=calls, finish_reason="tool_calls" if calls else "stop",
        response_id=None, model=model, provider=provider, usage=Usage(0, 0, 0, 0),
        message=AssistantMessage(text=text, tool_calls=calls),
    )


def request_json(request: ModelRequest) -> dict[str, Any]:
    """A `ModelRequest` as plain JSON data (what offline models write as their raw request)."""
    return asdict(request)


def _dump(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False, indent=1, default=str).encode("utf-8")


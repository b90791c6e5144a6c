"""Anthropic Messages wire format for `FakeServer`. `anthropic_server(script)`; pass
`server.url` (no `/v1`) as the SDK's `base_url`. Serves `POST /v1/messages`, `GET /v1/models`.
With `anthropic_server(script, prompt_cache=PromptCache())` the input side of `usage` is what
the real API would bill for the request (cache reads only of prefixes asked to be cached
before, writes counted; see `prompt_cache.py`), not `FakeReply.input_tokens`."""

from __future__ import annotations

import itertools

from parquet_agent.models.fakes.prompt_cache import PromptCache
from parquet_agent.models.fakes.server import FakeReply, FakeServer, ReceivedRequest


class AnthropicWire:
    name = "anthropic"

    def __init__(self, prompt_cache: PromptCache | None = None) -> None:
        self._ids = itertools.count(1)
        self.prompt_cache = prompt_cache

    def is_model_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0].endswith("/v1/messages")

    def render(self, reply: FakeReply, request: ReceivedRequest) -> dict:
        n = next(self._ids)
        content: list[dict] = []
        if reply.text is not None:
            content.append({"type": "text", "text": reply.text})
        for i, c in enumerate(reply.tool_calls):
            content.append({"type": "tool_use", "id": c.id or f"toolu_fake{n}_{i}",
                            "name": c.name, "input": c.arguments})
        usage = {
            # input_tokens excludes cache reads (and writes) on this wire format
            "input_tokens": reply.input_tokens - reply.cached_tokens - reply.cache_write_tokens,
            "output_tokens": reply.output_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cached_tokens,
            "service_tier": "standard",
        }
        if self.prompt_cache is not None and isinstance(request.json, dict):
            usage.update(self.prompt_cache.usage(request.json))
        return {
            "id": f"msg_fake{n}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or (request.json or {}).get("model", "fake-model"),
            "content": content,
            "stop_reason": reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn"),
            "stop_sequence": None,
            "usage": usage,
        }

    def render_empty(self, request: ReceivedRequest) -> dict:
        body = self.render(FakeReply(input_tokens=5, output_tokens=0), request)
        body["content"] = []
        return body

    def render_error(self, status: int, message: str) -> dict:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error",
                400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message},
                "request_id": "req_fake"}

    def render_get(self, request: ReceivedRequest) -> tuple[int, dict]:
        if request.path.split("?")[0].endswith("/v1/models"):
            return 200, {"data": [{"type": "model", "id": "fake-model", "display_name": "Fake",
                                   "created_at": "2026-01-01T00:00:00Z"}],
                         "has_more": False, "first_id": "fake-model", "last_id": "fake-model"}
        return 404, self.render_error(404, f"no route {request.path}")

    def api_key(self, request: ReceivedRequest) -> str:
        if "x-api-key" in request.headers:
            return request.headers["x-api-key"]
        return request.headers.get("authorization", "").removeprefix("Bearer ").strip()


def anthropic_server(script, prompt_cache: PromptCache | None = None,
                     batches=None) -> FakeServer:
    return FakeServer(AnthropicWire(prompt_cache), script, batches)

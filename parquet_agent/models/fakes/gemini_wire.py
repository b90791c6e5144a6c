"""Gemini generateContent wire format for `FakeServer`. `gemini_server(script)`; pass
`server.url` as `HttpOptions(base_url=...)`. Serves `POST /{v1,v1beta,v1alpha}/models/
{model}:generateContent` and `GET .../models`. `FakeReply.thought_signature` is sent beside
each `functionCall` part, as Gemini 3 does."""

from __future__ import annotations

import itertools
import re
from urllib.parse import parse_qs, urlsplit

from parquet_agent.models.fakes.server import FakeReply, FakeServer, ReceivedRequest

_CALL = re.compile(r"^/v1(beta|alpha)?/models/([^/:]+):generateContent$")


class GeminiWire:
    name = "gemini"

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def is_model_call(self, method: str, path: str) -> bool:
        return method == "POST" and _CALL.match(urlsplit(path).path) is not None

    def render(self, reply: FakeReply, request: ReceivedRequest) -> dict:
        n = next(self._ids)
        m = _CALL.match(urlsplit(request.path).path)
        model = reply.model or (m.group(2) if m else "fake-model")
        parts: list[dict] = []
        if reply.text is not None:
            parts.append({"text": reply.text})
        for c in reply.tool_calls:
            part: dict = {"functionCall": {"name": c.name, "args": c.arguments}}
            if c.id:
                part["functionCall"]["id"] = c.id
            if reply.thought_signature:
                part["thoughtSignature"] = reply.thought_signature
            parts.append(part)
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts},
                 "finishReason": reply.finish_reason or "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": reply.input_tokens,
                "candidatesTokenCount": reply.output_tokens - reply.reasoning_tokens,
                "thoughtsTokenCount": reply.reasoning_tokens,
                "cachedContentTokenCount": reply.cached_tokens,
                "totalTokenCount": reply.input_tokens + reply.output_tokens,
            },
            "modelVersion": model,
            "responseId": f"fake-resp-{n}",
        }

    def render_empty(self, request: ReceivedRequest) -> dict:
        # no candidates and no block: malformed (a `promptFeedback.blockReason` is a block)
        return {"candidates": [],
                "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
                "modelVersion": "fake-model", "responseId": "fake-empty"}

    def render_error(self, status: int, message: str) -> dict:
        kind = {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED",
                403: "PERMISSION_DENIED", 404: "NOT_FOUND", 503: "UNAVAILABLE"}.get(status,
                                                                                    "INTERNAL")
        return {"error": {"code": status, "message": message, "status": kind}}

    def render_get(self, request: ReceivedRequest) -> tuple[int, dict]:
        if urlsplit(request.path).path.endswith("/models"):
            return 200, {"models": [{"name": "models/fake-model", "displayName": "Fake"}]}
        return 404, self.render_error(404, f"no route {request.path}")

    def api_key(self, request: ReceivedRequest) -> str:
        if "x-goog-api-key" in request.headers:
            return request.headers["x-goog-api-key"]
        return parse_qs(urlsplit(request.path).query).get("key", [""])[0]


def gemini_server(script, batches=None) -> FakeServer:
    return FakeServer(GeminiWire(), script, batches)

"""OpenAI Chat Completions wire format for `FakeServer`, with OpenRouter gateway fields
(`provider`, `usage.cost`). `openai_server(script)` gives a server; pass `server.url + "/v1"`
as the SDK's `base_url`. Serves `POST /v1/chat/completions` and `GET /v1/models`."""

from __future__ import annotations

import itertools
import json
import time

from parquet_agent.models.fakes.server import FakeReply, FakeServer, ReceivedRequest


class OpenAIWire:
    name = "openai"

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def is_model_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0].endswith("/chat/completions")

    def render(self, reply: FakeReply, request: ReceivedRequest) -> dict:
        n = next(self._ids)
        calls = [
            {
                "id": c.id if c.id is not None else f"call_{i}",
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.arguments if isinstance(c.arguments, str)
                    else json.dumps(c.arguments),
                },
            }
            for i, c in enumerate(reply.tool_calls)
        ]
        message = {"role": "assistant", "content": reply.text, "refusal": None,
                   **(reply.message_extra or {})}
        if calls:
            message["tool_calls"] = calls
        usage = {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens + reply.hidden_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0,
                                      "cache_write_tokens": reply.cache_write_tokens},
            "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        }
        if reply.cost is not None:
            usage["cost"] = reply.cost
            usage["is_byok"] = reply.upstream_cost is not None
            if reply.upstream_cost is not None:
                usage["cost_details"] = {"upstream_inference_cost": reply.upstream_cost}
        body = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or (request.json or {}).get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
                    "logprobs": None,
                }
            ],
            "usage": usage,
            "system_fingerprint": "fp_fake",
        }
        if reply.provider is not None:
            body["provider"] = reply.provider
        return body

    def render_empty(self, request: ReceivedRequest) -> dict:
        return {"id": "chatcmpl-empty", "object": "chat.completion", "created": 0,
                "model": (request.json or {}).get("model", "fake-model"), "choices": [],
                "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}}

    def render_error(self, status: int, message: str) -> dict:
        return {"error": {"message": message, "type": "fake_error", "param": None,
                          "code": status}}

    def render_get(self, request: ReceivedRequest) -> tuple[int, dict]:
        if request.path.split("?")[0].endswith("/models"):
            return 200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"},
                # OpenRouter-style pricing, USD per token as strings
                {"id": "openai/gpt-4o-mini", "object": "model", "created": 0, "owned_by": "openai",
                 "pricing": {"prompt": "0.00000015", "completion": "0.0000006",
                             "input_cache_read": "0.000000075"}}]}
        return 404, self.render_error(404, f"no route {request.path}")

    def api_key(self, request: ReceivedRequest) -> str:
        auth = request.headers.get("authorization", "")
        return auth.removeprefix("Bearer ").strip()


def openai_server(script, batches=None) -> FakeServer:
    return FakeServer(OpenAIWire(), script, batches)

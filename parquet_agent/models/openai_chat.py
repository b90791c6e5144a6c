"""OpenAI Chat Completions adapter: OpenAI, OpenAI-compatible gateways (OpenRouter) and local
servers (vLLM, Ollama, llama.cpp) through `base_url`, over the official `openai` SDK.

`OpenAIChatModel(client, transport, name=..., model=..., ...)` takes an `openai.OpenAI` client
built with `max_retries=0` and `http_client=httpx2.Client(transport=transport)` (see
`factory.build_model`). Request fields, not class flags, carry provider differences:

- `provider_pin=("openai", ...)` adds OpenRouter's `provider: {order, allow_fallbacks: false}`;
  the reply's `provider` is checked against it. A mismatch is a note, and fails the attempt
  (not retryable) when `fail_on_pin_mismatch`. A reply without `provider` is `unverified`.
- `tool_call_content=""` sends `content: ""` instead of `null` on assistant tool-call turns
  (llama.cpp's server answers 500 to null).
- `max_tokens_field="max_tokens"` for servers that do not know `max_completion_tokens`.
- Temperature is sent unless the price table marks the model as not taking one (reasoning
  models); reasoning effort is sent as `reasoning_effort`.
- The gateway-reported cost is `usage.cost` (OpenRouter, USD).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

import openai

from parquet_agent.models.http_model import NOT_SUPPORTED, HttpModel, SentSettings, CallOutcome, tokens
from parquet_agent.models.protocol import (
    AssistantMessage,
    GenerationSettings,
    ModelRequest,
    RawSink,
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from parquet_agent.models.retry import MalformedReplyError


class OpenAIChatModel(HttpModel):
    provider = "openai"
    _sdk_errors = (openai.APIError,)

    def __init__(
        self,
        client: openai.OpenAI,
        transport,
        *,
        provider_pin: tuple[str, ...] | None = None,
        fail_on_pin_mismatch: bool = True,
        tool_call_content: str | None = None,
        max_tokens_field: str = "max_completion_tokens",
        **kwargs: Any,
    ):
        super().__init__(transport=transport, **kwargs)
        self.client = client
        self.provider_pin = tuple(provider_pin) if provider_pin else None
        self.fail_on_pin_mismatch = fail_on_pin_mismatch
        self.tool_call_content = tool_call_content
        self.max_tokens_field = max_tokens_field

    def _list_models(self) -> list[str]:
        return [m.id for m in self.client.models.list().data]

    def gateway_prices(self, sink: RawSink) -> dict[str, dict[str, float | None]]:
        """USD per 1M tokens per model from a gateway's model list (OpenRouter publishes
        `pricing: {prompt, completion, input_cache_read, internal_reasoning}` in USD per token).
        One metadata GET, recorded under `meta/`; models without pricing are left out."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        with self.transport.exchange(sink, f"meta/gateway-prices.{stamp}"):
            models = self.client.models.list().data
        out = {}
        for m in models:
            pricing = (m.model_extra or {}).get("pricing")
            if not isinstance(pricing, dict):
                continue
            per_m = {k: _per_million(pricing.get(v)) for k, v in (
                ("input", "prompt"), ("output", "completion"),
                ("cached_input", "input_cache_read"), ("reasoning", "internal_reasoning"))}
            if per_m["input"] is not None and per_m["output"] is not None:
                out[m.id] = per_m
        return out

    def _sent_settings(self, settings: GenerationSettings) -> SentSettings:
        return self._table_settings(settings)

    def wire_messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in request.messages:
            if isinstance(m, SystemMessage):
                out.append({"role": "system", "content": m.text})
            elif isinstance(m, UserMessage):
                out.append({"role": "user", "content": m.text})
            elif isinstance(m, AssistantMessage):
                msg: dict[str, Any] = {"role": "assistant", "content": m.text}
                if m.tool_calls:
                    if m.text is None:
                        msg["content"] = self.tool_call_content
                    msg["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": c.raw_arguments
                                if c.raw_arguments is not None
                                else json.dumps(c.arguments),
                            },
                        }
                        for c in m.tool_calls
                    ]
                out.append(msg)
            elif isinstance(m, ToolMessage):
                out.append({"role": "tool", "tool_call_id": m.call_id, "content": m.content})
            else:
                raise TypeError(f"unknown message type {type(m).__name__}")
        return out

    def _call(self, request: ModelRequest, sent: SentSettings) -> CallOutcome:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self.wire_messages(request),
            self.max_tokens_field: sent.max_output_tokens,
        }
        if request.tools:
            kwargs["tools"] = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description,
                              "parameters": t.parameters}}
                for t in request.tools
            ]
            kwargs["tool_choice"] = request.settings.tool_choice
        if isinstance(sent.temperature, (int, float)):
            kwargs["temperature"] = sent.temperature
        if sent.reasoning_effort and sent.reasoning_effort != NOT_SUPPORTED:
            kwargs["reasoning_effort"] = sent.reasoning_effort
        if self.provider_pin:
            kwargs["extra_body"] = {
                "provider": {"order": list(self.provider_pin), "allow_fallbacks": False}
            }
        resp = self.client.chat.completions.create(**kwargs)
        return self._parse(resp)

    def _parse(self, resp) -> CallOutcome:
        usage = _usage(resp.usage)
        model = getattr(resp, "model", None)
        if not resp.choices:
            raise MalformedReplyError("reply has no choices", usage=usage, model=model,
                                      response_id=resp.id)
        choice = resp.choices[0]
        calls = []
        for tc in choice.message.tool_calls or ():
            raw = tc.function.arguments
            try:
                args = json.loads(raw) if raw and raw.strip() else {}
            except json.JSONDecodeError as exc:
                raise MalformedReplyError(
                    f"tool call {tc.function.name!r} has arguments that are not JSON: {exc}",
                    usage=usage, model=model, response_id=resp.id,
                ) from exc
            if not isinstance(args, dict):
                raise MalformedReplyError(
                    f"tool call {tc.function.name!r} arguments are not a JSON object",
                    usage=usage, model=model, response_id=resp.id,
                )
            calls.append(ToolCall(id=tc.id, name=tc.function.name, arguments=args,
                                  raw_arguments=raw))
        text = choice.message.content
        named = getattr(resp, "provider", None) or (resp.model_extra or {}).get("provider")
        provider = self._provider_identity(named if isinstance(named, str) else None)
        notes, fatal = self._check_pin(named)
        extra = (resp.usage.model_extra or {}) if resp.usage is not None else {}
        gateway = extra.get("cost")
        reply = Reply(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=choice.finish_reason,
            response_id=resp.id,
            model=model,
            provider=provider,
            usage=usage,
            message=AssistantMessage(text=text, tool_calls=tuple(calls)),
        )
        return CallOutcome(reply, float(gateway) if isinstance(gateway, (int, float)) else None,
                        tuple(notes), fatal)

    def _check_pin(self, named) -> tuple[list[str], str | None]:
        if not self.provider_pin:
            return [], None
        if not named:
            return [f"provider pin {list(self.provider_pin)} unverified: the reply names no "
                    "provider"], None
        allowed = {_slug(p) for p in self.provider_pin}
        if _slug(str(named)) in allowed:
            return [f"provider pin {list(self.provider_pin)} confirmed: {named}"], None
        msg = f"provider pin mismatch: reply served by {named!r}, pin is {list(self.provider_pin)}"
        return [msg], (msg if self.fail_on_pin_mismatch else None)


def _usage(u) -> Usage:
    if u is None:
        return Usage()
    pd = getattr(u, "prompt_tokens_details", None)
    cd = getattr(u, "completion_tokens_details", None)
    return Usage(
        input_tokens=tokens(u.prompt_tokens),
        output_tokens=tokens(u.completion_tokens),
        cached_tokens=tokens(getattr(pd, "cached_tokens", None)) if pd else None,
        reasoning_tokens=tokens(getattr(cd, "reasoning_tokens", None)) if cd else None,
    )


def _per_million(value) -> float | None:
    try:
        return None if value in (None, "") else float(value) * 1_000_000
    except (TypeError, ValueError):
        return None


def _slug(name: str) -> str:
    # OpenRouter names providers "Together", "Google AI Studio"; pins use slugs ("together").
    return re.sub(r"[^a-z0-9]", "", name.lower())

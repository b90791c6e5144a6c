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
- The gateway-reported cost is `usage.cost` (OpenRouter, USD; with BYOK plus the upstream's
  `cost_details.upstream_inference_cost`).
- Provider fields the next request needs (DeepSeek `reasoning_content`, OpenRouter/Ollama
  `reasoning`, Gemini's `extra_content`) are kept and sent back: see `wire_echo`.
- Tool call ids are made unique (`""` from Gemini's OpenAI endpoint); the wire keeps its own.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

import openai

import parquet_agent.models.wire_echo as wire_echo
from parquet_agent.models.http_model import (
    NOT_SUPPORTED,
    HttpModel,
    SentSettings,
    CallOutcome,
    tokens,
    unique_call_ids,
)
from parquet_agent.models.reply_check import verdict
from parquet_agent.models.protocol import (
    AssistantMessage,
    GenerationSettings,
    ModelRequest,
    RawSink,
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from parquet_agent.models.retry import MalformedReplyError


class OpenAIChatModel(HttpModel):
    provider = "openai"
    reply_keys = ("choices",)
    structured_modes = ("json_schema", "json_object", "tool", "text")
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
        sent_ids: dict[str, str] = {}  # our unique call id -> the id the provider sent
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
                    msg["tool_calls"] = [_wire_call(c) for c in m.tool_calls]
                    sent_ids.update((c.id, c.sent_id) for c in m.tool_calls)
                wire_echo.restore(msg, m.provider_data)
                out.append(msg)
            elif isinstance(m, ToolMessage):
                out.append({"role": "tool", "tool_call_id": sent_ids.get(m.call_id, m.call_id),
                            "content": m.content})
            else:
                raise TypeError(f"unknown message type {type(m).__name__}")
        return out

    def _call(self, request: ModelRequest, sent: SentSettings):
        return self.client.chat.completions.create(**self.request_kwargs(request, sent))

    def request_kwargs(self, request: ModelRequest, sent: SentSettings) -> dict[str, Any]:
        """The SDK's `create` arguments for `request` (a batch sends them as the body)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self.wire_messages(request),
            self.max_tokens_field: sent.max_output_tokens,
        }
        tools = list(request.tools)
        schema = self.wire_schema(request)
        if schema is not None and schema.mode == "tool":  # a forced call carries the object
            tools.append(ToolSpec(schema.name, "Record the answer as this object.",
                                  schema.schema))
        if tools:
            kwargs["tools"] = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description,
                              "parameters": t.parameters}}
                for t in tools
            ]
            kwargs["tool_choice"] = request.settings.tool_choice
            if schema is not None and schema.mode == "tool":
                kwargs["tool_choice"] = _named(schema.name)
            elif request.settings.tool_choice == "required" and len(tools) == 1:
                # the named form: local servers (llama.cpp) force it with a grammar
                kwargs["tool_choice"] = _named(tools[0].name)
        if isinstance(sent.temperature, (int, float)):
            kwargs["temperature"] = sent.temperature
        if sent.reasoning_effort and sent.reasoning_effort != NOT_SUPPORTED:
            kwargs["reasoning_effort"] = sent.reasoning_effort
        if schema is not None and schema.mode == "json_schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema.name, "schema": schema.schema, "strict": True}}
        elif schema is not None and schema.mode == "json_object":
            # JSON mode with the schema beside it: llama.cpp's server compiles it to a grammar
            kwargs["response_format"] = {"type": "json_object", "schema": schema.schema}
        if self.provider_pin:
            kwargs["extra_body"] = {
                "provider": {"order": list(self.provider_pin), "allow_fallbacks": False}
            }
        return kwargs

    def parse_body(self, body: dict) -> CallOutcome:
        """A reply body read from elsewhere than an SDK call (a batch's result file)."""
        return self._parse(openai.types.chat.ChatCompletion.model_validate(body), body)

    def _parse(self, resp, raw: dict) -> CallOutcome:
        usage, usage_notes = _usage(resp.usage)
        model = getattr(resp, "model", None)
        choice = resp.choices[0] if resp.choices else None
        message = choice.message if choice is not None else None
        check = verdict(has_choice=message is not None,
                        finish_reason=choice.finish_reason if choice is not None else None,
                        block_message=getattr(message, "refusal", None) or None)
        if check.kind == "malformed":
            raise MalformedReplyError(check.reason or "malformed reply", usage=usage,
                                      model=model, response_id=resp.id)
        wire_calls = list((message.tool_calls or ()) if message is not None else ())
        calls = unique_call_ids([_tool_call(tc) for tc in wire_calls])
        text = message.content if message is not None else None
        named = getattr(resp, "provider", None) or (resp.model_extra or {}).get("provider")
        provider = self._provider_identity(named if isinstance(named, str) else None)
        notes, fatal = self._check_pin(named)
        gateway, cost_notes = _gateway_cost(resp.usage)
        echo = wire_echo.kept(message.model_extra if message is not None else None,
                              [tc.model_extra for tc in wire_calls])
        reply = Reply(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=choice.finish_reason if choice is not None else None,
            response_id=resp.id,
            model=model,
            provider=provider,
            usage=usage,
            message=AssistantMessage(text=text, tool_calls=tuple(calls), provider_data=echo),
            block_reason=check.reason if check.kind == "block" else None,
            block_message=check.message if check.kind == "block" else None,
        )
        return CallOutcome(reply, gateway, tuple(notes + usage_notes + cost_notes), fatal)

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


def _tool_call(tc) -> ToolCall:
    """One wire tool call; argument text that does not parse (invalid JSON, control characters,
    nesting too deep for the parser) or is not an object is kept raw with the reason."""
    raw = tc.function.arguments
    args: Any = {}
    error = None
    try:
        args = json.loads(raw) if raw and raw.strip() else {}
    except (ValueError, RecursionError) as exc:
        error = f"arguments are not valid JSON: {exc}"
    if error is None and not isinstance(args, dict):
        error = f"arguments are JSON {type(args).__name__}, not an object"
    return ToolCall(id=tc.id or "", name=tc.function.name, arguments=args if error is None else {},
                    raw_arguments=raw, arguments_error=error)


def _named(tool: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool}}


def _wire_call(c: ToolCall) -> dict[str, Any]:
    arguments = c.raw_arguments if c.raw_arguments is not None else json.dumps(c.arguments)
    return {"id": c.sent_id, "type": "function",
            "function": {"name": c.name, "arguments": arguments}}


def _usage(u) -> tuple[Usage, list[str]]:
    """Normalised usage, and notes. A total above prompt + completion is hidden reasoning
    (Gemini's OpenAI endpoint counts thinking only in `total_tokens`): added to output and
    reasoning so it is priced and capped."""
    if u is None:
        return Usage(), []
    pd = getattr(u, "prompt_tokens_details", None)
    cd = getattr(u, "completion_tokens_details", None)
    output = tokens(u.completion_tokens)
    reasoning = tokens(getattr(cd, "reasoning_tokens", None)) if cd else None
    notes = []
    total = tokens(getattr(u, "total_tokens", None))
    parts = (tokens(u.prompt_tokens) or 0) + (output or 0)
    if total is not None and output is not None and total > parts:
        hidden = total - parts
        output += hidden
        reasoning = (reasoning or 0) + hidden
        notes.append(f"total_tokens {total} exceeds prompt + completion {parts}: the "
                     f"{hidden} hidden tokens are counted as reasoning")
    # a declared field in newer SDKs, an extra one in older
    write = None if pd is None else getattr(pd, "cache_write_tokens", None)
    if write is None and pd is not None:
        write = (pd.model_extra or {}).get("cache_write_tokens")
    return Usage(
        input_tokens=tokens(u.prompt_tokens),
        output_tokens=output,
        cached_tokens=tokens(getattr(pd, "cached_tokens", None)) if pd else None,
        reasoning_tokens=reasoning,
        cache_write_tokens=tokens(write) if isinstance(write, (int, float)) else None,
    ), notes


def _gateway_cost(u) -> tuple[float | None, list[str]]:
    """OpenRouter's `usage.cost` (USD). With your own key (BYOK) `cost` is only OpenRouter's
    fee; the upstream's bill is `cost_details.upstream_inference_cost`: the cost is the sum."""
    extra = (u.model_extra or {}) if u is not None else {}
    cost = extra.get("cost")
    if not isinstance(cost, (int, float)) or isinstance(cost, bool):
        return None, []
    details = extra.get("cost_details")
    if not isinstance(details, dict):
        details = {}
    upstream = details.get("upstream_inference_cost")
    if extra.get("is_byok") and isinstance(upstream, (int, float)):
        return float(cost) + float(upstream), [
            f"BYOK: gateway fee ${float(cost):.6f} + upstream inference ${float(upstream):.6f}"]
    return float(cost), []


def _per_million(value) -> float | None:
    try:
        return None if value in (None, "") else float(value) * 1_000_000
    except (TypeError, ValueError):
        return None


def _slug(name: str) -> str:
    # OpenRouter names providers "Together", "Google AI Studio"; pins use slugs ("together").
    return re.sub(r"[^a-z0-9]", "", name.lower())

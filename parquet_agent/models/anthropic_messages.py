"""Anthropic Messages adapter over the official `anthropic` SDK (tool_use / tool_result blocks).

`AnthropicMessagesModel(client, transport, ...)` takes an `anthropic.Anthropic` client built with
`max_retries=0` and the recording `httpx2.Client` (see `factory.build_model`).

- System messages go to `system`; consecutive tool results become one user message of
  `tool_result` blocks (the API wants one per `tool_use` id, right after the assistant turn).
- An assistant turn this adapter produced keeps its exact content blocks in
  `provider_data["anthropic"]["content"]` and is replayed from them, so thinking blocks and their
  signatures go back unchanged.
- anthropic 2.14.0's `messages.create` has no `temperature`: recorded as "not supported" and
  not sent. Reasoning effort goes out as `output_config: {effort}`.
- Tokens: the wire's `input_tokens` excludes cache reads and writes; we report their sum, with
  cache reads as `cached_tokens` and writes as `cache_write_tokens` (priced at the write rate).
- Prompt caching (on unless the model entry says `cache_prompts = false`; recorded in every
  attempt's notes): `cache_control` breakpoints on the system prompt, the last tool definition
  and the last block of the latest user turn (the newest tool result, or a judge's evidence),
  so each turn of the agent loop reads the prefix the previous turn wrote.
"""

from __future__ import annotations

from typing import Any

import anthropic

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
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from parquet_agent.models.retry import MalformedReplyError


class AnthropicMessagesModel(HttpModel):
    provider = "anthropic"
    reply_keys = ("content",)
    _sdk_errors = (anthropic.APIError,)

    def __init__(self, client: anthropic.Anthropic, transport, *, cache_prompts: bool = True,
                 **kwargs: Any):
        super().__init__(transport=transport, **kwargs)
        self.client = client
        self.cache_prompts = cache_prompts

    def _notes(self, request: ModelRequest) -> tuple[str, ...]:
        if self.cache_prompts:
            return ("prompt caching on: cache_control on system + tools and the latest user turn",)
        return ("prompt caching off (cache_prompts = false)",)

    def _list_models(self) -> list[str]:
        return [m.id for m in self.client.models.list().data]

    def _sent_settings(self, settings: GenerationSettings) -> SentSettings:
        sent = self._table_settings(settings)
        notes = list(sent.notes)
        temperature: float | str | None = sent.temperature
        if temperature not in (None, NOT_SUPPORTED):
            temperature = NOT_SUPPORTED
            notes.append(f"temperature {settings.temperature} not sent: anthropic "
                         f"{anthropic.__version__} messages.create takes no temperature")
        return SentSettings(temperature, sent.reasoning_effort, sent.max_output_tokens,
                            tuple(notes))

    def wire_messages(self, request: ModelRequest) -> tuple[str | None, list[dict[str, Any]]]:
        system = [m.text for m in request.messages if isinstance(m, SystemMessage)]
        out: list[dict[str, Any]] = []

        def user_blocks() -> list[dict[str, Any]]:
            # Tool results and a following user text share one user turn.
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                return out[-1]["content"]
            out.append({"role": "user", "content": []})
            return out[-1]["content"]

        for m in request.messages:
            if isinstance(m, SystemMessage):
                continue
            if isinstance(m, UserMessage):
                if out and out[-1]["role"] == "user":
                    user_blocks().append({"type": "text", "text": m.text})
                else:
                    out.append({"role": "user", "content": m.text})
            elif isinstance(m, ToolMessage):
                user_blocks().append({"type": "tool_result", "tool_use_id": m.call_id,
                                      "content": m.content})
            elif isinstance(m, AssistantMessage):
                kept = (m.provider_data or {}).get("anthropic", {}).get("content")
                if kept is not None:
                    out.append({"role": "assistant", "content": kept})
                    continue
                blocks: list[dict[str, Any]] = []
                if m.text:
                    blocks.append({"type": "text", "text": m.text})
                for c in m.tool_calls:
                    blocks.append({"type": "tool_use", "id": c.id, "name": c.name,
                                   "input": c.arguments})
                out.append({"role": "assistant", "content": blocks})
            else:
                raise TypeError(f"unknown message type {type(m).__name__}")
        return ("\n\n".join(system) if system else None), out

    def _call(self, request: ModelRequest, sent: SentSettings):
        return self.client.messages.create(**self.request_kwargs(request, sent))

    def request_kwargs(self, request: ModelRequest, sent: SentSettings) -> dict[str, Any]:
        """The SDK's `create` arguments for `request` (a batch sends them as `params`)."""
        system, messages = self.wire_messages(request)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": sent.max_output_tokens,
            "messages": messages,
        }
        if system is not None:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = [{"name": t.name, "description": t.description,
                                "input_schema": t.parameters} for t in request.tools]
            choice = request.settings.tool_choice
            kwargs["tool_choice"] = {"type": "any" if choice == "required" else choice}
        schema = self.wire_schema(request)
        if schema is not None:  # a forced call of one tool: its input is the object
            kwargs["tools"] = [*kwargs.get("tools", ()), {
                "name": schema.name, "description": "Record the answer as this object.",
                "input_schema": schema.schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": schema.name}
        if sent.reasoning_effort:
            kwargs["output_config"] = {"effort": sent.reasoning_effort}
        if self.cache_prompts:
            _add_cache_breakpoints(kwargs)
        return kwargs

    def parse_body(self, body: dict) -> CallOutcome:
        """A reply body read from elsewhere than an SDK call (a batch's results)."""
        return self._parse(anthropic.types.Message.model_validate(body), body)

    def _parse(self, resp, raw: dict) -> CallOutcome:
        usage = _usage(resp.usage)
        check = verdict(has_choice=bool(resp.content), finish_reason=resp.stop_reason)
        if check.kind == "malformed":
            raise MalformedReplyError(check.reason or "malformed reply", usage=usage,
                                      model=resp.model, response_id=resp.id)
        texts, calls = [], []
        for block in resp.content or ():
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                if isinstance(block.input, dict):
                    calls.append(ToolCall(id=block.id, name=block.name,
                                          arguments=dict(block.input)))
                else:
                    calls.append(ToolCall(id=block.id, name=block.name, arguments={},
                                          arguments_error="tool_use input is not an object"))
        calls = unique_call_ids(calls)
        text = "".join(texts) if texts else None
        content = [b.model_dump(mode="json", exclude_none=True) for b in resp.content or ()]
        reply = Reply(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=resp.stop_reason,
            response_id=resp.id,
            model=resp.model,
            provider=self._provider_identity(None),
            usage=usage,
            message=AssistantMessage(text=text, tool_calls=tuple(calls),
                                     provider_data={"anthropic": {"content": content}}),
            block_reason=check.reason if check.kind == "block" else None,
            block_message=check.message if check.kind == "block" else None,
        )
        return CallOutcome(reply)


def _add_cache_breakpoints(kwargs: dict[str, Any]) -> None:
    """`cache_control` on the system prompt, the last tool and the latest user turn's last block
    (three of the four breakpoints the API allows). Only this request's copies are changed."""
    mark = {"type": "ephemeral"}
    if isinstance(kwargs.get("system"), str):
        kwargs["system"] = [{"type": "text", "text": kwargs["system"], "cache_control": mark}]
    if kwargs.get("tools"):
        kwargs["tools"] = kwargs["tools"][:-1] + [{**kwargs["tools"][-1], "cache_control": mark}]
    messages = kwargs["messages"]
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] != "user":
            continue
        content = messages[i]["content"]
        blocks: list[dict[str, Any]] = ([{"type": "text", "text": content}] if isinstance(content, str)
                  else [dict(b) for b in content])
        if blocks:
            blocks[-1]["cache_control"] = mark
            messages[i] = {**messages[i], "content": blocks}
        break


def _usage(u) -> Usage:
    if u is None:
        return Usage()
    cache_read = tokens(getattr(u, "cache_read_input_tokens", None)) or 0
    cache_write = tokens(getattr(u, "cache_creation_input_tokens", None)) or 0
    details = getattr(u, "output_tokens_details", None)
    thinking = getattr(details, "thinking_tokens", None) if details is not None else None
    return Usage(
        input_tokens=None if u.input_tokens is None else u.input_tokens + cache_read + cache_write,
        output_tokens=tokens(u.output_tokens),
        cached_tokens=cache_read,
        reasoning_tokens=tokens(thinking),
        cache_write_tokens=cache_write,
    )

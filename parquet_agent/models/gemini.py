"""Google Gemini adapter over `google-genai` (generateContent with function calling).

`GeminiModel(client, transport, ...)` takes a `genai.Client` whose `HttpOptions` carry the
recording `httpx2.Client` and no `retry_options` (so the SDK makes one request per call; see
`factory.build_model`). Keep a reference to the client: it closes its HTTP client when
garbage-collected.

- System messages go to `system_instruction`; tool results become `functionResponse` parts
  (`response: {"output": <the tool's text>}`), consecutive ones in one user turn.
- Each model turn keeps its exact parts (JSON form, thought signatures base64) in
  `provider_data["google"]["parts"]` and is replayed from them unchanged: Gemini 3 rejects a
  function call without its `thoughtSignature`.
- Temperature goes to `generation_config.temperature`; reasoning effort
  (`minimal|low|medium|high`) to `thinking_config.thinking_level`; other values are recorded as
  not supported.
- Tokens: input = promptTokenCount (includes cached), output = candidates + thoughts.
- A blocked prompt (`promptFeedback.blockReason`, with `blockReasonMessage`) and a candidate
  that finished with a refusal (`SAFETY`, `RECITATION`, `MODEL_ARMOR`, ... with its
  `finishMessage`) are blocks: an answer carrying the reason, never retried. A reply without
  candidates and without a block, or `MALFORMED_FUNCTION_CALL`, is malformed and retried (see
  `reply_check`). `UNEXPECTED_TOOL_CALL` with the call in it (a function the request did not
  declare) is an answer whose call the tools refuse as an unknown tool; a note says so.
"""

from __future__ import annotations

from typing import Any

from google.genai import errors as genai_errors
from google.genai import types

from parquet_agent.models.http_model import (
    NOT_SUPPORTED,
    HttpModel,
    SentSettings,
    CallOutcome,
    tokens,
    unique_call_ids,
)
from parquet_agent.models.reply_check import UNDECLARED_CALL, verdict
from parquet_agent.models.protocol import (
    AssistantMessage,
    GenerationSettings,
    ModelRequest,
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from parquet_agent.models.retry import MalformedReplyError

_LEVELS = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}


class GeminiModel(HttpModel):
    provider = "google"
    reply_keys = ("candidates", "promptFeedback")
    structured_modes = ("json_schema", "json_object", "tool", "text")
    _sdk_errors = (genai_errors.APIError,)

    def __init__(self, client, transport, **kwargs: Any):
        super().__init__(transport=transport, **kwargs)
        self.client = client

    def _list_models(self) -> list[str]:
        pager = self.client.models.list(config={"page_size": 100})
        return [m.name for m in pager.page]

    def _sent_settings(self, settings: GenerationSettings) -> SentSettings:
        sent = self._table_settings(settings)  # gemini-2.5-*: thinking budgets, not levels
        notes = list(sent.notes)
        effort = sent.reasoning_effort
        if effort not in (None, NOT_SUPPORTED) and effort.lower() not in _LEVELS:
            notes.append(f"reasoning_effort {effort!r} not sent: Gemini thinking levels are "
                         f"{sorted(_LEVELS)}")
            effort = NOT_SUPPORTED
        return SentSettings(sent.temperature, effort, sent.max_output_tokens, tuple(notes))

    def wire_contents(self, request: ModelRequest) -> tuple[str | None, list[types.Content]]:
        system = [m.text for m in request.messages if isinstance(m, SystemMessage)]
        out: list[types.Content] = []
        wire_ids: set[str] = set()  # call ids the API itself gave (echoed in functionResponse.id)
        for m in request.messages:
            if isinstance(m, SystemMessage):
                continue
            if isinstance(m, UserMessage):
                out.append(types.Content(role="user", parts=[types.Part(text=m.text)]))
            elif isinstance(m, AssistantMessage):
                kept = (m.provider_data or {}).get("google", {}).get("parts")
                if kept is not None:
                    parts = [types.Part.model_validate(p) for p in kept]
                    wire_ids.update(p.function_call.id for p in parts
                                    if p.function_call is not None and p.function_call.id)
                else:
                    parts = ([types.Part(text=m.text)] if m.text else []) + [
                        types.Part(function_call=types.FunctionCall(name=c.name, args=c.arguments))
                        for c in m.tool_calls
                    ]
                out.append(types.Content(role="model", parts=parts))
            elif isinstance(m, ToolMessage):
                part = types.Part(function_response=types.FunctionResponse(
                    name=m.name, response={"output": m.content},
                    id=m.call_id if m.call_id in wire_ids else None))
                prev = out[-1] if out else None
                if prev is not None and prev.role == "user" and prev.parts and all(
                        p.function_response is not None for p in prev.parts):
                    prev.parts.append(part)
                else:
                    out.append(types.Content(role="user", parts=[part]))
            else:
                raise TypeError(f"unknown message type {type(m).__name__}")
        return ("\n\n".join(system) if system else None), out

    def _call(self, request: ModelRequest, sent: SentSettings):
        contents, config = self.request_parts(request, sent)
        return self.client.models.generate_content(model=self.model, contents=contents,
                                                   config=config)

    def parse_reply(self, response, raw: dict) -> CallOutcome:
        """A reply read from elsewhere than `generate_content` (a batch's inlined response)."""
        return self._parse(response, raw)

    def request_parts(self, request: ModelRequest, sent: SentSettings):
        """(contents, GenerateContentConfig) for `request` (a batch inlines them)."""
        system, contents = self.wire_contents(request)
        config: dict[str, Any] = {"max_output_tokens": sent.max_output_tokens,
                                  "automatic_function_calling": {"disable": True}}
        if system is not None:
            config["system_instruction"] = system
        if isinstance(sent.temperature, (int, float)):
            config["temperature"] = sent.temperature
        if sent.reasoning_effort and sent.reasoning_effort != NOT_SUPPORTED:
            config["thinking_config"] = {"thinking_level": _LEVELS[sent.reasoning_effort.lower()]}
        schema = self.wire_schema(request)
        if schema is not None and schema.mode in ("json_schema", "json_object"):
            config["response_mime_type"] = "application/json"
            if schema.mode == "json_schema":
                config["response_json_schema"] = schema.schema
        tools = list(request.tools)
        if schema is not None and schema.mode == "tool":  # a forced call carries the object
            tools.append(ToolSpec(schema.name, "Record the answer as this object.",
                                  schema.schema))
        if tools:
            config["tools"] = [types.Tool(function_declarations=[
                types.FunctionDeclaration(name=t.name, description=t.description,
                                          parameters_json_schema=t.parameters)
                for t in tools])]
            calling: dict[str, Any] = {"mode": {"none": "NONE", "required": "ANY"}.get(
                request.settings.tool_choice, "AUTO")}
            if schema is not None and schema.mode == "tool":
                calling = {"mode": "ANY", "allowed_function_names": [schema.name]}
            config["tool_config"] = {"function_calling_config": calling}
        return contents, types.GenerateContentConfig(**config)

    def _parse(self, resp, raw: dict) -> CallOutcome:
        usage = _usage(resp.usage_metadata)
        cand = resp.candidates[0] if resp.candidates else None
        feedback = resp.prompt_feedback
        block = getattr(feedback, "block_reason", None)
        finish = cand.finish_reason.value if cand is not None and cand.finish_reason else None
        parts = (cand.content.parts if cand is not None and cand.content is not None else None) or []
        check = verdict(
            has_choice=cand is not None and cand.content is not None,
            has_calls=any(p.function_call is not None for p in parts),
            finish_reason=finish,
            block_reason=block.value if block is not None else None,
            block_message=(getattr(feedback, "block_reason_message", None) if block is not None
                           else getattr(cand, "finish_message", None) or _finish_message(raw)),
        )
        if check.kind == "malformed":
            raise MalformedReplyError(check.reason or "malformed reply", usage=usage,
                                      model=resp.model_version, response_id=resp.response_id)
        texts, calls = [], []
        for i, p in enumerate(parts):
            if p.function_call is not None:
                fc = p.function_call
                calls.append(ToolCall(id=fc.id or f"{fc.name}-{i}", name=fc.name or "",
                                      arguments=dict(fc.args or {})))
            elif p.text is not None and not p.thought:
                texts.append(p.text)
        calls = unique_call_ids(calls)
        text = "".join(texts) if texts else None
        kept = [p.model_dump(mode="json", exclude_none=True) for p in parts]
        reply = Reply(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=finish,
            response_id=resp.response_id,
            model=resp.model_version,
            provider=self._provider_identity(None),
            usage=usage,
            message=AssistantMessage(text=text, tool_calls=tuple(calls),
                                     provider_data={"google": {"parts": kept}}),
            block_reason=check.reason if check.kind == "block" else None,
            block_message=check.message if check.kind == "block" else None,
        )
        notes: tuple[str, ...] = ()
        if finish == UNDECLARED_CALL:
            said = _finish_message(raw) or getattr(cand, "finish_message", None) or ""
            notes = (f"finish reason {finish}: the model called a function the request did not "
                     f"declare ({', '.join(c.name for c in calls)}); {said}".rstrip("; "),)
        return CallOutcome(reply, notes=notes)


def _finish_message(raw: dict) -> str | None:
    """`candidates[0].finishMessage` as sent: google-genai 3.6.1 does not carry it over."""
    candidates = raw.get("candidates") or [{}]
    message = candidates[0].get("finishMessage") if isinstance(candidates[0], dict) else None
    return message if isinstance(message, str) else None


def _usage(u) -> Usage:
    if u is None:
        return Usage()
    prompt = tokens(u.prompt_token_count)
    tool_prompt = tokens(u.tool_use_prompt_token_count) or 0
    cand = tokens(u.candidates_token_count)
    thoughts = tokens(u.thoughts_token_count)
    return Usage(
        input_tokens=None if prompt is None else prompt + tool_prompt,
        output_tokens=None if cand is None and thoughts is None else (cand or 0) + (thoughts or 0),
        cached_tokens=tokens(u.cached_content_token_count),
        reasoning_tokens=thoughts,
    )

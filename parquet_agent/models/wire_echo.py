"""The one place that decides which provider fields of an OpenAI-style assistant message go back
on the wire in the next request.

Some OpenAI-compatible providers return fields beside `content` / `tool_calls` that they
require (or use) when the assistant turn is sent back in the history:

| field | who | why it must go back |
|---|---|---|
| `reasoning_content` | DeepSeek reasoning models | required with tool calls: 400 "reasoning_content ... must be passed back" |
| `reasoning`, `reasoning_details` | OpenRouter, Ollama | reasoning continuity (OpenRouter passes `reasoning_details` to the upstream) |
| `extra_content` | Gemini's OpenAI endpoint | `extra_content.google.thought_signature`: Gemini 3 function calling returns 400 without it |

`kept(message_extra, tool_call_extras)` picks them out of a reply (as the provider sent them)
into the assistant message's `provider_data["openai"]`; `restore(wire_message, provider_data)`
puts them back. Fields not listed here are not echoed (OpenAI itself rejects unknown ones).
Anthropic and Gemini keep their exact content blocks / parts instead (see their adapters).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

MESSAGE_FIELDS = ("reasoning_content", "reasoning", "reasoning_details", "extra_content")
TOOL_CALL_FIELDS = ("extra_content",)


def kept(message_extra: Mapping[str, Any] | None,
         tool_call_extras: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The fields to send back, as `provider_data` (None when there are none)."""
    message = {k: v for k, v in (message_extra or {}).items()
               if k in MESSAGE_FIELDS and v is not None}
    calls = [{k: v for k, v in (extra or {}).items() if k in TOOL_CALL_FIELDS and v is not None}
             for extra in tool_call_extras]
    if not message and not any(calls):
        return None
    out: dict[str, Any] = {}
    if message:
        out["message"] = message
    if any(calls):
        out["tool_calls"] = calls
    return {"openai": out}


def restore(wire_message: dict[str, Any], provider_data: Mapping[str, Any] | None) -> None:
    """Add the kept fields to an assistant message about to be sent (in place)."""
    data = (provider_data or {}).get("openai") or {}
    for k, v in (data.get("message") or {}).items():
        wire_message.setdefault(k, v)
    for call, extra in zip(wire_message.get("tool_calls") or (), data.get("tool_calls") or ()):
        for k, v in (extra or {}).items():
            call.setdefault(k, v)

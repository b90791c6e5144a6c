"""Rebuild model records from journal dicts, for replaying saved turns on resume.

Journals store `dataclasses.asdict()` of `parquet_agent.models.protocol` records; these functions
turn them back into the frozen records (nested ones included) so a replayed turn is the same
object the model returned the first time: `reply_from_dict(turn.reply).message` is what the agent
appends to its conversation.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from parquet_agent.models.protocol import (
    AssistantMessage,
    Attempt,
    Cost,
    Reply,
    ToolCall,
    Usage,
)


def _tool_call(d: dict[str, Any]) -> ToolCall:
    return ToolCall(id=d["id"], name=d["name"], arguments=d.get("arguments") or {},
                    raw_arguments=d.get("raw_arguments"), wire_id=d.get("wire_id"),
                    arguments_error=d.get("arguments_error"))


def reply_from_dict(d: dict[str, Any]) -> Reply:
    """The `Reply` saved in a `model_turn` event."""
    message = d.get("message") or {}
    return Reply(
        text=d.get("text"),
        tool_calls=tuple(_tool_call(c) for c in d.get("tool_calls") or ()),
        finish_reason=d.get("finish_reason"),
        response_id=d.get("response_id"),
        model=d.get("model"),
        provider=d.get("provider"),
        usage=Usage(**(d.get("usage") or {})),
        message=AssistantMessage(
            text=message.get("text"),
            tool_calls=tuple(_tool_call(c) for c in message.get("tool_calls") or ()),
            provider_data=message.get("provider_data"),
        ),
        block_reason=d.get("block_reason"),
        block_message=d.get("block_message"),
    )


def attempt_from_dict(d: dict[str, Any]) -> Attempt:
    """The `Attempt` saved in a `model_attempt` / `judge_attempt` event.

    Keys the record does not have (a newer writer) are dropped; JSON lists become the tuples
    the record declares.
    """
    values: dict[str, Any] = {}
    for f in fields(Attempt):
        if f.name not in d:
            continue
        value = d[f.name]
        if isinstance(value, list) and "tuple" in str(f.type):
            value = tuple(value)
        values[f.name] = value
    values["usage"] = Usage(**(d.get("usage") or {}))
    values["cost"] = Cost(**(d.get("cost") or {"usd": None, "source": "unknown"}))
    return Attempt(**values)
